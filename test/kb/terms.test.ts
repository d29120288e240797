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
