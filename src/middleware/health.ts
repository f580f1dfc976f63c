/** GET /health answers from the proxy itself, without touching the upstream. */
import type { Middleware } from "../proxy/handler.ts";

export function healthEndpoint(describe: () => Record<string, unknown> = () => ({})): Middleware {
  return (next) => (req, ctx) => {
    if ((req.method === "GET" || req.method === "HEAD") && isHealthPath(req.url)) {
      return Response.json({ status: "ok", ...describe() }, { headers: { "cache-control": "no-store" } });
    }
    return next(req, ctx);
  };
}

function isHealthPath(url: string): boolean {
  const at = url.indexOf("/health", url.indexOf("//") + 2);
  if (at === -1) return false;
  const end = at + "/health".length;
  return url.indexOf("/", url.indexOf("//") + 2) === at && (end === url.length || url[end] === "?");
}
