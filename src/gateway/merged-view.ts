/**
 * The merged view of a group's lists, rebuilt by the catalog (catalog.ts) when a workload's lists
 * change: tools and prompts under gateway names (names.ts), invalid names (and tools with invalid
 * x-mcp-header declarations) left out, and resources
 * and templates with their owners. Nothing is first-come: a resource URI or template that several
 * workloads offer is routed to none of them (`resourceRoute`), so which workload name sorts first
 * never decides who answers (or learns) a read.
 */
import { UriTemplate } from "@modelcontextprotocol/server";
import {
  assignNames,
  ownedKey,
  PROMPT_NAME,
  quoted,
  RESOURCE_URI,
  TOOL_NAME,
  type NameAssignment,
  type OwnedName,
  type PrefixMode,
} from "./names.ts";
import { scanToolHeaders } from "../proxy/tool-headers.ts";
import { excerpt } from "../printable.ts";

type Item = Readonly<Record<string, unknown>>;

export interface WorkloadLists {
  tools: Item[];
  prompts: Item[];
  resources: Item[];
  resourceTemplates: Item[];
}

export interface MergedView {
  readonly tools: readonly Item[];
  readonly prompts: readonly Item[];
  readonly resources: readonly Item[];
  readonly resourceTemplates: readonly Item[];
  readonly toolNames: NameAssignment;
  readonly promptNames: NameAssignment;
  /** Resource URI → the one workload that listed it (a URI several workloads list is in none). */
  readonly resourceOwner: ReadonlyMap<string, string>;
  /** Resource URI → the workloads that all list it: routed to none of them. */
  readonly contestedUris: ReadonlyMap<string, readonly string[]>;
  /** Templates with each workload offering them, for routing a URI no workload listed. */
  readonly templates: readonly { readonly workload: string; readonly template: UriTemplate; readonly text: string }[];
  /** Template text → the workloads that all offer it (only those offered by more than one). */
  readonly sharedTemplates: ReadonlyMap<string, readonly string[]>;
  /** Lines about URIs and templates several workloads offer, for the log. */
  readonly resourceCollisions: readonly string[];
  /** Lines about tool and prompt names that were left out as invalid, for the log. */
  readonly refusedNames: readonly string[];
  /**
   * The workloads behind the view, in name order: what each says it is, and its tools as it listed them
   * (the same array until it lists again), for search mode's per-workload index.
   */
  readonly workloads: readonly WorkloadTools[];
}

export interface WorkloadTools {
  readonly name: string;
  /** The server's description, else its title ("" when it gives none; never its instructions). */
  readonly summary: string;
  readonly tools: readonly Item[];
}

/**
 * The merged view of the workloads' lists (exported for tests that need a view without connections).
 * `shown`: how the log lines quote a URI or template (the catalog's: bare while a member holds secrets,
 * middleware/withheld-uri.ts); the view itself keeps them whole, for routing.
 */
