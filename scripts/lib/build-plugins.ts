/**
 * Bundling plugins that keep the build machine out of the executable.
 *
 * A CommonJS module's `__dirname`/`__filename` is inlined by Bun as the absolute path of the
 * file on the build machine (/home/runner/work/…/node_modules/dockerode/lib). That made two
 * builds of one commit in two folders differ (no one could reproduce a release binary), and
 * code that read a file beside itself worked on the build machine only: cedar-wasm read
 * `${__dirname}/cedar_wasm_bg.wasm`, so `--authz-config` failed with ENOENT on every other
 * machine. Here:
 *   - cedar-wasm's .wasm is embedded in the executable (Bun's file loader hands out its path);
 *   - every other module under node_modules gets `__dirname`/`__filename` as a path under
 *     BUILD_ROOT, the same on every build machine (what such code looks for was never in the
 *     executable: it now fails alike on the build machine, where tests can see it).
 */
import { relative } from "node:path";

/** The folder a build's node_modules paths appear under, whatever the checkout's path. */
export const BUILD_ROOT = "/mcpmgr-build";

// cedar_wasm.js's own line, a template literal in the source (`$` escaped here).
const cedarWasmPath = `const wasmPath = \`\${__dirname}/cedar_wasm_bg.wasm\`;`;

/** Source text of `path` with the checkout's absolute path replaced (see above). */
export function withoutCheckoutPath(text: string, path: string, root: string): string {
  let out = text;
  if (/[\\/]@cedar-policy[\\/]cedar-wasm[\\/]nodejs[\\/]cedar_wasm\.js$/.test(path)) {
    if (!out.includes(cedarWasmPath)) {
      throw new Error(`${path} no longer loads its .wasm as scripts/lib/build-plugins.ts expects: update it`);
    }
    out = out.replace(cedarWasmPath, 'const wasmPath = require("./cedar_wasm_bg.wasm");');
  }
  if (!/\b__(dirname|filename)\b/.test(out)) return out;
  const file = `${BUILD_ROOT}/${relative(root, path).split("\\").join("/")}`;
  const dir = file.slice(0, file.lastIndexOf("/"));
  // Declared by the module itself, Bun does not inline its own values for them; after the
  // directive prologue, so a "use strict" module stays strict.
  const prologue = /^(#![^\n]*\n)?((?:\s|\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)*(["'])use strict\3;?)?/.exec(out)?.[0] ?? "";
  const names = `var __dirname = ${JSON.stringify(dir)}, __filename = ${JSON.stringify(file)};`;
  return `${prologue}\n${names}\n${out.slice(prologue.length)}`;
}

export function checkoutPathFree(root: string): Bun.BunPlugin {
  return {
    name: "checkout-path-free",
    setup(builder) {
      builder.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, async ({ path }) => {
        const text = await Bun.file(path).text();
        if (!/\b__(dirname|filename)\b/.test(text)) return { contents: text, loader: "js" };
        return { contents: withoutCheckoutPath(text, path, root), loader: "js" };
      });
    },
  };
}
