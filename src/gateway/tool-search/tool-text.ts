/**
 * What describes a tool, split into the fields the index weighs differently: its name (and title), its
 * description, its parameters' names, and their descriptions (with titles and enum values). Parameters
 * nested in objects and arrays count too, a few levels deep: that is where many tools keep their options.
 */
import { tokenize } from "./tokenizer.ts";
import { isObject } from "../../objects.ts";

export interface SearchableTool {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
}

export interface ToolFields {
  readonly name: readonly string[];
  readonly description: readonly string[];
  readonly params: readonly string[];
  readonly paramText: readonly string[];
}

const MAX_SCHEMA_DEPTH = 4;

/**
 * The most of each field's text that is indexed (16 KiB; LiveMCPBench's longest description is under
 * 4 KiB), and of a workload's descriptions and parameter texts together (1 MiB; all of LiveMCPBench's
 * 527 tools hold under 1 MiB). A workload may list 16 MiB (the list's bound), and the gateway tokenises
 * its tools again on each change of its list, in the one thread every caller waits on: 16 MiB of
 * distinct words took it 5 to 9 s each time.
 */
export const MAX_FIELD_CHARS = 16_384;
export const MAX_WORKLOAD_TEXT_CHARS = 1_048_576;

function head(text: string, room = MAX_FIELD_CHARS): string {
  const most = Math.max(0, Math.min(room, MAX_FIELD_CHARS));
  return text.length > most ? text.slice(0, most) : text;
}

function collectParameters(schema: unknown, depth: number, names: string[], texts: string[]): void {
  if (!isObject(schema) || depth > MAX_SCHEMA_DEPTH) return;
  const properties = schema.properties;
  if (isObject(properties)) {
    for (const [name, property] of Object.entries(properties)) {
      names.push(name);
      if (!isObject(property)) continue;
      if (typeof property.title === "string") texts.push(property.title);
      if (typeof property.description === "string") texts.push(property.description);
      if (Array.isArray(property.enum)) texts.push(property.enum.filter((v) => typeof v === "string").join(" "));
      collectParameters(property, depth + 1, names, texts);
    }
  }
  if (isObject(schema.items)) collectParameters(schema.items, depth + 1, names, texts);
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const branches = schema[key];
    if (Array.isArray(branches)) for (const branch of branches) collectParameters(branch, depth + 1, names, texts);
  }
}

/**
 * `room`: how much of the description and parameter texts the workload's budget still has (the rest of
 * a tool past it is known by its name and parameter names); `used` says how much of it this tool took.
 */
export function toolFields(
  tool: SearchableTool,
  stem = true,
  room = MAX_WORKLOAD_TEXT_CHARS,
): ToolFields & { used: number } {
  const names: string[] = [];
  const texts: string[] = [];
  collectParameters(tool.inputSchema, 0, names, texts);
  const description = head(tool.description ?? "", room);
  const paramText = head(texts.join(" "), room - description.length);
  return {
    // Names keep their stop words: in "get_file" or "set_value" the verb is the point.
    name: tokenize(head(`${tool.name} ${tool.title ?? ""}`), { stopWords: false, stem }),
    description: tokenize(description, { stem }),
    params: tokenize(head(names.join(" ")), { stopWords: false, stem }),
    paramText: tokenize(paramText, { stem }),
    used: description.length + paramText.length,
  };
}
