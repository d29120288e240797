/**
 * Identity (K4, reference §8.1): agents are registered by the admin, each gets a token for
 * `wire({url, token})`, and the daemon enforces the write boundary (an agent token writes
 * only its own context: `foreign-context`; never CxRegistry: `registry-forbidden`), both
 * surfaced as ChannelError types. Trust is functional and admin-only; display names are
 * untrusted labels.
 *
 *   const admin = wire({ url, token: adminToken });
 *   const { token } = await registerAgent(admin, "AgentAtlas", { displayName: "Atlas" });
 *   const h = await join(wire({ url, token }), "CxDeploy", "AgentAtlas");
 */
import * as terms from "../kb/term.js";
import { ChannelError } from "./errors.js";
import { REGISTRY_CONTEXT } from "./names.js";
import type { Medium, AgentId, AgentRegistration, AgentInfo, EditAnswer } from "./medium.js";

/** Admin: register an agent (`(agent Id)`, its display name and trust) and issue its token; re-registering rotates the token. */
export const registerAgent = (admin: Medium, id: AgentId, opts: { displayName?: string; trust?: number } = {}): Promise<AgentRegistration> =>
  admin.registerAgent(id, opts);

/** Every registered agent with its context, display name and trust. */
export const agents = (medium: Medium): Promise<AgentInfo[]> => medium.agents();

async function replaceRegistryValue(admin: Medium, pred: string, id: AgentId, value: string): Promise<EditAnswer> {
  const old = await admin.match(`(${pred} ${id} ?v)`, REGISTRY_CONTEXT);
  const sentence = `(${pred} ${id} ${value})`;
  // Functional: remove the old value and add the new one in one edit, so exactly one stands at every seq.
  return admin.edit({ add: [{ sentence, context: REGISTRY_CONTEXT }], remove: old.filter((o) => o.sentence !== sentence && !o.derived).map((o) => o.handle) });
}

/** Admin only: set an agent's trust level (functional: the old value is replaced in the same edit). */
export async function setTrust(admin: Medium, id: AgentId, level: number): Promise<EditAnswer> {
  const value = terms.canonicalNumber(String(level));
  if (value === undefined || !Number.isFinite(level)) throw new ChannelError("bad-request", `trust must be a plain decimal number, got ${level}`);
  return replaceRegistryValue(admin, "trustLevel", id, value);
}

/** Admin only: set an agent's display name (functional, replaced in one edit). */
export const setDisplayName = (admin: Medium, id: AgentId, name: string): Promise<EditAnswer> => replaceRegistryValue(admin, "displayNameOf", id, terms.stringAtom(name));

async function registryValue(medium: Medium, pred: string, id: AgentId): Promise<string | undefined> {
  const hit = (await medium.match(`(${pred} ${id} ?v)`, REGISTRY_CONTEXT))[0];
  return hit ? ((terms.parseTerm(hit.sentence) as terms.List)[2] as string) : undefined;
}

/** An agent's trust level, or undefined when none is recorded. */
export async function trustOf(medium: Medium, id: AgentId): Promise<number | undefined> {
  const v = await registryValue(medium, "trustLevel", id);
  return v !== undefined && terms.isNumber(v) ? Number(v) : undefined;
}

/** An agent's display name, or undefined. Untrusted: a label, never an identity. */
export async function displayNameOf(medium: Medium, id: AgentId): Promise<string | undefined> {
  const v = await registryValue(medium, "displayNameOf", id);
  return v !== undefined && terms.isString(v) ? terms.stringValue(v) : v;
}
