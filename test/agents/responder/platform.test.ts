import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PlatformClient, PlatformError, parseTokenFile } from "../../../src/agents/responder/index.js";
import { tmp } from "./helpers.js";

let server: Server;
let base: string;
const seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
let respond: (res: ServerResponse) => void;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      respond(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen.length = 0;
  respond = (res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":true}');
  };
});

function client(token = "OPENBOTCITY_JWT=eyJ.abc.def\nOTHER=1\n") {
  const tokenFile = join(tmp(), "obc.env");
  writeFileSync(tokenFile, token);
  return { c: new PlatformClient({ baseUrl: base, tokenFile }), tokenFile };
}

describe("platform client", () => {
  it("POSTs {message} to /dm/conversations/{id}/send with the bearer token", async () => {
    const { c } = client();
    await c.send("conv-1", "Hello, Rex.");
    expect(seen).toEqual([expect.objectContaining({ method: "POST", url: "/dm/conversations/conv-1/send", body: '{"message":"Hello, Rex."}' })]);
    expect(seen[0].headers.authorization).toBe("Bearer eyJ.abc.def");
    expect(seen[0].headers["content-type"]).toBe("application/json");
  });

  it("escapes the conversation id so it cannot change the path", async () => {
    const { c } = client();
    await c.send("../../admin?x=1", "hi");
    expect(seen[0].url).toBe("/dm/conversations/..%2F..%2Fadmin%3Fx%3D1/send");
  });

  it.each([400, 401, 403, 404, 429, 500, 503])("a %i answer is a PlatformError carrying the status, without the token", async (status) => {
    respond = (res) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end('{"error":"nope"}');
    };
    const { c } = client();
    const err = await c.send("c", "hi").then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ code: "http_status", status });
    expect(String((err as Error).message)).not.toContain("eyJ");
  });

  it("re-reads the token file on every request (the presence daemon rotates it)", async () => {
    const { c, tokenFile } = client();
    await c.send("c", "a");
    writeFileSync(tokenFile, "OPENBOTCITY_JWT='rotated'\n");
    await c.send("c", "b");
    expect(seen.map((s) => s.headers.authorization)).toEqual(["Bearer eyJ.abc.def", "Bearer rotated"]);
  });

  it("no readable token is a no_token error and nothing is sent", async () => {
    const c = new PlatformClient({ baseUrl: base, tokenFile: join(tmp(), "missing") });
    await expect(c.send("c", "hi")).rejects.toMatchObject({ code: "no_token" });
    expect(seen).toHaveLength(0);
  });

  it("a connection failure is a network error", async () => {
    const c = new PlatformClient({ baseUrl: "http://127.0.0.1:1", tokenFile: client().tokenFile });
    await expect(c.send("c", "hi")).rejects.toMatchObject({ code: "network" });
  });

  it("fetchThread reads the messages, oldest first", async () => {
    respond = (res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ messages: [{ id: 7, sender_id: "b1", display_name: "Rex", message: "full text" }, { id: "m8", sender_name: "Kannaka", text: "hi" }] }));
    };
    const { c } = client();
    expect(await c.fetchThread("c1")).toEqual([
      { id: "7", senderId: "b1", from: "Rex", text: "full text" },
      { id: "m8", senderId: null, from: "Kannaka", text: "hi" },
    ]);
    expect(seen[0]).toMatchObject({ method: "GET", url: "/dm/conversations/c1" });
  });

  it("fetchThread refuses an unexpected shape", async () => {
    respond = (res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"msgs":[]}');
    };
    await expect(client().c.fetchThread("c1")).rejects.toMatchObject({ code: "bad_response" });
  });

  it.each([
    ["OPENBOTCITY_JWT=abc", "abc"],
    ["export OPENBOTCITY_JWT=\"abc\"", "abc"],
    ["# comment\nOPENBOTCITY_JWT = abc \n", "abc"],
    ["abc.def.ghi\n", "abc.def.ghi"],
    ["OTHER=1", null],
    ["", null],
  ])("parseTokenFile(%j) = %j", (text, want) => {
    expect(parseTokenFile(text, "OPENBOTCITY_JWT")).toBe(want);
  });
});
