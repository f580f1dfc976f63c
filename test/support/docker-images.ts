/**
 * Base images for the container-runtime tests, built locally from host files.
 *
 * CI machines (and this one) cannot pull from Docker Hub, so instead of `FROM node` or
 * `FROM golang` the tests `docker import` a tar of a static busybox plus the host's own
 * node/npm or Go toolchain and the shared libraries they load. Change what goes into an
 * image => bump its tag, so a machine never reuses an image with the old contents.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export const NODE_BASE_IMAGE = "mcpmgr-test/node-base:2"; // busybox + node + npm + CA certs
export const GO_BASE_IMAGE = "mcpmgr-test/go-base:2"; // busybox + Go toolchain + CA certs

const GOROOT = "/usr/lib/go-1.19";
const CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
// Node ignores the system CA bundle unless told; networks that intercept TLS (this one
// does) put their CA there, and on others it only holds the public CAs node has anyway.
const CA_ENV = [`NODE_EXTRA_CA_CERTS=${CA_BUNDLE}`, `SSL_CERT_FILE=${CA_BUNDLE}`];
const APPLETS = [
  "sh",
  "ls",
  "cat",
  "mkdir",
  "chown",
  "chmod",
  "rm",
  "cp",
  "mv",
  "ln",
  "env",
  "id",
  "echo",
  "sleep",
  "wget",
  "nc",
  "grep",
  "sed",
  "tar",
  "gzip",
  "find",
  "adduser",
  "addgroup",
  "true",
  "false",
  "test",
  "[",
  "head",
  "tail",
  "wc",
  "touch",
  "printf",
  "which",
  "ping",
  "hostname",
  "kill",
  "ps",
];

interface ImageSpec {
  tag: string;
  /** Host executables to copy in at the same path, with every library `ldd` names. */
  binaries: string[];
  /** Host trees (relative to /) archived as they are, symlinks kept. */
  hostTrees: string[];
  /** Extra symlinks: path in the image => target. */
  links: Record<string, string>;
  env: string[];
}

const SPECS: ImageSpec[] = [
  {
    tag: NODE_BASE_IMAGE,
    binaries: ["/usr/bin/node"],
    hostTrees: ["usr/lib/node_modules/npm"],
    links: {
      "/usr/bin/npm": "../lib/node_modules/npm/bin/npm-cli.js",
      "/usr/bin/npx": "../lib/node_modules/npm/bin/npx-cli.js",
    },
    env: ["PATH=/usr/local/bin:/usr/bin:/bin", ...CA_ENV],
  },
  {
    tag: GO_BASE_IMAGE,
    // Debian's `go` is dynamically linked (cgo for os/user and net); the compile/link tools are static.
    binaries: [`${GOROOT}/bin/go`],
    // Debian's GOROOT links api/, misc/, src/, test/ and pkg/include into /usr/share/go-1.19.
    hostTrees: [GOROOT.slice(1), "usr/share/go-1.19"].filter((tree) => existsSync(`/${tree}`)),
    links: { "/usr/bin/go": `${GOROOT}/bin/go` },
    env: [
      `PATH=${GOROOT}/bin:/usr/local/bin:/usr/bin:/bin`,
      `GOROOT=${GOROOT}`,
      "CGO_ENABLED=0", // no C compiler in the image
      "GOFLAGS=-mod=mod",
      "GOTOOLCHAIN=local", // never download another toolchain (no-op on 1.19)
      ...CA_ENV,
    ],
  },
];

