#!/usr/bin/env bun
import { rootCommand } from "./cli/root.ts";
import { runMain } from "./cli/run-main.ts";

await runMain(rootCommand);
