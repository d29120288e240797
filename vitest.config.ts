import { defineConfig } from "vitest/config";

// Slow suites (crash, kill and load tests) are named *.slow.test.ts: `npm test` runs every
// suite, `npm run test:fast` leaves the slow ones out.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
