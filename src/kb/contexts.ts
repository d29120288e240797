/**
 * Context topology: `(genlCx A B)` edges ("A sees B"), cones, and the placement of
 * forward-chained conclusions.
 *
 * The cone of K (`up(K)`) is reflexive-transitive, always includes CxCore ("every context
 * sees CxCore"), tolerates cycles, and is cached until the next edge change. Edges change
 * rarely (an agent joining adds two), reads ask cones constantly: every cache is dropped on
 * an edge change and rebuilt lazily.
 */
export const CORE = "CxCore";
export const UNIVERSE = "CxUniverse";

export class Topology {
  private readonly supers = new Map<string, Map<string, number>>(); // sub -> super -> edge handle
  private readonly subs = new Map<string, Set<string>>();
  private upCache = new Map<string, ReadonlySet<string>>();
  private downCache = new Map<string, ReadonlySet<string>>();
  private placeCache = new Map<string, readonly string[]>();
  /** Bumped on every edge change; caches and callers compare against it. */
  version = 0;

  addEdge(sub: string, sup: string, handle: number): boolean {
    let m = this.supers.get(sub);
    if (!m) this.supers.set(sub, (m = new Map()));
    if (m.has(sup)) return false;
    m.set(sup, handle);
    let s = this.subs.get(sup);
    if (!s) this.subs.set(sup, (s = new Set()));
    s.add(sub);
    this.invalidate();
    return true;
  }

  removeEdge(sub: string, sup: string): boolean {
    const m = this.supers.get(sub);
    if (!m || !m.delete(sup)) return false;
    this.subs.get(sup)?.delete(sub);
    this.invalidate();
    return true;
  }

  private invalidate(): void {
    this.upCache = new Map();
    this.downCache = new Map();
    this.placeCache = new Map();
    this.version++;
  }

  /** Every context `ctx` sees: itself, CxCore, and everything reachable over edges. */
  up(ctx: string): ReadonlySet<string> {
    let s = this.upCache.get(ctx);
    if (!s) {
      s = this.closure(ctx, (c) => this.supers.get(c)?.keys());
      if (!s.has(CORE)) {
        const withCore = new Set(s);
        for (const c of this.closure(CORE, (c) => this.supers.get(c)?.keys())) withCore.add(c);
        s = withCore;
      }
      this.upCache.set(ctx, s);
    }
    return s;
  }

  /** Every context that sees `ctx`. CxCore is seen by every context, so down(CxCore) is open-ended: callers only intersect it. */
  down(ctx: string): ReadonlySet<string> {
    let s = this.downCache.get(ctx);
    if (!s) {
      s = this.closure(ctx, (c) => this.subs.get(c)?.values());
      this.downCache.set(ctx, s);
    }
    return s;
  }

  sees(viewer: string, seen: string): boolean {
    return viewer === seen || seen === CORE || this.up(viewer).has(seen);
  }

  /** True when some context sees both a and b. */
  meet(a: string, b: string): boolean {
    if (a === b || this.sees(a, b) || this.sees(b, a)) return true;
    if (a === CORE || b === CORE) return true;
    const da = this.down(a);
    for (const d of this.down(b)) if (da.has(d)) return true;
    return false;
  }

  /**
   * Where a forward-chained conclusion lands (reference §2.1): the most general contexts
   * that see every source context (the rule's and each matched fact's). Members of a cycle
   * are represented by the least name. Empty when no context sees them all.
   */
  placement(sources: readonly string[]): readonly string[] {
    const distinct = [...new Set(sources)];
    if (distinct.length === 1) return distinct;
    const key = distinct.sort().join(" ");
    const hit = this.placeCache.get(key);
    if (hit) return hit;
    // A source that sees every other source is itself the answer (the common case).
    const result = this.computePlacement(distinct);
    this.placeCache.set(key, result);
    return result;
  }

  private computePlacement(sources: string[]): readonly string[] {
    const nonCore = sources.filter((s) => s !== CORE);
    if (nonCore.length === 0) return [CORE];
    let common: Set<string> | undefined;
    for (const s of nonCore) {
      const d = this.down(s);
      if (!common) common = new Set(d);
      else for (const c of common) if (!d.has(c)) common.delete(c);
    }
    if (!common || common.size === 0) return [];
    const maximal: string[] = [];
    for (const d of common) {
      let dominated = false;
      for (const e of this.up(d)) {
        if (e !== d && common.has(e) && !this.up(e).has(d)) {
          dominated = true;
          break;
        }
        // In a cycle, the least name represents every member.
        if (e !== d && common.has(e) && this.up(e).has(d) && e < d) {
          dominated = true;
          break;
        }
      }
      if (!dominated) maximal.push(d);
    }
    return maximal.sort();
  }

  /** The edge handles on one shortest path from `from` up to `to` (empty when equal or via CxCore). */
  path(from: string, to: string): number[] {
    if (from === to) return [];
    const prev = new Map<string, [string, number]>();
    const queue = [from];
    const seen = new Set([from]);
    while (queue.length) {
      const c = queue.shift()!;
      for (const [sup, h] of this.supers.get(c) ?? []) {
        if (seen.has(sup)) continue;
        seen.add(sup);
        prev.set(sup, [c, h]);
        if (sup === to) {
          const out: number[] = [];
          let at = to;
          while (at !== from) {
            const [p, eh] = prev.get(at)!;
            out.push(eh);
            at = p;
          }
          return out.reverse();
        }
        queue.push(sup);
      }
    }
    return [];
  }

  private closure(start: string, next: (c: string) => Iterable<string> | undefined): Set<string> {
    const out = new Set([start]);
    const stack = [start];
    while (stack.length) {
      const c = stack.pop()!;
      const it = next(c);
      if (!it) continue;
      for (const n of it) {
        if (!out.has(n)) {
          out.add(n);
          stack.push(n);
        }
      }
    }
    return out;
  }
}
