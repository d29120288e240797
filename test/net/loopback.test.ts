/** The one loopback/Host module: which peers, binds and Host headers count as this machine's. */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { boundHostNames, hostAllowed, isLoopbackAddress, isLoopbackAuthority, isLoopbackBind } from "../../src/net/loopback.js";

describe("loopback", () => {
  it("peers and binds: 127.0.0.0/8, ::1 (bracketed or not) and their IPv4-mapped forms; localhost as a bind name only", () => {
    for (const [a, ok] of [["127.0.0.1", true], ["127.8.9.10", true], ["::1", true], ["[::1]", true], ["::ffff:127.0.0.1", true], ["10.0.0.1", false], ["::", false], ["::ffff:192.168.1.2", false], ["0.0.0.0", false], ["localhost", false], ["128.0.0.1", false], [undefined, false]] as const) {
      expect([a, isLoopbackAddress(a)]).toEqual([a, ok]);
    }
    expect(isLoopbackBind("localhost")).toBe(true);
    expect(isLoopbackBind("LOCALHOST")).toBe(true);
    expect(isLoopbackBind("localhost.evil.example")).toBe(false);
    expect(isLoopbackAuthority("[::1]:4200")).toBe(true);
    expect(isLoopbackAuthority("evil.example:4200")).toBe(false);
  });

  it("a Host passes exactly when it names a bound name with the port (any case); nothing else does", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 65535 }), fc.string({ maxLength: 30 }), (port, junk) => {
        const names = boundHostNames(port, "127.0.0.1");
        for (const h of [`127.0.0.1:${port}`, `localhost:${port}`, `LocalHost:${port}`, `[::1]:${port}`]) expect(hostAllowed(h, names)).toBe(true);
        for (const h of [`evil.example:${port}`, `127.0.0.1:${port}.evil.example`, `localhost:${port + 1}`, `${junk}:${port}`, junk, undefined]) {
          const ok = typeof h === "string" && [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, ...(port === 80 ? ["127.0.0.1", "localhost", "[::1]"] : [])].includes(h.trim().toLowerCase());
          expect([h, hostAllowed(h, names)]).toEqual([h, ok]);
        }
      }),
    );
    expect(hostAllowed("127.0.0.2:9", boundHostNames(9, "127.0.0.2"))).toBe(true);
    expect(hostAllowed("127.0.0.2:9", boundHostNames(9, "127.0.0.1"))).toBe(false);
  });
});
