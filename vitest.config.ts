import { defineConfig } from "vitest/config";

// Slow suites (crash, kill and load tests) are named *.slow.test.ts: `npm test` runs every
// suite, `npm run test:fast` leaves the slow ones out. The global setup brings up the real
// servers (scripts/provision.sh) and builds dist/ once,
// because integration tests spawn the real daemon and agent processes from it.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
