/**
 * The shapes of what a protocol scheme or an image source may name, shared by the
 * registry schema and `run`'s positional argument. They matter beyond tidiness: these
 * strings end up in generated Dockerfiles and in package-manager command lines, so
 * nothing outside these shapes (spaces, quotes, newlines, shell syntax) gets that far.
 */

/** npm: name or @scope/name; a version, tag or range (`1.2.3`, `latest`, `^1.2`, `>=1.2`). */
export const npmSpecPattern = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(?:@[A-Za-z0-9._+~^<>=-]+)?$/;
/** PyPI: name, optional [extras], optional @version or ==version (both understood by uvx). */
export const pypiSpecPattern =
  /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9,._-]+\])?(?:(?:@|==)[A-Za-z0-9.+!_-]+)?$/;
/** Go: a module package path with a dot in its first element, optional @version. */
export const goSpecPattern = /^[a-z0-9.-]+\.[a-z]{2,}(?:\/[A-Za-z0-9._~-]+)+(?:@[A-Za-z0-9._+-]+)?$/;
/** [registry[:port]/]namespace/image[:tag][@sha256:digest]; no scheme, no spaces. */
export const imageRefPattern = /^[a-z0-9][A-Za-z0-9._\-/:]*(@sha256:[a-f0-9]{64})?$/;

export const specExamples = {
  npx: "@modelcontextprotocol/server-everything or name@1.2.3",
  uvx: "mcp-server-fetch or name==1.2.3",
  go: "github.com/org/server/cmd/server@v1.2.3",
  image: "ghcr.io/owner/image:1.0",
} as const;
