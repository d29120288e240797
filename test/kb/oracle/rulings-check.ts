/**
 * The rulings property, shared by the default run (test/kb/rulings-properties.test.ts) and
 * the slow one (test/kb/rulings-properties.slow.test.ts). Two disputes about one sentence
 * (Ava's P against Ben's (not P) and against Dan's), two arbiters and the majority, played
 * as random sequences of rulings (the same side on both disputes makes one shared ruling),
 * withdrawals, rulings retracted directly, ballots cast and taken back, and majority
 * counts. A small model says what docs/disputes.md promises: per arbiter and dispute the
 * last side it ruled, until withdrawn; ruling a side withdraws the arbiter's ruling of the
 * other side on every dispute; a majority count rules by the ballots or, on a tie,
 * withdraws. After every step the KB must agree:
 *  - each arbiter's standing rulings are the model's, every mark's upheld sentence is
 *    stored and every upheld sentence has a mark, no arbiter holds both sides;
 *  - when the standing rulings uphold one side, the channel believes it and not the other
 *    and sees no dispute; with none, both claims are believed and both disputes are listed;
 *  - every conflict the channel sees is two arbiters' opposite rulings: none that one
 *    arbiter's ruling could have settled.
 */
import { join } from "node:path";
import fc from "fast-check";
import { expect } from "vitest";
import { openKb, disputes, adjudication, type Kb } from "../../../src/kb/index.js";
import { CONTEXTS_DIR } from "../helpers.js";

const P = "(adoptDog Flat12)";
const NOT_P = "(not (adoptDog Flat12))";
const CHANNEL = "CxApartment";
const ARBITERS = ["AgentJudy", "AgentJules"] as const;
const MAJORITY = "AgentMajority";
const VOTERS = ["AgentVi", "AgentWen", "AgentXu"] as const;
const ctxOf = (agent: string) => "Cx" + agent.slice(5);
const other = (t: string) => (t === P ? NOT_P : P);

type Op =
  | { kind: "rule"; arbiter: string; dispute: 0 | 1; upheld: string }
  | { kind: "withdraw"; arbiter: string; dispute: 0 | 1 }
  | { kind: "retractRuling"; arbiter: string; upheld: string }
  | { kind: "ballot"; voter: string; stance: "for" | "against" }
  | { kind: "unballot"; voter: string; stance: "for" | "against" }
  | { kind: "majority"; dispute: 0 | 1 };

const arbiterArb = fc.constantFrom<string>(...ARBITERS, ARBITERS[0]);
const disputeArb = fc.constantFrom<0 | 1>(0, 1);
const sideArb = fc.constantFrom(P, NOT_P);
const voterArb = fc.constantFrom<string>(...VOTERS);
const stanceArb = fc.constantFrom<"for" | "against">("for", "against");

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("rule" as const), arbiter: arbiterArb, dispute: disputeArb, upheld: sideArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("withdraw" as const), arbiter: fc.constantFrom<string>(...ARBITERS, MAJORITY), dispute: disputeArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("retractRuling" as const), arbiter: fc.constantFrom<string>(...ARBITERS, MAJORITY), upheld: sideArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("ballot" as const), voter: voterArb, stance: stanceArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("unballot" as const), voter: voterArb, stance: stanceArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("majority" as const), dispute: disputeArb }) },
);

export const opsArb = fc.array(opArb, { minLength: 1, maxLength: 16 });

/** The promised semantics: arbiter -> dispute index -> upheld text, and the ballots cast. */
class Model {
  readonly rulings = new Map<string, Map<0 | 1, string>>([...ARBITERS, MAJORITY].map((a) => [a, new Map()]));
  readonly ballots = new Set<string>(); // "voter stance"

  rule(arbiter: string, d: 0 | 1, upheld: string): void {
    const mine = this.rulings.get(arbiter)!;
    for (const [k, t] of mine) if (t === other(upheld)) mine.delete(k);
    mine.set(d, upheld);
  }

  withdraw(arbiter: string, d: 0 | 1): void {
    this.rulings.get(arbiter)!.delete(d);
  }

  /** Retracting the upheld sentence ends every ruling that upholds it. */
  retract(arbiter: string, upheld: string): void {
    const mine = this.rulings.get(arbiter)!;
    for (const [k, t] of mine) if (t === upheld) mine.delete(k);
  }

  count(d: 0 | 1): void {
    const voters = (s: string) => new Set(VOTERS.filter((v) => this.ballots.has(`${v} ${s}`)));
    const pro = voters("for");
    const con = voters("against");
    const f = [...pro].filter((v) => !con.has(v)).length;
    const g = [...con].filter((v) => !pro.has(v)).length;
    if (f === g) this.withdraw(MAJORITY, d);
    else this.rule(MAJORITY, d, f > g ? P : NOT_P);
  }

  upheld(): Set<string> {
    return new Set([...this.rulings.values()].flatMap((m) => [...m.values()]));
  }
}