export function merge(
  live: readonly { workload: string; lists: WorkloadLists; summary?: string }[],
  mode: PrefixMode,
  shown: (uri: string) => string = (uri) => uri,
): MergedView {
  const sorted = [...live].sort((a, b) => (a.workload < b.workload ? -1 : a.workload > b.workload ? 1 : 0));
  const refusedNames: string[] = [];
  // Tool names outside the specification's rule, and prompt names with characters that are not shown as
  // themselves, are left out (names.ts `PROMPT_NAME`).
  const valid = (field: "tools" | "prompts", name: string) =>
    field === "tools" ? TOOL_NAME.test(name) : PROMPT_NAME.test(name);
  // A tool whose x-mcp-header declarations break the 2026-07-28 rules is left out too: the gateway
  // reaches its workloads over Streamable HTTP, whose clients must reject such a tool (a 2026-07-28
  // workload would refuse every call to it that carries a value for the argument: no header can be built).
  const badHeaders = (field: "tools" | "prompts", item: Item): string | undefined => {
    if (field !== "tools") return undefined;
    const scan = scanToolHeaders(item.inputSchema);
    return scan.valid ? undefined : scan.reason;
  };
  const named = (field: "tools" | "prompts"): OwnedName[] =>
    sorted.flatMap(({ workload, lists }) =>
      lists[field]
        .filter((item) => typeof item.name === "string")
        .filter((item) => {
          const what = `${workload}'s ${field === "tools" ? "tool" : "prompt"} ${quoted(item.name as string)}`;
          if (!valid(field, item.name as string)) {
            refusedNames.push(`${what} is not a valid MCP name: left out`);
            return false;
          }
          const headers = badHeaders(field, item);
          if (headers === undefined) return true;
          refusedNames.push(`${what} has an invalid x-mcp-header (${quoted(headers)}): left out`);
          return false;
        })
        .map((item) => ({ workload, name: item.name as string })),
    );
  const toolNames = assignNames(named("tools"), mode);
  const promptNames = assignNames(named("prompts"), mode);
  const renamed = (field: "tools" | "prompts", names: NameAssignment): Item[] => {
    const out: Item[] = [];
    const seen = new Set<string>();
    for (const { workload, lists } of sorted) {
      for (const item of lists[field]) {
        const gatewayName = names.byOwnedName.get(ownedKey(workload, item.name as string));
        if (gatewayName === undefined || seen.has(gatewayName)) continue;
        seen.add(gatewayName);
        out.push(gatewayName === item.name ? item : { ...item, name: gatewayName });
      }
    }
    return out.sort((a, b) => ((a.name as string) < (b.name as string) ? -1 : 1));
  };
  // A URI or template is never first-come: one offered by several workloads belongs to none of them.
  const offeredBy = new Map<string, string[]>();
  const templateOffers = new Map<string, { item: Item; template: UriTemplate; workloads: string[] }>();
  // A URI or template with characters not shown as themselves is left out, as such a prompt name is.
  const shownUri = (workload: string, what: string, uri: string): boolean => {
    if (RESOURCE_URI.test(uri)) return true;
    refusedNames.push(
      `${workload}'s ${what} ${quoted(excerpt(shown(uri)))} holds characters not shown as themselves: left out`,
    );
    return false;
  };
  for (const { workload, lists } of sorted) {
    for (const resource of lists.resources) {
      if (typeof resource.uri !== "string" || !shownUri(workload, "resource", resource.uri)) continue;
      const workloads = offeredBy.get(resource.uri) ?? [];
      if (!workloads.includes(workload)) workloads.push(workload);
      offeredBy.set(resource.uri, workloads);
    }
    for (const item of lists.resourceTemplates) {
      if (typeof item.uriTemplate !== "string" || !shownUri(workload, "resource template", item.uriTemplate)) continue;
      const known = templateOffers.get(item.uriTemplate);
      if (known) {
        if (!known.workloads.includes(workload)) known.workloads.push(workload);
        continue;
      }
      try {
        templateOffers.set(item.uriTemplate, {
          item,
          template: new UriTemplate(item.uriTemplate),
          workloads: [workload],
        });
      } catch {
        // A template the SDK cannot parse cannot be routed either: leave it out.
      }
    }
  }
  const resourceOwner = new Map<string, string>();
  const contestedUris = new Map<string, readonly string[]>();
  const resources: Item[] = [];
  const resourceCollisions: string[] = [];
  const seenUri = new Set<string>();
  for (const { workload, lists } of sorted) {
    for (const resource of lists.resources) {
      if (typeof resource.uri !== "string" || seenUri.has(resource.uri) || !offeredBy.has(resource.uri)) continue;
      seenUri.add(resource.uri);
      const workloads = offeredBy.get(resource.uri) as string[];
      if (workloads.length > 1) {
        contestedUris.set(resource.uri, workloads);
        resourceCollisions.push(
          `resource ${JSON.stringify(shown(resource.uri))} is offered by ${workloads.join(", ")}: not listed, and reading it is refused`,
        );
        continue;
      }
      resourceOwner.set(resource.uri, workload);
      resources.push(resource);
    }
  }
  const resourceTemplates: Item[] = [];
  const templates: { workload: string; template: UriTemplate; text: string }[] = [];
  const sharedTemplates = new Map<string, readonly string[]>();
  for (const [text, { item, template, workloads }] of templateOffers) {
    // Listed once; a URI it matches is routed only while one workload's templates match it.
    resourceTemplates.push(item);
    for (const workload of workloads) templates.push({ workload, template, text });
    if (workloads.length > 1) {
      sharedTemplates.set(text, workloads);
      resourceCollisions.push(
        `resource template ${JSON.stringify(shown(text))} is offered by ${workloads.join(", ")}: listed once, and a URI it matches is not routed`,
      );
    }
  }
  return {
    tools: renamed("tools", toolNames),
    prompts: renamed("prompts", promptNames),
    resources,
    resourceTemplates,
    toolNames,
    promptNames,
    resourceOwner,
    contestedUris,
    templates,
    sharedTemplates,
    resourceCollisions,
    refusedNames,
    workloads: sorted.map(({ workload, lists, summary }) => ({
      name: workload,
      summary: summary ?? "",
      tools: lists.tools,
    })),
  };
}

/** Whether two lists are the same, item for item (a changed list is announced, an unchanged one is not). */
export function sameItems(a: readonly Item[], b: readonly Item[]): boolean {
  if (a.length !== b.length) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Where a resource URI goes: one workload, or the workloads that all claim it (then nowhere). */
export type ResourceRoute = { readonly workload: string } | { readonly claimedBy: readonly string[] } | undefined;

/**
 * The workload a resource URI belongs to: the one that listed it, else the one whose templates match it.
 * A URI several workloads listed, or one that templates of several workloads match, is claimed by all of
 * them and routed to none: which sorts first must not decide who answers (or learns) a read.
 */
export function resourceRoute(view: MergedView, uri: string): ResourceRoute {
  const listed = view.resourceOwner.get(uri);
  if (listed !== undefined) return { workload: listed };
  const matching = new Set<string>();
  for (const { workload, template } of view.templates) if (template.match(uri) !== null) matching.add(workload);
  // A URI several workloads list is refused even when only one workload's templates match it.
  const contested = view.contestedUris.get(uri);
  if (contested !== undefined) return { claimedBy: contested };
  if (matching.size === 1) return { workload: [...matching][0] as string };
  if (matching.size > 1) return { claimedBy: [...matching].sort() };
  return undefined;
}
