/**
 * The agent registry: facts in `CxRegistry` (`agent`, `displayNameOf`, `trustLevel`), one
 * module for every medium (the daemon's `/v1/agents`, the local medium), so registering
 * and listing agents cannot drift between the wire and in-process.
 *
 *   await register(kb, "AgentAtlas", { displayName: "Atlas", trust: 1 });
 *   agents(kb); // [{ id: "AgentAtlas", context: "CxAtlas", displayName: "Atlas", trust: 1 }]
 *
 * Tokens are not here: the daemon issues them (its access module) after the facts are durable.
 */
import type { Kb } from "./kb.js";
import { KbError } from "./errors.js";
import { parseTerm, stringAtom, canonicalNumber, isString, stringValue, isNumber, type List } from "./term.js";
import { contextFor, isAgentId } from "./identity.js";

export const REGISTRY_CONTEXT = "CxRegistry";

export interface AgentInfo {
  id: string;
  context: string;
  displayName: string | null;
  trust: number | null;
}

export interface RegisterOptions {
  displayName?: string;
  trust?: number;
}

/** The last argument of the registry fact `(pred id value)`, as canonical text. */
function registryValue(kb: Kb, pred: string, id: string): string | undefined {
  const hit = kb.match(`(${pred} ${id} ?v)`, REGISTRY_CONTEXT)[0];
  return hit ? ((parseTerm(hit.sentence) as List)[2] as string) : undefined;
}

/**
 * Register (or re-register) an agent in one atomic edit: `(agent id)`, its display name
 * (default: the id) and its trust (kept when not given; 0 for a new agent). A changed value
 * replaces the old fact in the same edit. Resolves once the edit is durable.
 */
export async function register(kb: Kb, id: string, opts: RegisterOptions = {}): Promise<{ id: string; context: string; seq: number }> {
  if (!isAgentId(id)) throw new KbError("naming", `agent id ${JSON.stringify(id)} must be Agent followed by CapitalCamelCase, e.g. AgentAtlas`);
  const wanted: [string, string][] = [["displayNameOf", stringAtom(opts.displayName ?? id)]];
  if (opts.trust !== undefined || registryValue(kb, "trustLevel", id) === undefined) {
    const trust = canonicalNumber(String(opts.trust ?? 0));
    if (trust === undefined) throw new KbError("bad-request", `trust must be a plain decimal number, got ${opts.trust}`);
    wanted.push(["trustLevel", trust]);
  }
  const add = [{ sentence: `(agent ${id})`, context: REGISTRY_CONTEXT }];
  const remove: number[] = [];
  for (const [pred, value] of wanted) {
    add.push({ sentence: `(${pred} ${id} ${value})`, context: REGISTRY_CONTEXT });
    for (const old of kb.match(`(${pred} ${id} ?v)`, REGISTRY_CONTEXT)) {
      if ((parseTerm(old.sentence) as List)[2] !== value && !old.derived) remove.push(old.handle);
    }
  }
  const { seq } = await kb.edit({ add, remove });
  return { id, context: contextFor(id), seq };
}

/** Every registered agent, by id, with its context, display name and trust. */
export function agents(kb: Kb): AgentInfo[] {
  return kb
    .match("(agent ?a)", REGISTRY_CONTEXT)
    .map((r) => (parseTerm(r.sentence) as List)[1] as string)
    .sort()
    .map((id) => {
      const name = registryValue(kb, "displayNameOf", id);
      const trust = registryValue(kb, "trustLevel", id);
      return {
        id,
        context: contextFor(id),
        displayName: name !== undefined && isString(name) ? stringValue(name) : (name ?? null),
        trust: trust !== undefined && isNumber(trust) ? Number(trust) : null,
      };
    });
}
