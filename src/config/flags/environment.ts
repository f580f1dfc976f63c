/** Environment and secrets given to the server process (`run`). */
import { repeatableOption, stringOption } from "../option-spec.ts";
import { envAssignment, nonEmpty, secretReference } from "../values.ts";

export const environmentOptions = {
  env: repeatableOption({
    short: "e",
    description: "Environment variable for the server, KEY=VALUE (repeatable)",
    valueHint: "KEY=VALUE",
    schema: envAssignment,
    hint: "write it as -e NAME=value",
  }),
  "env-file": stringOption({
    description: "Load environment variables from a file",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "env-file-dir": stringOption({
    description: "Load environment variables from every file in a directory",
    valueHint: "dir",
    schema: nonEmpty,
  }),
  secret: repeatableOption({
    description: "Secret from the secrets manager as an environment variable, NAME,target=ENV (repeatable)",
    valueHint: "NAME,target=ENV",
    schema: secretReference,
    hint: "write it as --secret NAME,target=VAR, with VAR the variable the server reads the secret from, such as GITHUB_TOKEN",
  }),
} as const;
