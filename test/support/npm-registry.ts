/**
 * A local npm registry serving packed tarballs (`npm pack` output), so an install test
 * can run `npm install mcpmgr` or `bunx mcpmgr` the way users do, optional dependencies
 * resolved by name and version and filtered by os/cpu, without publishing anything.
 * It speaks the read side of the registry protocol: GET /<name> answers the packument
 * (every version's package.json plus dist.tarball and dist.integrity), GET the tarball.
 * Names it does not hold answer 404, as the public registry does. Dist-tags: `latest` is the
 * last tarball of a name unless `distTags` says otherwise; `npm dist-tag add` (PUT
 * /-/package/NAME/dist-tags/TAG) changes them, and `distTags()` reads them back.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";

export interface LocalRegistry {
  readonly url: string;
  /** Every request's path, in order (what the client asked for). */
  readonly requests: readonly string[];
  /** A name's dist-tags now. */
  distTags(name: string): Record<string, string>;
  stop(): Promise<void>;
}

interface Published {
  readonly manifest: Record<string, unknown> & { name: string; version: string };
  readonly tarball: Uint8Array;
  readonly file: string;
}

function manifestOf(tarball: string): Published["manifest"] {
  const tar = Bun.spawnSync(["tar", "-xzOf", tarball, "package/package.json"], { stdout: "pipe", stderr: "pipe" });
  if (!tar.success) throw new Error(`cannot read package.json from ${tarball}: ${tar.stderr.toString()}`);
  return JSON.parse(tar.stdout.toString());
}

export async function startLocalRegistry(
  tarballs: readonly string[],
  options: { readonly distTags?: Readonly<Record<string, Readonly<Record<string, string>>>> } = {},
): Promise<LocalRegistry> {
  const packages = new Map<string, Published[]>();
  for (const path of tarballs) {
    const manifest = manifestOf(path);
    const entry = { manifest, tarball: new Uint8Array(await readFile(path)), file: basename(path) };
    packages.set(manifest.name, [...(packages.get(manifest.name) ?? []), entry]);
  }
  const tags = new Map<string, Record<string, string>>();
  for (const [name, versions] of packages) {
    tags.set(name, { latest: versions.at(-1)?.manifest.version as string, ...options.distTags?.[name] });
  }
  const requests: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request): Promise<Response> {
      const url = new URL(request.url);
      const path = decodeURIComponent(url.pathname);
      requests.push(request.method === "GET" ? path : `${request.method} ${path}`);
      const distTag = /^\/-\/package\/(.+)\/dist-tags(?:\/([^/]+))?$/.exec(path);
      if (distTag) {
        const current = tags.get(distTag[1] as string);
        if (current === undefined) return Response.json({ error: "not found" }, { status: 404 });
        if (request.method === "PUT" && distTag[2] !== undefined) {
          current[distTag[2]] = (await request.json()) as string;
          return Response.json({ ok: true });
        }
        return Response.json(current);
      }
      const tarball = /^\/(.+)\/-\/([^/]+\.tgz)$/.exec(path);
      if (tarball) {
        const found = packages.get(tarball[1] as string)?.find((p) => p.file === tarball[2]);
        return found
          ? new Response(found.tarball, { headers: { "content-type": "application/octet-stream" } })
          : new Response("not found", { status: 404 });
      }
      const name = path.slice(1);
      const versions = packages.get(name);
      if (versions === undefined) return Response.json({ error: "not found" }, { status: 404 });
      const base = url.origin;
      const packument = {
        name,
        "dist-tags": tags.get(name),
        versions: Object.fromEntries(
          versions.map(({ manifest, tarball, file }) => [
            manifest.version,
            {
              ...manifest,
              _id: `${name}@${manifest.version}`,
              dist: {
                tarball: `${base}/${name}/-/${file}`,
                shasum: createHash("sha1").update(tarball).digest("hex"),
                integrity: `sha512-${createHash("sha512").update(tarball).digest("base64")}`,
              },
            },
          ]),
        ),
      };
      return Response.json(packument);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/`,
    requests,
    distTags: (name) => ({ ...tags.get(name) }),
    stop: () => server.stop(true),
  };
}
