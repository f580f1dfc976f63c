/**
 * The part of a JSON(C) file an edit needs, without the syntax tree of the rest (review 9 F7).
 *
 * jsonc-parser's parseTree builds a node for every value: ~20 times the file's size in memory
 * (1.5 GB for a 68 MB ~/.claude.json, whose per-project history is most of it). An edit only
 * needs the objects on the way to one collection (`mcpServers`, `mcp.servers`) and that
 * collection itself. So the file is walked once with jsonc-parser's visitor, which builds
 * nothing and reports every syntax error parseTree would; the objects on the path get shallow
 * nodes (their properties, and each property's value as a node without children: offsets and
 * type only), and the value at the end of the path is parsed whole from its own slice of the
 * text. The result has parseTree's shape, so the editor's code works on it unchanged.
 */
import { type Node, type NodeType, type ParseError, parseTree, visit } from "jsonc-parser";

/** The options every client file is read with: comments and trailing commas accepted. */
export const PARSE_OPTIONS = { allowTrailingComma: true, disallowComments: false, allowEmptyContent: true } as const;

export interface Located {
  /** The root value (shallow), undefined for a file of nothing but whitespace and comments. */
  readonly root: Node | undefined;
  readonly error?: ParseError;
}

interface MutableNode {
  type: NodeType;
  value?: unknown;
  offset: number;
  length: number;
  children?: MutableNode[];
}

interface Frame {
  /** The object or array that began this frame, when it is tracked. */
  readonly node: MutableNode | undefined;
  /** Its path from the root, when it lies on the located path (its properties are tracked). */
  readonly path: readonly string[] | undefined;
  /** The property being read in a tracked object. */
  property?: MutableNode;
  key?: string;
}

/** The file, walked once: nodes for the objects on `path`, and the whole value at its end. */
export function locate(text: string, path: readonly string[]): Located {
  const stack: Frame[] = [];
  const whole: MutableNode[] = [];
  let root: MutableNode | undefined;
  let error: ParseError | undefined;

  /** A value starts: its node when its parent is tracked, and whether its own properties are. */
  const begin = (type: NodeType, offset: number, length: number, value?: unknown): Frame => {
    const parent = stack.at(-1);
    let node: MutableNode | undefined;
    let at: readonly string[] | undefined;
    if (parent === undefined) {
      node = root = { type, offset, length };
      at = [];
    } else if (parent.property !== undefined && parent.path !== undefined && parent.key !== undefined) {
      node = { type, offset, length };
      parent.property.children?.push(node);
      parent.property.length = offset + length - parent.property.offset;
      const step = parent.path.length;
      at = step < path.length && path[step] === parent.key ? [...parent.path, parent.key] : undefined;
      parent.property = undefined;
    }
    if (value !== undefined && node !== undefined) node.value = value;
    if (at !== undefined && at.length === path.length && node !== undefined) whole.push(node);
    const tracked = at !== undefined && at.length < path.length && type === "object";
    if (tracked && node !== undefined) node.children = [];
    return { node, path: tracked ? at : undefined };
  };
  const end = (offset: number, length: number) => {
    const frame = stack.pop();
    if (frame?.node === undefined) return;
    frame.node.length = offset + length - frame.node.offset;
    // The property holding it ends with it.
    const holder = stack.at(-1)?.node?.children?.at(-1);
    if (holder?.type === "property" && holder.children?.[1] === frame.node) {
      holder.length = offset + length - holder.offset;
    }
  };

  visit(
    text,
    {
      onObjectBegin: (offset, length) => {
        stack.push(begin("object", offset, length));
      },
      onObjectEnd: end,
      onArrayBegin: (offset, length) => {
        stack.push(begin("array", offset, length));
      },
      onArrayEnd: end,
      onLiteralValue: (value, offset, length) => {
        const type: NodeType =
          value === null
            ? "null"
            : typeof value === "string"
              ? "string"
              : typeof value === "number"
                ? "number"
                : "boolean";
        begin(type, offset, length, value);
      },
      onObjectProperty: (key, offset, length) => {
        const frame = stack.at(-1);
        if (frame?.path === undefined || frame.node === undefined) return;
        const property: MutableNode = {
          type: "property",
          offset,
          length,
          children: [{ type: "string", value: key, offset, length }],
        };
        frame.node.children?.push(property);
        frame.property = property;
        frame.key = key;
      },
      onError: (code, offset, length) => {
        error ??= { error: code, offset, length };
      },
    },
    PARSE_OPTIONS,
  );
  if (error !== undefined) return { root: undefined, error };
  // The values at the end of the path (one, unless its key is there twice), parsed whole from their own text.
  for (const node of whole) {
    if (node.type !== "object" && node.type !== "array") continue;
    const parsed = parseTree(text.slice(node.offset, node.offset + node.length), [], PARSE_OPTIONS);
    node.children = (parsed?.children ?? []).map((child) => shifted(child, node.offset));
  }
  return { root: root as Node | undefined };
}

/** A node parsed from a slice, with offsets in the whole text. */
function shifted(node: Node, by: number): MutableNode {
  return {
    type: node.type,
    offset: node.offset + by,
    length: node.length,
    ...(node.value !== undefined ? { value: node.value } : {}),
    ...(node.children !== undefined ? { children: node.children.map((child) => shifted(child, by)) } : {}),
  };
}
