/**
 * The shared secret a local HTTP surface requires of its callers (the responder's `POST
 * /dm`, the floor's ingest endpoint): given by flag or environment, or generated at start
 * and written to a file only the user can read (mode 0600), which the feeding process reads.
 * Callers send it as `Authorization: Bearer <secret>`; it is compared in constant time.
 *
 *   const secret = resolveSecret({ given: o.ingestSecret, file: join(data, "ingest.secret") });
 *   if (!secretMatches(req.headers.authorization, secret.value)) refuse(401);
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Shortest secret accepted from a flag or the environment, in characters. */
export const MIN_SECRET_CHARS = 16;

export interface ResolvedSecret {
  value: string;
  /** Where a generated secret was written (undefined when it was given). */
  file?: string;
}

/**
 * The secret to require: `given` when set (at least MIN_SECRET_CHARS characters, no
 * whitespace), else a fresh one (32 random bytes, base64url) written to `file` with mode
 * 0600 (through a temporary file renamed over it, so no reader sees a partial secret).
 */
export function resolveSecret(o: { given?: string | undefined; file: string }): ResolvedSecret {
  if (o.given !== undefined && o.given !== "") {
    if (o.given.length < MIN_SECRET_CHARS || /\s/.test(o.given)) throw new RangeError(`a secret is at least ${MIN_SECRET_CHARS} characters without whitespace`);
    return { value: o.given };
  }
  const value = randomBytes(32).toString("base64url");
  mkdirSync(dirname(o.file), { recursive: true, mode: 0o700 });
  const tmp = `${o.file}.${process.pid}.tmp`;
  writeFileSync(tmp, value + "\n", { mode: 0o600 });
  chmodSync(tmp, 0o600); // the umask cannot widen it, and an old file's mode does not carry over
  renameSync(tmp, o.file);
  return { value, file: o.file };
}

const digest = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/** Whether an `Authorization` header carries `secret` as a bearer token (constant time). */
export function secretMatches(header: string | undefined, secret: string): boolean {
  const m = typeof header === "string" ? /^Bearer (\S+)$/i.exec(header.trim()) : null;
  return m !== null && timingSafeEqual(digest(m[1]!), digest(secret));
}
