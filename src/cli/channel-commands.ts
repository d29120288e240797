/**
 * Channel moves from the shell, as one agent: `koinii pose|queries|answer|answers|dispute|disputes|rule|why`.
 * Each joins `--channel` as `--as` (idempotent: the agent's context is lifted under the
 * channel) over the wire and makes one move through the channel library, printing one JSON
 * line (or, with `--handle`, the new sentex's handle alone, for `Q=$(koinii pose ...)`).
 * A refusal prints `{ok: false, type, error}` on stderr and exits 1.
 */
import type { Command } from "commander";
import { answer, answersTo, dispute, disputesIn, join, openQueries, poseQuery, rule, wire, ChannelError, type AgentHandle } from "../channel/client.js";
import { WireClient } from "./client.js";
import { type ConnOptions, parseWhole, print, run, withConn } from "./client-commands.js";

interface AgentOptions extends ConnOptions {
  channel: string;
  as: string;
  handle?: boolean;
}

function asAgent(cmd: Command): Command {
  return withConn(cmd)
    .requiredOption("--channel <context>", "the channel, e.g. CxDeploy")
    .requiredOption("--as <agent>", "the agent making the move, e.g. AgentAtlas (with a token: that agent's token)");
}

/**
 * Join as the agent, make the move, close the connection pool (its keep-alive would hold
 * the process open); a channel refusal prints like any other refusal.
 */
function move(o: AgentOptions, fn: (h: AgentHandle) => Promise<void>): Promise<void> {
  return run(async () => {
    const medium = wire({ url: o.url, token: o.token });
    try {
      await fn(await join(medium, o.channel, o.as));
    } catch (e) {
      if (!(e instanceof ChannelError)) throw e;
      process.stderr.write(JSON.stringify({ ok: false, type: e.type, error: e.message, ...(e.problems ? { problems: e.problems } : {}) }) + "\n");
      process.exitCode = 1;
    } finally {
      await medium.close();
    }
  });
}

const printHandle = (handle: number, o: AgentOptions): void => (o.handle ? print(handle) : print({ ok: true, handle }));

export function registerChannelCommands(program: Command): void {
  asAgent(program.command("pose <question>").description("pose a query in the channel, e.g. '(usesDatabase ProdCluster ?db)'"))
    .option("--handle", "print only the new sentex's handle")
    .action((question: string, o: AgentOptions) => move(o, async (h) => printHandle(await poseQuery(h, question), o)));

  asAgent(program.command("queries").description("the channel's unanswered queries, one JSON line each: handle, who asked, the question"))
    .option("--handle", "print only each query's handle, one a line")
    .action((o: AgentOptions) =>
      move(o, async (h) => {
        for (const q of await openQueries(h, { unanswered: true })) {
          if (o.handle) print(q.handle);
          else print({ handle: q.handle, agent: q.agent, question: q.question });
        }
      }),
    );

  asAgent(program.command("answer <query> <content>").description("answer the query with that handle"))
    .option("--handle", "print only the new sentex's handle")
    .action((query: string, content: string, o: AgentOptions) => move(o, async (h) => printHandle(await answer(h, content, parseWhole(query)), o)));

  asAgent(program.command("answers <query>").description("the believed answers to the query with that handle, one JSON line each"))
    .option("--handle", "print only each answer's handle, one a line")
    .action((query: string, o: AgentOptions) =>
      move(o, async (h) => {
        for (const a of await answersTo(h, parseWhole(query))) print(o.handle ? a.handle : { handle: a.handle, sentence: a.sentence, creator: a.creator });
      }),
    );

  asAgent(program.command("dispute <target>").description("dispute a sentex: its negation and the disputes edge, in one edit"))
    .option("--handle", "print only the new sentex's handle")
    .action((target: string, o: AgentOptions) => move(o, async (h) => printHandle(await dispute(h, parseWhole(target)), o)));

  asAgent(program.command("disputes").description("the disputes the channel sees, one JSON line each: id, state and both sides"))
    .option("--ids", "print only each dispute's id, one a line")
    .action((o: AgentOptions & { ids?: boolean }) =>
      move(o, async (h) => {
        for (const d of await disputesIn(h)) {
          if (o.ids) process.stdout.write(`${d.id}\n`);
          else print({ id: d.id, state: d.state, sides: d.sides.map((s) => ({ handle: s.handle, sentence: s.sentence, context: s.context })) });
        }
      }),
    );

  asAgent(program.command("rule <dispute> <upheld>").description("rule on a dispute as --as, upholding one side (the sentence or its negation)"))
    .action((id: string, upheld: string, o: AgentOptions) => move(o, async (h) => print({ ok: true, ...(await rule(h, id, upheld)) })));

  withConn(program.command("why <handle>").description("why a sentex is (not) believed: premise, support, reason"))
    .action((handle: string, o: ConnOptions) => run(async () => print(await new WireClient(o.url, o.token).call("POST", "/v1/why", { handle: parseWhole(handle) }))));
}
