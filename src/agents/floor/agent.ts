/**
 * The floor agent assembled: join the room channel, a KB room recorder, the floor machine
 * and session from a persona, a mouth, and the loopback ingest endpoint. Everything with a
 * clock takes the injected one; `koinii floor` (cli.ts) passes the system clock.
 */
import type { ContextName, Medium } from "../../channel/index.js";
import { startIngest, type Ingest } from "./ingest.js";
import { joinRoom, KbRoomRecorder } from "./kbroom.js";
import { FloorMachine, floorOptionsFrom } from "./machine.js";
import type { Mouth } from "./mouth.js";
import { characterNames, type Persona } from "./persona.js";
import { FloorSession } from "./session.js";
import type { Clock, Scheduler } from "./time.js";

export interface FloorAgentOptions {
  medium: Medium;
  /** The room channel context, e.g. CxRoomStandup. */
  room: ContextName;
  persona: Persona;
  mouth: Mouth;
  clock: Clock;
  scheduler: Scheduler;
  /** Ingest bind (loopback only) and port (0 = any free port). */
  ingestHost?: string;
  ingestPort?: number;
  /** The secret every ingest request must carry (`Authorization: Bearer <secret>`). */
  ingestSecret: string;
  /** Recorder, mouth and lookup failures: the floor keeps running. */
  onError?: (e: unknown) => void;
}

export interface FloorAgent {
  session: FloorSession;
  recorder: KbRoomRecorder;
  ingest: Ingest;
  /** Stop ingest and timers, let queued turns and records finish. The medium stays open (the caller's). */
  stop(): Promise<void>;
}

/**
 * @example const agent = await startFloorAgent({ medium: wire({ url, token }), room: "CxRoomStandup",
 *   persona, mouth: new ComposerMouth(createComposer(process.env), persona), clock: systemClock, scheduler: systemScheduler });
 */
export async function startFloorAgent(o: FloorAgentOptions): Promise<FloorAgent> {
  const handle = await joinRoom(o.medium, o.room, o.persona.id);
  const recorder = await KbRoomRecorder.open({ handle, clock: o.clock });
  const machine = new FloorMachine(floorOptionsFrom(o.persona, characterNames(o.persona)));
  const onError = o.onError ?? (() => {});
  const session = new FloorSession({ machine, mouth: o.mouth, recorder, clock: o.clock, scheduler: o.scheduler, onError });
  const ingest = await startIngest({
    session,
    clock: o.clock,
    onError,
    secret: o.ingestSecret,
    ...(o.ingestHost !== undefined ? { host: o.ingestHost } : {}),
    ...(o.ingestPort !== undefined ? { port: o.ingestPort } : {}),
  });
  return {
    session,
    recorder,
    ingest,
    async stop() {
      await ingest.close();
      session.stop();
      await session.idle();
    },
  };
}
