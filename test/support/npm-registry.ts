/**
 * A local npm registry serving packed tarballs (`npm pack` output), so an install test
 * can run `npm install mcpmgr` or `bunx mcpmgr` the way users do, optional dependencies
 * resolved by name and version and filtered by os/cpu, without publishing anything.
 * It speaks the read side of the registry protocol: GET /<name> answers the packument
 * (every version's package.json plus dist.tarball and dist.integrity), GET the tarball.
 * Names it does not hold answer 404, as the public registry does.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";

export interface LocalRegistry {
  readonly url: string;
  /** Every request's path, in order (what the client asked for). */
  readonly requests: readonly string[];
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

export async function startLocalRegistry(tarballs: readonly string[]): Promise<LocalRegistry> {
  const packages = new Map<string, Published[]>();
  for (const path of tarballs) {
    const manifest = manifestOf(path);
    const entry = { manifest, tarball: new Uint8Array(await readFile(path)), file: basename(path) };
    packages.set(manifest.name, [...(packages.get(manifest.name) ?? []), entry]);
  }
  const requests: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request): Response {
      const url = new URL(request.url);
      const path = decodeURIComponent(url.pathname);
      requests.push(path);
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
        "dist-tags": { latest: versions.at(-1)?.manifest.version },
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
    stop: () => server.stop(true),
  };
}
