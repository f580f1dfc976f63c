/** Tool search at the group gateway (`gateway GROUP`): issue 19. */
import { booleanOption, stringOption } from "../option-spec.ts";
import { httpUrl, nonEmpty } from "../values.ts";

export const toolSearchOptions = {
  "tool-search": booleanOption({
    description: "List only find_tool and call_tool instead of every tool of the group (tools are found by search)",
    default: false,
  }),
  "tool-search-embeddings": stringOption({
    description: "OpenAI-compatible embeddings endpoint (…/v1/embeddings) blended with the keyword search",
    valueHint: "url",
    schema: httpUrl,
  }),
  "tool-search-embeddings-model": stringOption({
    description: "Model name sent to the embeddings endpoint (required with --tool-search-embeddings)",
    valueHint: "name",
    schema: nonEmpty,
  }),
  "tool-search-embeddings-key-secret": stringOption({
    description: "Secret from the secrets manager holding the embeddings endpoint's API key",
    valueHint: "secret",
    schema: nonEmpty,
  }),
} as const;
