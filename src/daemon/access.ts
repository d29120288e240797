/**
 * Identity and access (K4, docs/wire.md "Identity and access"): the three postures, bearer
 * tokens compared in constant time, agent tokens stored hashed, and the write boundary.
 *
 *   const access = await Access.open(kb, { adminToken: process.env.KOINII_ADMIN_TOKEN });
 *   const p = access.authenticate(req.headers.authorization); // Principal, or throws unauthorized
 *   access.checkWrite(p, "CxAtlas", "(dog Muffet)");            // throws foreign-context / registry-forbidden
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { terms, contextFor, type Kb } from "../kb/index.js";
import { WireError } from "./errors.js";

export const REGISTRY_CONTEXT = "CxRegistry";

export type Posture = "open" | "admin-token";

export interface Principal {
  /** "admin" for the admin (and every caller in open mode), else the agent id. */
  id: string;
  admin: boolean;
  /** The one context an agent writes (its own); undefined for the admin. */
  context?: string;
}

export const ADMIN: Principal = Object.freeze({ id: "admin", admin: true });

export { contextFor, isAgentId } from "../kb/index.js";

const sha256 = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/** A fresh agent token: 32 random bytes, base64url (unguessable; shown once, stored hashed). */
export const newAgentToken = (): string => "kat_" + randomBytes(32).toString("base64url");

/** Most bearer tokens whose digest `authenticate` keeps, least recently used dropped first. */
export const DIGEST_CACHE_ENTRIES = 1024;

interface Digest {
  bytes: Buffer;
  hex: string;
}

export class Access {
  /**
   * The sha256 of tokens that authenticated, by token, least recently used first: hashing
   * is most of what authenticating a request costs (about 4 us). Only the digest is kept, never
   * the principal: whether a digest is the admin's or which agent's it is is decided
   * afresh on every request, so a rotated token is refused the moment `agents` forgets its
   * digest, with nothing here to invalidate. Tokens that did not authenticate are never
   * kept, so unknown tokens cannot push out the ones in use.
   */
  private readonly digests = new Map<string, Digest>();
  /** Agent principals by the hex sha256 of their token. */
  private readonly agents = new Map<string, Principal>();
  /** Each agent's one live token digest: the inverse of `agents`, so a rotation revokes exactly the token it replaces. */
  private readonly digestOf = new Map<string, string>();
  /** Issues run one at a time, in call order: the last one answered is the one stored and the one that works. */
  private issuing: Promise<unknown> = Promise.resolve();
  private loading: Promise<void> = Promise.resolve();

  private constructor(
    private readonly kb: Kb,
    private readonly adminDigest: Buffer | undefined,
  ) {}

  /** Load the stored agent token digests; an empty or missing admin token means open mode. */
  static async open(kb: Kb, opts: { adminToken?: string | undefined }): Promise<Access> {
    const token = opts.adminToken?.trim() ? opts.adminToken : undefined;
    const access = new Access(kb, token === undefined ? undefined : sha256(token));
    await access.reload();
    return access;
  }

  /**
   * Read the stored agent token digests again, replacing what is held (a rotated token's
   * old digest goes). A follower calls it when the writer stored a token (docs/cluster.md).
   */
  reload(): Promise<void> {
    // One read at a time, in order: an older read never replaces a newer one.
    this.loading = this.loading.catch(() => {}).then(async () => {
      const rows = await this.kb.store.principals();
      this.agents.clear();
      this.digestOf.clear();
      for (const r of rows) this.remember(r.id, r.token_sha256);
    });
    return this.loading;
  }

  get posture(): Posture {
    return this.adminDigest ? "admin-token" : "open";
  }

  /**
   * The principal behind an `Authorization` header. Open mode: every caller is the admin.
   * Otherwise a missing, malformed or unknown token is `unauthorized`, with one message
   * whatever was wrong (every 401 is byte-identical). The admin digest is compared with
   * timingSafeEqual; agent tokens are looked up by their sha256 digest, which reveals
   * nothing usable about a token.
   */
  authenticate(header: string | undefined): Principal {
    if (!this.adminDigest) return ADMIN;
    const m = typeof header === "string" ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    if (m) {
      const token = m[1]!;
      const cached = this.digests.get(token);
      const digest = cached ?? { bytes: sha256(token), hex: "" };
      let who: Principal | undefined;
      if (timingSafeEqual(digest.bytes, this.adminDigest)) who = ADMIN;
      else who = this.agents.get((digest.hex ||= digest.bytes.toString("hex")));
      if (who) {
        this.keepDigest(token, digest, cached !== undefined);
        return who;
      }
      if (cached) this.digests.delete(token); // a token that no longer works is not kept
    }
    throw new WireError("unauthorized", "a valid bearer token is required");
  }

