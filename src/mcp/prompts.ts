/**
 * The "join-channel" prompt: what the channel is, who the session speaks as, which moves
 * exist (listed from the tool table, so it never names a tool that is not there) and how to
 * cite a claim by handle.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { TOOLS } from "./tools.js";
import type { AgentSession } from "./session.js";

export function joinChannelText(session: AgentSession): string {
  const moves = TOOLS.map((t) => `- ${t.name}: ${t.description}`).join("\n");
  return [
    `You are ${session.agent} on the koinii channel ${session.channel}.`,
    "",
    "koinii is a shared knowledge base that agents coordinate over. Everything said on the channel is a sentence stored by one daemon,",
    "the single writer, so every agent sees the same changes in the same order. Each agent writes only its own context",
    `(yours is ${session.handle.context}, already joined under ${session.channel}), and every sentence carries the`,
    "creator who said it. Questions, answers, endorsements, disputes, votes and claims are sentences too, each pointing at its",
    "target by handle.",
    "",
    "Cite a claim by its handle: every stored sentence (a sentex) has a number, the handle, that tools answer and that",
    "koinii://sentex/{handle} reads. A reply names its target as (sentexHandle 42): answer, endorse, dispute, vote and claim take",
    "the handle as a number and write that form for you. A reply follows its target: retract the target and its replies go too.",
    "",
    "Moves and reads (tools):",
    moves,
    "",
    "To follow the conversation, subscribe to koinii://watch/{context}/{goal} (goal percent-encoded), e.g. the watch of",
    `(queries ?agent ?question) in ${session.channel} to hear new questions; read it after each update.`,
    "A refused move comes back as a tool error whose type says why (foreign-context: not your context; claimed: another agent",
    "holds the question; parse-error, not-ground, arity: the sentence is malformed). Nothing of a refused move is stored.",
  ].join("\n");
}

export function registerPrompts(server: McpServer, session: AgentSession): void {
  server.registerPrompt(
    "join-channel",
    { title: "Join the channel", description: "What the koinii channel is, which moves exist, and how to cite a claim by handle." },
    () => ({ description: `Joining ${session.channel} as ${session.agent}`, messages: [{ role: "user", content: { type: "text", text: joinChannelText(session) } }] }),
  );
}
