#!/usr/bin/env bun
import "./cli/tty.ts";
import { rootCommand } from "./cli/root.ts";
import { runMain } from "./cli/run-main.ts";

await runMain(rootCommand);
