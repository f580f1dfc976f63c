/** Limits users can raise through the environment (documented in the README). */
import * as v from "valibot";
import { defaultMaxBodyBytes } from "../middleware/body-limit.ts";
import { McpmgrError } from "../errors.ts";

const byteCount = v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number), v.minValue(1024));

export function maxBodyBytesFromEnv(env: Record<string, string | undefined> = process.env): number {
  const raw = env.MCPMGR_MAX_REQUEST_BYTES;
  if (raw === undefined || raw === "") return defaultMaxBodyBytes;
  const parsed = v.safeParse(byteCount, raw);
  if (!parsed.success) {
    throw new McpmgrError("INVALID_OPTION", `MCPMGR_MAX_REQUEST_BYTES ${JSON.stringify(raw)}: must be a whole number of bytes, at least 1024`, {
      hint: `unset it to use the default of ${defaultMaxBodyBytes} bytes`,
    });
  }
  return parsed.output;
}
