/**
 * `Access.authenticate` keeps the sha256 of tokens that authenticated (src/daemon/access.ts):
 * a token replaced by a new one, or a token never valid, must be refused the very next time
 * it is shown however often it was accepted before; and the kept digests stay bounded.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import fc from "fast-check";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openKb, type Kb } from "../../src/kb/index.js";
import { Access, DIGEST_CACHE_ENTRIES } from "../../src/daemon/access.js";
import { WireError } from "../../src/daemon/errors.js";

const ADMIN_TOKEN = "admin-token-digests-0123456789";
let dir: string;
let kb: Kb;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "koinii-digests-"));
  kb = await openKb({ path: join(dir, "koinii.db"), durability: "normal" });
});
afterAll(async () => {
  await kb.close();
  rmSync(dir, { recursive: true, force: true });
});

const who = (access: Access, token: string): string => {
  try {
    return access.authenticate(`Bearer ${token}`).id;
  } catch (e) {
    if (e instanceof WireError && e.type === "unauthorized") return "refused";
    throw e;
  }
};

describe("bearer token digests kept by authenticate", () => {
  it("a replaced agent token is refused at once, however often it was accepted before", async () => {
    const access = await Access.open(kb, { adminToken: ADMIN_TOKEN });
    const old = await access.issueToken("AgentRotated");
    for (let i = 0; i < 5; i++) expect(who(access, old)).toBe("AgentRotated");
    const replaced = await access.issueToken("AgentRotated");
    expect(who(access, old)).toBe("refused");
    expect(who(access, replaced)).toBe("AgentRotated");
    expect(who(access, old)).toBe("refused");
  });

  it("a token another daemon replaced (read again by reload) is refused at once", async () => {
    const access = await Access.open(kb, { adminToken: ADMIN_TOKEN });
    const elsewhere = await Access.open(kb, { adminToken: ADMIN_TOKEN });
    const old = await elsewhere.issueToken("AgentReloaded");
    await access.reload();
    expect(who(access, old)).toBe("AgentReloaded");
    await elsewhere.issueToken("AgentReloaded");
    await access.reload();
    expect(who(access, old)).toBe("refused");
  });

  it("any interleaving of issues, accepted and unknown tokens answers as the stored tokens say, with at most DIGEST_CACHE_ENTRIES digests kept", async () => {
    const access = await Access.open(kb, { adminToken: ADMIN_TOKEN });
    const live = new Map<string, string>(); // agent -> its one working token
    const shown: string[] = []; // every token ever issued
    const step = fc.oneof(
      fc.record({ issue: fc.constantFrom("AgentA", "AgentB", "AgentC") }),
      fc.record({ show: fc.nat() }),
      fc.record({ unknown: fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !/\s/.test(s)) }),
      fc.constant({ admin: true }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), async (steps) => {
        for (const s of steps) {
          if ("issue" in s) {
            const t = await access.issueToken(s.issue);
            live.set(s.issue, t);
            shown.push(t);
          } else if ("show" in s && shown.length) {
            const t = shown[s.show % shown.length]!;
            const owner = [...live].find(([, tok]) => tok === t)?.[0];
            expect(who(access, t)).toBe(owner ?? "refused");
          } else if ("unknown" in s) {
            expect(who(access, `nope-${s.unknown}`)).toBe("refused");
          } else if ("admin" in s) {
            expect(who(access, ADMIN_TOKEN)).toBe("admin");
          }
        }
      }),
      { numRuns: 40 },
    );
    // Bounded: more distinct working tokens than the cache holds, each shown once.
    for (let i = 0; i <= DIGEST_CACHE_ENTRIES; i++) expect(who(access, await access.issueToken(`AgentMany${i}`))).toBe(`AgentMany${i}`);
    expect((access as unknown as { digests: Map<string, unknown> }).digests.size).toBe(DIGEST_CACHE_ENTRIES);
  }, 120_000);
});
