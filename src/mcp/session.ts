/**
 * One MCP client's seat on the channel: a wire connection (the token's principal is the
 * identity), the agent it speaks as and the channel it has joined. The join (two genlCx
 * edges in one edit; re-joining stores nothing) is made when the session opens, so a
 * refused move never writes anything, not even the join, and a token that cannot speak as
 * the agent is refused at once with the wire's own type.
 *
 *   const s = await openSession(wire({ url, token }), "AgentAtlas", "CxDeploy");
 *   s.handle.context === "CxAtlas";
 */
import { join, type AgentHandle, type WireMedium } from "../channel/index.js";

export interface AgentSession {
  readonly medium: WireMedium;
  readonly agent: string;
  readonly channel: string;
  /** The joined channel handle every move and read takes. */
  readonly handle: AgentHandle;
}

/** Join `channel` as `agent` over `medium`; refusals (naming, unauthorized, foreign-context) are the channel's ChannelErrors. */
export async function openSession(medium: WireMedium, agent: string, channel: string): Promise<AgentSession> {
  const handle = await join(medium, channel, agent);
  return Object.freeze({ medium, agent, channel, handle });
}
