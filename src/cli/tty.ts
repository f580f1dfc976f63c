// citty decides on colours when it loads: no escape codes when stdout is not a terminal.
if (!process.stdout.isTTY && process.env.NO_COLOR === undefined) process.env.NO_COLOR = "1";