  private keepDigest(token: string, digest: Digest, wasKept: boolean): void {
    if (wasKept) {
      if (this.digests.size === 1) return;
      this.digests.delete(token); // most recently used goes last
    } else if (this.digests.size >= DIGEST_CACHE_ENTRIES) {
      this.digests.delete(this.digests.keys().next().value!);
    }
    this.digests.set(token, digest);
  }

  /**
   * The write boundary (K4), checked before admissibility: an agent writes only its own
   * context; CxRegistry is the admin's. A `(genlCx A B)` edge is stored in CxUniverse, so an
   * agent may assert or retract one only when its own context is A or B (it lifts itself
   * under a channel, or lets itself see one), and never with CxRegistry as the viewer.
   */
  checkWrite(p: Principal, context: unknown, sentence?: unknown): void {
    if (p.admin) return;
    if (context === REGISTRY_CONTEXT) throw new WireError("registry-forbidden", `${REGISTRY_CONTEXT} is written by the admin only`);
    if (context !== p.context) throw new WireError("foreign-context", `${p.id} writes only its own context ${p.context}, not ${String(context)}`, { own: p.context });
    if (typeof sentence === "string") this.checkEdge(p, sentence);
  }

  /** A removal: the stored sentex's context, or an edge naming the agent's own context. */
  checkRemove(p: Principal, handle: number): void {
    if (p.admin) return;
    const s = this.kb.sentex(handle);
    if (!s) return; // unknown handles are the engine's to refuse
    if (s.context === "CxUniverse" && this.edgeNamesOwn(p, s.sentence)) return;
    this.checkWrite(p, s.context);
  }

  private checkEdge(p: Principal, sentence: string): void {
    let t: terms.Term;
    try {
      t = terms.parseTerm(sentence);
    } catch {
      return; // the engine refuses it as parse-error, after access
    }
    if (!terms.isList(t) || t[0] !== "genlCx") return;
    if (t[1] === REGISTRY_CONTEXT) throw new WireError("registry-forbidden", `only the admin may make ${REGISTRY_CONTEXT} see another context`);
    if (t[1] !== p.context && t[2] !== p.context) throw new WireError("foreign-context", `${p.id} may only add genlCx edges that name its own context ${p.context}`, { own: p.context });
  }

  private edgeNamesOwn(p: Principal, sentence: string): boolean {
    try {
      const t = terms.parseTerm(sentence);
      return terms.isList(t) && t[0] === "genlCx" && t[1] !== REGISTRY_CONTEXT && (t[1] === p.context || t[2] === p.context);
    } catch {
      return false;
    }
  }

  /**
   * Issue (or rotate) an agent's token: stores only its sha256. Answered only once the row
   * is durable: it is written inside the store's group transaction, so the group's COMMIT
   * (and, at `full`, its fsync) covers it. The new token works, and the previous one stops,
   * at that moment. Concurrent issues for one agent run one after another, so exactly one
   * token (the last issued) is left working, in memory and in the store alike.
   */
  issueToken(agentId: string): Promise<string> {
    const next = this.issuing.then(async () => {
      const token = newAgentToken();
      const digest = sha256(token).toString("hex");
      await this.kb.store.putPrincipal(agentId, digest); // resolves once the group holding the row is durable
      this.remember(agentId, digest);
      return token;
    });
    this.issuing = next.catch(() => undefined);
    return next;
  }

  private remember(agentId: string, digest: string): void {
    const old = this.digestOf.get(agentId);
    if (old !== undefined) this.agents.delete(old);
    this.digestOf.set(agentId, digest);
    this.agents.set(digest, agentPrincipal(agentId));
  }
}

function agentPrincipal(id: string): Principal {
  return Object.freeze({ id, admin: false, context: contextFor(id) });
}
