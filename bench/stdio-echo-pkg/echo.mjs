#!/usr/bin/env node
// The bin of this local package: the benchmark's stdio echo server (bench/stdio-echo.mjs).
import "../stdio-echo.mjs";
