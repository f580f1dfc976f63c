/**
 * The `--tool-search*` options as one spec, or undefined when search mode is off. The embeddings
 * endpoint is optional; its key is only ever named (a secret), never given on the command line, where
 * the process list would show it, and never sent over plain http beyond loopback (the rule every
 * credential mcpmgr sends follows); a keyless endpoint may be anywhere.
 */
import { McpmgrError } from "../errors.ts";
import { isLoopbackHostname } from "./loopback.ts";

export interface ToolSearchValues {
  readonly "tool-search": boolean;
  readonly "tool-search-embeddings"?: string | undefined;
  readonly "tool-search-embeddings-model"?: string | undefined;
  readonly "tool-search-embeddings-key-secret"?: string | undefined;
}

export interface ToolSearchSpec {
  readonly embeddings:
    | {
        readonly url: string;
        readonly model: string;
        /** Name of the secret holding the API key; undefined: no Authorization header. */
        readonly keySecret: string | undefined;
      }
    | undefined;
}

const embeddingOptions = [
  "tool-search-embeddings",
  "tool-search-embeddings-model",
  "tool-search-embeddings-key-secret",
];

export function toolSearchSpec(values: ToolSearchValues): ToolSearchSpec | undefined {
  const given = embeddingOptions.filter((name) => (values as unknown as Record<string, unknown>)[name] !== undefined);
  if (!values["tool-search"]) {
    if (given.length > 0) {
      throw new McpmgrError("MISSING_OPTION", `--${given[0]} needs --tool-search`, {
        hint: "add --tool-search (embeddings only serve the search mode)",
      });
    }
    return undefined;
  }
  const url = values["tool-search-embeddings"];
  if (url === undefined) {
    if (given.length > 0) {
      throw new McpmgrError("MISSING_OPTION", `--${given[0]} needs --tool-search-embeddings`, {
        hint: "add --tool-search-embeddings URL (an OpenAI-compatible /v1/embeddings endpoint)",
      });
    }
    return { embeddings: undefined };
  }
  const model = values["tool-search-embeddings-model"];
  if (model === undefined) {
    throw new McpmgrError("MISSING_OPTION", "--tool-search-embeddings needs --tool-search-embeddings-model", {
      hint: "name the endpoint's embedding model, e.g. --tool-search-embeddings-model text-embedding-3-small",
    });
  }
  const keySecret = values["tool-search-embeddings-key-secret"];
  const endpoint = new URL(url);
  if (keySecret !== undefined && endpoint.protocol === "http:" && !isLoopbackHostname(endpoint.hostname)) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--tool-search-embeddings ${endpoint.href}: the API key (--tool-search-embeddings-key-secret) is sent only over https:// (http:// only on loopback)`,
      { hint: "use the endpoint's https:// URL, or leave the key out for a keyless server on your network" },
    );
  }
  return { embeddings: { url, model, keySecret } };
}
