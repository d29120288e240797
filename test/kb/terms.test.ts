import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KbError, terms, sentenceShape } from "../../src/kb/index.js";

const { parseTerm, printTerm, canonicalText, locatorOf, termEquals, isSymbol, isString, isVariable, isNumber, stringAtom, stringValue, DEFAULT_PARSE_LIMITS } = terms;
type Term = terms.Term;

function parseErrorOf(fn: () => unknown): KbError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(KbError);
    return e as KbError;
  }
  throw new Error("expected a parse-error, but the text parsed");
}

describe("parser and printer", () => {
  it("parses symbols, variables, strings, integers, decimals and nested lists to their atoms", () => {
    expect(parseTerm('(answers AgentBoreas "Postgres 16" (sentexHandle 42))')).toEqual(["answers", "AgentBoreas", '"Postgres 16"', ["sentexHandle", "42"]]);
    expect(parseTerm("(p ?x -3 0.25 (q (r S)))")).toEqual(["p", "?x", "-3", "0.25", ["q", ["r", "S"]]]);
    const [, sym, v, str, int, dec] = parseTerm('(p Foo ?x "Foo" 12 1.5)') as Term[];
    expect([isSymbol(sym!), isVariable(v!), isString(str!), isNumber(int!), isNumber(dec!)]).toEqual([true, true, true, true, true]);
    expect(isSymbol(str!)).toBe(false);
  });

  it("prints canonical text: one space between items, no space inside parens", () => {
    expect(canonicalText("(  p   Foo\n\t( q  ?x )  )")).toBe("(p Foo (q ?x))");
    expect(canonicalText("()")).toBe("()");
    expect(canonicalText("(p ())")).toBe("(p ())");
  });

  it("numbers print in shortest form", () => {
    expect(canonicalText("(n 007 -0 1.50 2.0 1e3 -0.0 12345678901234567890)")).toBe("(n 7 0 1.5 2 1000 0 12345678901234567890)");
  });

  it("strings keep their value through JSON escapes and print JSON-escaped", () => {
    const t = parseTerm('(s "a\\"b" "tab\\there" "\\u00e9\\n" "back\\\\slash")') as Term[];
    expect(t.slice(1).map((a) => stringValue(a as string))).toEqual(['a"b', "tab\there", "é\n", "back\\slash"]);
    expect(printTerm(t)).toBe('(s "a\\"b" "tab\\there" "é\\n" "back\\\\slash")');
    expect(canonicalText('(s "\\u0041")')).toBe('(s "A")');
  });

  it("strings may hold parens, semicolons and spaces", () => {
    expect(parseTerm('(s "(not ; a)")')).toEqual(["s", stringAtom("(not ; a)")]);
  });

  it("parses (not S) and rules as ordinary lists, which sentenceShape classifies", () => {
    expect(sentenceShape(parseTerm("(not (dog Muffet))"))).toEqual({ kind: "fact", lit: { neg: true, atom: ["dog", "Muffet"] } });
    const rule = sentenceShape(parseTerm("(implies (and (edge ?x ?y) (reach ?y ?z)) (reach ?x ?z))"));
    expect(rule.kind).toBe("rule");
    const single = sentenceShape(parseTerm("(implies (disputes ?a ?t) (not (trusted ?t)))"));
    expect(single.kind === "rule" && single.rule.antecedents.length).toBe(1);
    expect(single.kind === "rule" && single.rule.consequent.neg).toBe(true);
  });

  it.each([
    ["unbalanced open", "(p X"],
    ["unbalanced close", "(p X))"],
    ["two terms", "(p X) (q Y)"],
    ["empty text", "   "],
    ["unterminated string", '(p "abc)'],
    ["bad escape", '(p "\\q")'],
    ["bad variable", "(p ?1x)"],
    ["bad number", "(p 1.2.3)"],
    ["bad symbol", "(p {x})"],
    ["a ';' inside a sentence", "(p ; comment\n X)"],
  ])("refuses malformed text with parse-error: %s", (_name, text) => {
    expect(parseErrorOf(() => parseTerm(text)).type).toBe("parse-error");
  });
});

describe("identity and locators", () => {
  it("a symbol never equals the string spelled the same", () => {
    const a = parseTerm("(name Foo)");
    const b = parseTerm('(name "Foo")');
    expect(termEquals(a, b)).toBe(false);
    expect(printTerm(a)).not.toBe(printTerm(b));
  });

  it("the locator is sha256 over context, truth and canonical sentence", () => {
    const l = locatorOf("CxA", "true", canonicalText("( p  X )"));
    expect(l).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(l).toBe(locatorOf("CxA", "true", "(p X)"));
    expect(l).not.toBe(locatorOf("CxB", "true", "(p X)"));
    expect(l).not.toBe(locatorOf("CxA", "false", "(p X)"));
    expect(l).not.toBe(locatorOf("CxA", "true", '(p "X")'));
  });
});

