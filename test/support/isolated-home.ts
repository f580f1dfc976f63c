/**
 * Preloaded by bun test (bunfig.toml): every test and every CLI it starts uses a fresh
 * MCPMGR_HOME, never the developer's real configuration, registry, secrets or workloads;
 * and tests get a default timeout that suits real servers.
 */
import { plugin } from "bun";
import { setDefaultTimeout } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

process.env.MCPMGR_HOME ??= mkdtempSync(join(tmpdir(), "mcpmgr-test-home-"));
// Tests never touch the OS keychain.
process.env.MCPMGR_SECRETS_PASSWORD ??= "test-only-password";

// The process runtime unless a test asks for a container engine (MCPMGR_RUNTIME=docker):
// with dockerd running, detection would otherwise move every package test into a container.
// Detection itself is tested with the variable removed.
process.env.MCPMGR_RUNTIME ??= "process";

// Integration tests start real servers; 5 s (bun's default) is too tight on a loaded 2-core CI.
// A preload's setDefaultTimeout reaches only the first test file of a run (oven-sh/bun#43787):
// every later file would be back on 5 s. So the call is also put at the top of each test file
// as it loads, on its first line so that line numbers in failures stay right. A file's own
// setDefaultTimeout or a test's own timeout still win (they come later).
const DEFAULT_TEST_TIMEOUT_MS = 60_000;
setDefaultTimeout(DEFAULT_TEST_TIMEOUT_MS);
plugin({
  name: "default-test-timeout",
  setup(build) {
    build.onLoad({ filter: /\.test\.ts$/ }, async ({ path }) => ({
      contents: `import { setDefaultTimeout as __setDefaultTimeout } from "bun:test"; __setDefaultTimeout(${DEFAULT_TEST_TIMEOUT_MS});${await Bun.file(path).text()}`,
      loader: "ts",
    }));
  },
});
