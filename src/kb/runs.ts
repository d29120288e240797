/**
 * Runs: the compact form both SQLite logs use for sentexes written together (event.ts for an
 * event's added records, segment.ts for a checkpoint segment's rows). A row is
 * [handle, sentence, context, tag, creator, createdAt, seq], where `tag` is one number the
 * caller packs (an event's flags, a row's premise mark). Rows with consecutive handles that
 * share every field but the sentence are one run, [first, [sentences...], context, tag,
 * creator, createdAt, seq]; a run of one is written as the row itself.
 *
 *   const runs = new RunWriter();
 *   runs.push(7, "(dog Rex)", "CxPets", 8, null, 5, 9); runs.push(8, "(dog Fido)", "CxPets", 8, null, 5, 9);
 *   runs.done()   // [[7, ["(dog Rex)", "(dog Fido)"], "CxPets", 8, null, 5, 9]]
 */

export type Row = [handle: number, sentence: string, context: string, tag: number, creator: string | null, createdAt: number, seq: number];
/** Sentexes with handles `first`, `first + 1`, ...: the sentences, then the fields they share. */
export type Run = [first: number, sentences: string[], context: string, tag: number, creator: string | null, createdAt: number, seq: number];

/** Builds the runs of rows pushed in handle order. */
export class RunWriter {
  private readonly out: (Row | Run)[] = [];
  /** The open run; closed when a row does not continue it. */
  private run: Run | undefined;
  /** The handle that continues the open run. */
  private next = NaN;

  push(handle: number, sentence: string, context: string, tag: number, creator: string | null, createdAt: number, seq: number): void {
    const run = this.run;
    if (run !== undefined && handle === this.next && context === run[2] && tag === run[3] && creator === run[4] && createdAt === run[5] && seq === run[6]) {
      run[1].push(sentence);
      this.next++;
      return;
    }
    if (run !== undefined) this.out.push(closed(run));
    this.run = [handle, [sentence], context, tag, creator, createdAt, seq];
    this.next = handle + 1;
  }

  /** Every run, the open one closed. */
  done(): (Row | Run)[] {
    if (this.run !== undefined) this.out.push(closed(this.run));
    this.run = undefined;
    return this.out;
  }
}

/** A finished run as it is written: a run of one as a plain row. */
const closed = (run: Run): Row | Run => (run[1].length === 1 ? [run[0], run[1][0]!, run[2], run[3], run[4], run[5], run[6]] : run);

/** Each row the runs hold, in order (rows as written before runs existed read the same). */
export function eachRow(runs: readonly (Row | Run)[], visit: (handle: number, sentence: string, context: string, tag: number, creator: string | null, createdAt: number, seq: number) => void): void {
  for (const [first, sentences, context, tag, creator, createdAt, seq] of runs) {
    if (typeof sentences === "string") visit(first, sentences, context, tag, creator, createdAt, seq);
    else for (let i = 0; i < sentences.length; i++) visit(first + i, sentences[i]!, context, tag, creator, createdAt, seq);
  }
}
