/**
 * `npm run bench -- <suite>...` runs the named suites (all when none is named). Each suite
 * prints its figures with their ratios against baselines measured in the same run, and
 * writes bench/results/<suite>.json.
 */
const suites: Record<string, () => Promise<void>> = {
  kb: async () => (await import("./kb.js")).run(),
  wire: async () => (await import("./wire.js")).run(),
  channel: async () => (await import("./channel.js")).run(),
  rules: async () => (await import("./rules.js")).run(),
  console: async () => (await import("./console.js")).run(),
  writepath: async () => (await import("./writepath.js")).run(),
  cluster: async () => (await import("./cluster.js")).run(),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = wanted.length ? wanted : Object.keys(suites);
for (const name of names) {
  const suite = suites[name];
  if (!suite) {
    console.error(`unknown suite ${name}; known: ${Object.keys(suites).join(", ")}`);
    process.exit(2);
  }
  console.log(`\n== bench ${name}`);
  try {
    await suite();
  } catch (e) {
    console.error(`\nbench ${name} FAILED: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