describe("named limits", () => {
  it("nesting deeper than maxNestingDepth is a parse-error naming the limit", () => {
    const ok = "(".repeat(DEFAULT_PARSE_LIMITS.maxNestingDepth) + ")".repeat(DEFAULT_PARSE_LIMITS.maxNestingDepth);
    expect(() => parseTerm(ok)).not.toThrow();
    const e = parseErrorOf(() => parseTerm("(" + ok + ")"));
    expect(e.type).toBe("parse-error");
    expect(e.message).toContain("maxNestingDepth");
  });

  it("100 000-deep nesting is refused with parse-error, never a stack overflow", () => {
    const deep = "(p ".repeat(100_000) + "X" + ")".repeat(100_000);
    const e = parseErrorOf(() => parseTerm(deep, { maxNestingDepth: 64, maxSentenceChars: 10_000_000 }));
    expect(e.type).toBe("parse-error");
    expect(e.message).toContain("maxNestingDepth");
  });

  it("a text over maxSentenceChars is refused with parse-error before it is scanned", () => {
    const huge = '(p "' + "x".repeat(4 * 1024 * 1024) + '")';
    const e = parseErrorOf(() => parseTerm(huge));
    expect(e.type).toBe("parse-error");
    expect(e.message).toContain("maxSentenceChars");
  });

  it("an unterminated multi-megabyte string is a parse-error under a raised length limit", () => {
    const huge = '(p "' + "\\\\".repeat(2 * 1024 * 1024);
    expect(parseErrorOf(() => parseTerm(huge, { maxNestingDepth: 64, maxSentenceChars: 10_000_000 })).type).toBe("parse-error");
  });

  it("limits are configurable: a tighter maxSentenceChars refuses what the default accepts", () => {
    expect(() => parseTerm("(p X Y Z)")).not.toThrow();
    expect(parseErrorOf(() => parseTerm("(p X Y Z)", { maxNestingDepth: 64, maxSentenceChars: 5 })).type).toBe("parse-error");
  });
});

// ------------------------------------------------------------------ properties (d)

const symbolArb = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_+*\-.:]{0,6}$/);
const variableArb = fc.stringMatching(/^\?[A-Za-z_][A-Za-z0-9_-]{0,5}$/);
const stringArb = fc.string({ unit: "binary", maxLength: 12 }).map(stringAtom);
const integerArb = fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map((n) => n.toString());
const decimalArb = fc
  .double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 })
  .filter((d) => !Number.isInteger(d))
  .map((d) => String(d));
const atomArb: fc.Arbitrary<Term> = fc.oneof(symbolArb, variableArb, stringArb, integerArb, decimalArb);
const { term: termArb } = fc.letrec<{ term: Term; list: Term }>((tie) => ({
  term: fc.oneof({ depthSize: "small", withCrossShrink: true }, atomArb, tie("list")),
  list: fc.array(tie("term"), { maxLength: 4 }),
}));

describe("round-trip properties (d)", () => {
  it("parse(print(t)) equals t for random terms", () => {
    fc.assert(
      fc.property(termArb, (t) => {
        expect(parseTerm(printTerm(t))).toEqual(t);
      }),
      { numRuns: 500 },
    );
  });

  it("print(parse(s)) equals s for canonical text s", () => {
    fc.assert(
      fc.property(termArb, (t) => {
        const s = printTerm(t);
        expect(printTerm(parseTerm(s))).toBe(s);
      }),
      { numRuns: 500 },
    );
  });

  it("canonical text is a fixpoint: canonicalising any spacing of a term gives the same text", () => {
    const spaced = (t: Term, ws: string): string => (typeof t === "string" ? t : "(" + ws + t.map((x) => spaced(x, ws)).join(ws + " ") + ws + ")");
    fc.assert(
      fc.property(termArb, fc.constantFrom(" ", "\n", "\t ", "  "), (t, ws) => {
        expect(canonicalText(spaced(t, ws))).toBe(printTerm(t));
      }),
    );
  });

  it("a symbol never equals the string spelled the same, before or after a round trip", () => {
    fc.assert(
      fc.property(symbolArb, (sym) => {
        const asString = stringAtom(sym);
        expect(termEquals(sym, asString)).toBe(false);
        const a = parseTerm(`(p ${sym})`);
        const b = parseTerm(`(p ${asString})`);
        expect(termEquals(a, b)).toBe(false);
        expect(termEquals(parseTerm(printTerm(a)), parseTerm(printTerm(b)))).toBe(false);
        expect(locatorOf("CxA", "true", printTerm(a))).not.toBe(locatorOf("CxA", "true", printTerm(b)));
      }),
    );
  });
});

// ------------------------------------------------------------------ the one-pass parser against a reference

/**
 * The straightforward parser the one-pass `parseTermText` replaced, kept here as the oracle:
 * every token through the regexes, every string through JSON.parse and JSON.stringify.
 */
