/** Drive the in-memory engine directly (no store), for benchmarks of reasoning alone. */
import { Engine, type AddEntry, type EngineLimits } from "../src/kb/engine.js";

export class EngineDriver {
  readonly engine: Engine;
  private seq = 1;
  constructor(limits: Partial<EngineLimits> = {}) {
    this.engine = new Engine({ limits });
  }
  add(entries: AddEntry[]): number[] {
    const prepared = entries.map((e) => this.engine.prepare(e));
    return this.engine.apply(prepared, [], this.seq++).addedHandles;
  }
  remove(handles: number[]): number {
    return this.engine.apply([], handles, this.seq++).removedHandles.length;
  }
  count(pred: string): number {
    let n = 0;
    for (const node of this.engine.index.byHandle.values()) if (node.atom[0] === pred && node.label > 0) n++;
    return n;
  }
}