async function world(path: string): Promise<{ kb: Kb; p: number; ids: [string, string] }> {
  const kb = await openKb({ path, durability: "normal", contextsDir: CONTEXTS_DIR });
  await kb.edit({
    add: ["CxAva", "CxBen", "CxDan"].flatMap((c) => [
      { sentence: `(genlCx ${CHANNEL} ${c})`, context: "CxUniverse" },
      { sentence: `(genlCx ${c} CxSpeechActs)`, context: "CxUniverse" },
    ]),
  });
  const p = (await kb.assert(P, "CxAva", { creator: "AgentAva" })).handle;
  const ben = (await kb.assert(NOT_P, "CxBen", { creator: "AgentBen" })).handle;
  const dan = (await kb.assert(NOT_P, "CxDan", { creator: "AgentDan" })).handle;
  return { kb, p, ids: [disputes.disputeKey(`${p}-${ben}`), disputes.disputeKey(`${p}-${dan}`)] };
}

async function apply(kb: Kb, p: number, ids: [string, string], model: Model, op: Op): Promise<void> {
  switch (op.kind) {
    case "rule":
      await adjudication.rule(kb, op.arbiter, ids[op.dispute], op.upheld, CHANNEL);
      return model.rule(op.arbiter, op.dispute, op.upheld);
    case "withdraw":
      await adjudication.withdrawRulings(kb, op.arbiter, ids[op.dispute]);
      return model.withdraw(op.arbiter, op.dispute);
    case "retractRuling": {
      const [held] = kb.match(op.upheld, ctxOf(op.arbiter)); // an upheld sentence is monotonic: always believed
      if (!held) return;
      await kb.retract(held.handle);
      return model.retract(op.arbiter, op.upheld);
    }
    case "ballot":
    case "unballot": {
      const sentence = `(${op.stance === "for" ? "votesFor" : "votesAgainst"} ${op.voter} (sentexHandle ${p}))`;
      if (op.kind === "ballot") {
        await kb.assert(sentence, ctxOf(op.voter), { creator: op.voter });
        model.ballots.add(`${op.voter} ${op.stance}`);
      } else {
        const b = kb.match(sentence, ctxOf(op.voter))[0];
        if (b) await kb.retract(b.handle);
        model.ballots.delete(`${op.voter} ${op.stance}`);
      }
      return;
    }
    case "majority":
      await adjudication.resolveByMajority(kb, ids[op.dispute], p, CHANNEL);
      return model.count(op.dispute);
  }
}

/** Every promise of the header, after one step. */
function agree(kb: Kb, ids: [string, string], model: Model, step: string): void {
  const textOf = (h: number) => kb.sentex(h)!.sentence;
  for (const [arbiter, mine] of model.rulings) {
    const ctx = ctxOf(arbiter);
    ids.forEach((id, d) => {
      const want = mine.get(d as 0 | 1);
      expect(adjudication.standingRulings(kb, arbiter, id).map(textOf), `${step}: ${arbiter}'s standing rulings on ${id}`).toEqual(want ? [want] : []);
    });
    // Marks and upheld sentences come and go together; an arbiter holds one side at most.
    const marked = new Set(kb.match("(ruling ?a ?d ?u)", ctx).map((r) => JSON.parse((r.sentence.match(/ ("(?:[^"\\]|\\.)*")\)$/) ?? [])[1]!) as string));
    const held = [P, NOT_P].filter((t) => kb.match(t, ctx).length > 0);
    expect([...marked].sort(), `${step}: ${arbiter}'s marks name exactly its upheld sentences`).toEqual(held.sort());
    expect(held.length, `${step}: ${arbiter} holds both sides`).toBeLessThanOrEqual(1);
  }
  const upheld = model.upheld();
  const believedInChannel = (t: string) => kb.query(t, CHANNEL).solutions.length > 0;
  const listed = disputes.disputesIn(kb, CHANNEL);
  if (upheld.size === 1) {
    const [t] = upheld;
    expect(believedInChannel(t!), `${step}: the upheld ${t} is believed in the channel`).toBe(true);
    expect(believedInChannel(other(t!)), `${step}: the overruled ${other(t!)} is believed in the channel`).toBe(false);
    expect(listed, `${step}: disputes left in the channel`).toEqual([]);
  } else if (upheld.size === 0) {
    expect([believedInChannel(P), believedInChannel(NOT_P)], `${step}: both claims believed with no ruling`).toEqual([true, true]);
    expect(listed.map((d) => d.id).sort(), `${step}: both disputes listed with no ruling`).toEqual([...ids].sort());
    for (const id of ids) expect(disputes.disputeState(kb, id), `${step}: ${id}`).not.toBe("resolved");
  }
  for (const c of kb.contradictions(CHANNEL).conflicts) {
    const [a, b] = c.sides.map((s) => s.context);
    const arbiters = [...ARBITERS, MAJORITY].map(ctxOf);
    expect(arbiters.includes(a!) && arbiters.includes(b!) && a !== b, `${step}: a conflict a ruling could settle: ${a} vs ${b}`).toBe(true);
  }
}

export async function playRulings(path: string, ops: readonly Op[]): Promise<void> {
  const { kb, p, ids } = await world(path);
  const model = new Model();
  try {
    agree(kb, ids, model, "start");
    for (const [n, op] of ops.entries()) {
      await apply(kb, p, ids, model, op);
      agree(kb, ids, model, `step ${n} ${JSON.stringify(op)}`);
    }
  } finally {
    await kb.close();
  }
}

export async function checkRulings(dir: string, numRuns: number): Promise<void> {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(opsArb, (ops) => playRulings(join(dir, `rulings-${run++}.db`), ops)),
    { numRuns },
  );
}