function referenceParse(text: string, limits = DEFAULT_PARSE_LIMITS): Term {
  const fail = (message: string, at: number): never => {
    throw new KbError("parse-error", at >= 0 ? `${message} at offset ${at}` : message);
  };
  if (text.length > limits.maxSentenceChars) fail(`sentence is ${text.length} characters, over the limit maxSentenceChars=${limits.maxSentenceChars}`, -1);
  const atom = (token: string, at: number): string => {
    if (token.startsWith("?")) return /^\?[A-Za-z_][A-Za-z0-9_-]*$/.test(token) ? token : fail(`bad variable ${JSON.stringify(token)}`, at);
    if (/^-?[0-9]+$/.test(token)) {
      const t = BigInt(token).toString();
      return t === "-0" ? "0" : t;
    }
    if (/^-?(?:[0-9]+\.[0-9]+|[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+)$/.test(token) && Number.isFinite(Number(token))) {
      const v = Number(token);
      return Object.is(v, -0) ? "0" : String(v);
    }
    if (/^-?[0-9]/.test(token)) fail(`bad number ${JSON.stringify(token)}`, at);
    return /^[A-Za-z_+*/<>=!&%$#@~^|.:'-][A-Za-z0-9_+*/<>=!&%$#@~^|.:'-]*$/.test(token) ? token : fail(`bad symbol ${JSON.stringify(token.slice(0, 64))}`, at);
  };
  const stack: Term[][] = [];
  let result: Term | undefined;
  const tokens = /\s+|\(|\)|"(?:[^"\\]|\\.)*"?|;|[^\s()"]+/gy;
  for (let m = tokens.exec(text); m && m[0] !== ""; m = tokens.exec(text)) {
    const [tok] = m;
    const at = m.index;
    if (/^\s/.test(tok) && /^[ \t\n\r]+$/.test(tok)) continue;
    if (result !== undefined && stack.length === 0) fail("unexpected text after the term", at);
    let item: Term;
    if (tok === "(") {
      if (stack.length >= limits.maxNestingDepth) fail(`nesting deeper than the limit maxNestingDepth=${limits.maxNestingDepth}`, at);
      stack.push([]);
      continue;
    } else if (tok === ")") {
      item = stack.pop() ?? fail("unbalanced ')'", at);
    } else if (tok.startsWith('"')) {
      if (tok.length < 2 || !tok.endsWith('"') || /(^|[^\\])(\\\\)*\\"$/.test(tok)) fail("unterminated string", at);
      let value: string;
      try {
        value = JSON.parse(tok) as string;
      } catch {
        return fail("bad string escape", at);
      }
      item = JSON.stringify(value);
    } else if (tok === ";") {
      return fail("';' is not allowed inside a sentence", at);
    } else item = atom(tok, at);
    if (stack.length > 0) stack[stack.length - 1]!.push(item);
    else result = item;
  }
  if (stack.length > 0) fail("unbalanced '('", text.length);
  return result ?? fail("empty sentence", -1);
}

const outcome = (fn: () => Term): { term: Term } | { type: string; error: string } => {
  try {
    return { term: fn() };
  } catch (e) {
    if (!(e instanceof KbError)) throw e;
    return { type: e.type, error: e.message };
  }
};

/** Sentence-like text: tokens the parser meets (and some it refuses) joined by assorted blanks. */
const pieceArb = fc.oneof(
  fc.constantFrom("(", "(", ")", ")", "(not", "(implies", "(and"),
  symbolArb,
  variableArb,
  stringArb,
  integerArb,
  decimalArb,
  fc.constantFrom("-0", "007", "-007", "0", "-", "-x", "1e3", "1E+2", "0.50", "1.", ".5", "?", "?1", "a;b", ";", "{x}", "é", "x\u00e9", "1x", "123456789012345", "1234567890123456", '"\\u0041"', '"a\\"b"', '"\\q"', '"tab\tin"', '"\\ud83d\\ude00"', '"\ud83d\ude00"', '"unterminated', '"\\"'),
);
const blankArb = fc.constantFrom("", " ", " ", " ", "  ", "\n", "\t", "\r\n ");
const textArb = fc.array(fc.tuple(blankArb, pieceArb), { maxLength: 14 }).chain((parts) =>
  blankArb.map((tail) => parts.map(([b, p]) => b + p).join("") + tail),
);

describe("the one-pass parser agrees with the reference parser", () => {
  it("every text: the same term or the same typed error and message; `canonical` exactly when printing gives the text back", () => {
    fc.assert(
      fc.property(fc.oneof(textArb, termArb.map(printTerm)), (text) => {
        const ours = outcome(() => terms.parseTermText(text).term);
        expect(ours).toEqual(outcome(() => referenceParse(text)));
        if ("term" in ours) expect(terms.parseTermText(text).canonical).toBe(printTerm(ours.term) === text);
      }),
      { numRuns: 3000 },
    );
  });

  it("canonical text is recognised as canonical, and canonicalText keeps it", () => {
    fc.assert(
      fc.property(termArb, (t) => {
        const s = printTerm(t);
        expect(terms.parseTermText(s).canonical).toBe(true);
        expect(canonicalText(s)).toBe(s);
      }),
      { numRuns: 500 },
    );
  });
});
