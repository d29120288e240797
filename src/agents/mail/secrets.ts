/**
 * The account's secret file (M2; reference §2.3): KEY=value lines holding KANNAKA_MAIL_USER
 * and KANNAKA_MAIL_PASS. Read only by the transports, at connect time. The password is
 * wrapped so that printing, logging or JSON-serialising the credentials shows no secret.
 */
import { readFileSync } from "node:fs";
import { inspect } from "node:util";

export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  /** The only way to the value: named, so a use is easy to find. */
  reveal(): string {
    return this.#value;
  }
  toString(): string {
    return "[secret]";
  }
  toJSON(): string {
    return "[secret]";
  }
  [inspect.custom](): string {
    return "[secret]";
  }
}

export interface Credentials {
  user: string;
  pass: Secret;
}

/**
 * Parse a KEY=value file: `export` prefixes, single or double quotes and `#` comments are
 * accepted. A missing key is an error naming the key, never echoing a value.
 *
 * @example parseCredentials("KANNAKA_MAIL_USER=k@x.org\nKANNAKA_MAIL_PASS='s3cret'\n")
 */
export function parseCredentials(text: string): Credentials {
  const env = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    let v = m[2];
    if (/^"(.*)"$/.test(v) || /^'(.*)'$/.test(v)) v = v.slice(1, -1);
    else v = v.replace(/\s+#.*$/, "");
    env.set(m[1], v);
  }
  const user = env.get("KANNAKA_MAIL_USER");
  const pass = env.get("KANNAKA_MAIL_PASS");
  if (!user) throw new Error("credentials: KANNAKA_MAIL_USER is missing");
  if (pass === undefined || pass === "") throw new Error("credentials: KANNAKA_MAIL_PASS is missing");
  return { user, pass: new Secret(pass) };
}

export function readCredentials(path: string): Credentials {
  return parseCredentials(readFileSync(path, "utf8"));
}