async function run(cmd: string[], stdin?: ReadableStream<Uint8Array>): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(cmd, { stdin: stdin ?? "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, out: out + err };
}

/** Whether a Docker engine answers (the tests that need one skip otherwise). */
export async function dockerAvailable(): Promise<boolean> {
  try {
    return (await run(["docker", "info", "--format", "{{.ServerVersion}}"])).code === 0;
  } catch {
    return false; // no docker CLI at all
  }
}

async function imageExists(tag: string): Promise<boolean> {
  return (await run(["docker", "image", "inspect", "--format", "{{.Id}}", tag])).code === 0;
}

/** Absolute library paths `ldd` names for a binary, the dynamic loader included. */
async function libraries(binary: string): Promise<string[]> {
  const { code, out } = await run(["ldd", binary]);
  if (code !== 0) throw new Error(`ldd ${binary} failed: ${out}`);
  return [...out.matchAll(/(\/\S+) \(0x[0-9a-f]+\)/g)].map((m) => m[1] as string);
}

/** The small, synthesized part of the root filesystem, in a temp dir. */
async function stage(spec: ImageSpec): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), "mcpmgr-image-"));
  chmodSync(root, 0o755); // the archive's "./" entry becomes the image's / (mkdtemp makes it 0700)
  const put = (path: string, text: string) => writeFileSync(join(root, path), text, { mode: 0o644 });
  const link = (path: string, target: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    symlinkSync(target, join(root, path));
  };
  for (const dir of ["bin", "etc/ssl/certs", "home", "root", "tmp", "usr/bin", "usr/lib", "usr/local/bin"]) {
    mkdirSync(join(root, dir), { recursive: true, mode: 0o755 });
  }
  chmodSync(join(root, "tmp"), 0o1777);
  chmodSync(join(root, "root"), 0o700);
  if ((await libraries("/bin/busybox").catch(() => [])).length > 0) {
    throw new Error("/bin/busybox is dynamically linked: install busybox-static");
  }
  copyFileSync("/bin/busybox", join(root, "bin/busybox"));
  for (const applet of APPLETS) link(`/bin/${applet}`, "busybox");
  link("/usr/bin/env", "/bin/busybox"); // for `#!/usr/bin/env node` (npm, npx)
  copyFileSync(CA_BUNDLE, join(root, CA_BUNDLE));
  put("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
  put("etc/group", "root:x:0:\nnogroup:x:65534:\n");
  put("etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n");
  // Binaries and libraries are copied (symlinks followed) to the exact paths ldd reports, so
  // the host's merged-/usr symlinks (/lib -> usr/lib) need not be reproduced.
  for (const binary of spec.binaries) {
    // A binary inside a host tree is archived with it (a second copy would be a duplicate path).
    const inTree = spec.hostTrees.some((tree) => binary.startsWith(`/${tree}/`));
    for (const file of [...(inTree ? [] : [binary]), ...(await libraries(binary))]) {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      copyFileSync(file, join(root, file));
      chmodSync(join(root, file), 0o755);
    }
  }
  for (const [path, target] of Object.entries(spec.links)) link(path, target);
  return root;
}

/** Builds one image; false when another process tagged its own build first. */
async function build(spec: ImageSpec): Promise<boolean> {
  const root = await stage(spec);
  // A unique temporary tag, renamed at the end: several test processes may build at once,
  // and none of them must ever see a half-imported image under the real tag.
  const temp = `${spec.tag}-build-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    const tar = Bun.spawn(
      ["tar", "-cf", "-", "--owner=0", "--group=0", "--numeric-owner", "-C", root, ".", "-C", "/", ...spec.hostTrees],
      { stdout: "pipe", stderr: "pipe" },
    );
    const changes = spec.env.flatMap((env) => ["--change", `ENV ${env}`]);
    const [imported, tarCode, tarErr] = await Promise.all([
      run(["docker", "import", ...changes, "-", temp], tar.stdout),
      tar.exited,
      new Response(tar.stderr).text(),
    ]);
    if (imported.code !== 0) throw new Error(`docker import ${spec.tag} failed: ${imported.out}`);
    if (tarCode !== 0) throw new Error(`tar for ${spec.tag} failed: ${tarErr}`);
    // When another process finished first, keep its image (tests may already use it) and
    // let the rmi below delete ours instead of leaving it behind untagged.
    if (await imageExists(spec.tag)) return false;
    const tagged = await run(["docker", "tag", temp, spec.tag]);
    if (tagged.code !== 0) throw new Error(`docker tag ${spec.tag} failed: ${tagged.out}`);
    return true;
  } finally {
    await run(["docker", "rmi", temp]); // drops the temporary name; deletes the image only if untagged
    rmSync(root, { recursive: true, force: true });
  }
}

let pending: Promise<string[]> | undefined;

/**
 * Builds whichever test images are missing and resolves to the tags it built. Idempotent;
 * calls within one process share one build, calls from other processes race harmlessly.
 */
export function ensureTestImages(): Promise<string[]> {
  pending ??= (async () => {
    const missing: ImageSpec[] = [];
    for (const spec of SPECS) if (!(await imageExists(spec.tag))) missing.push(spec);
    const built = await Promise.all(missing.map(build));
    return missing.filter((_, i) => built[i]).map((spec) => spec.tag);
  })();
  pending.catch(() => (pending = undefined)); // let a later call retry after a failure
  return pending;
}
