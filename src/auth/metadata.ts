/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for a proxy protected with OIDC, and the
 * RFC 6750 `WWW-Authenticate` challenge that points clients at it. MCP clients (2025-06-18
 * on) start their authorization from the `resource_metadata` URL in a 401.
 */
const METADATA_PATH = "/.well-known/oauth-protected-resource";

export interface ResourceMetadataInput {
  /** The protected resource's identifier: --resource-url, or the endpoint's public URL. */
  readonly resource: string;
  readonly issuer: string;
  readonly scopes: readonly string[];
}

export function protectedResourceMetadata(input: ResourceMetadataInput): Record<string, unknown> {
  return {
    resource: input.resource,
    authorization_servers: [input.issuer],
    scopes_supported: [...input.scopes],
    bearer_methods_supported: ["header"],
  };
}

/**
 * Where the document is served for a resource: the root form, and the path-suffixed form
 * RFC 9728 §3.1 derives from a resource with a path (`/.well-known/oauth-protected-resource/mcp`).
 */
export function metadataPaths(resourcePath: string): string[] {
  const path = resourcePath.replace(/\/$/, "");
  return path === "" ? [METADATA_PATH] : [METADATA_PATH, `${METADATA_PATH}${path}`];
}

/** The URL a challenge names: the path-suffixed form for the resource's own path. */
export function metadataUrl(resource: URL): string {
  const path = resource.pathname.replace(/\/$/, "");
  return `${resource.origin}${METADATA_PATH}${path}`;
}

function quoted(value: string): string {
  // RFC 9110 quoted-string: escape backslash and double quote; drop control characters.
  return `"${value.replace(/[\u0000-\u001f\u007f]/g, " ").replace(/["\\]/g, "\\$&")}"`;
}

export interface ChallengeInput {
  readonly resourceMetadata: string;
  readonly scopes: readonly string[];
  readonly error?: "invalid_token" | "insufficient_scope" | "invalid_request";
  readonly description?: string;
}

export function bearerChallenge(input: ChallengeInput): string {
  const params = [`resource_metadata=${quoted(input.resourceMetadata)}`];
  if (input.scopes.length > 0) params.push(`scope=${quoted(input.scopes.join(" "))}`);
  if (input.error) params.push(`error=${quoted(input.error)}`);
  if (input.description) params.push(`error_description=${quoted(input.description)}`);
  return `Bearer ${params.join(", ")}`;
}
