/**
 * Preloaded by bun test (bunfig.toml): every test and every CLI it starts uses a fresh
 * MCPMGR_HOME, never the developer's real configuration, registry, secrets or workloads;
 * and tests get a default timeout that suits real servers.
 */
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
// Bun keeps a preload's default for the first test file of a run only (oven-sh/bun#43787):
// a file whose tests do heavier work sets its own timeouts (setDefaultTimeout or per test).
setDefaultTimeout(60_000);
