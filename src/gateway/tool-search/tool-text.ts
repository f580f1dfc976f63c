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

export function toolFields(tool: SearchableTool, stem = true): ToolFields {
  const names: string[] = [];
  const texts: string[] = [];
  collectParameters(tool.inputSchema, 0, names, texts);
  return {
    // Names keep their stop words: in "get_file" or "set_value" the verb is the point.
    name: tokenize(`${tool.name} ${tool.title ?? ""}`, { stopWords: false, stem }),
    description: tokenize(tool.description ?? "", { stem }),
    params: tokenize(names.join(" "), { stopWords: false, stem }),
    paramText: tokenize(texts.join(" "), { stem }),
  };
}
