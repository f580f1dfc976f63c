/** scripts/lib/build-plugins.ts: what a node_modules module looks like after the build machine's path is taken out of it. */
import { expect, test } from "bun:test";
import { BUILD_ROOT, withoutCheckoutPath } from "../../scripts/lib/build-plugins.ts";

const root = "/home/someone/checkout";

test("__dirname and __filename become paths under BUILD_ROOT, after a 'use strict' directive", () => {
  const source = '// header\n"use strict";\nconst p = require("path").join(__dirname, "x.proto");\n';
  const out = withoutCheckoutPath(source, `${root}/node_modules/pkg/lib/a.js`, root);
  expect(out).toStartWith('// header\n"use strict";\n');
  expect(out).toContain(
    `var __dirname = "${BUILD_ROOT}/node_modules/pkg/lib", __filename = "${BUILD_ROOT}/node_modules/pkg/lib/a.js";`,
  );
  expect(out).not.toContain(root);
  expect(out).toEndWith(source.slice(source.indexOf('"use strict";') + '"use strict";'.length));
});

test("a module that names neither is left as it is", () => {
  const source = "module.exports = 1;\n";
  expect(withoutCheckoutPath(source, `${root}/node_modules/pkg/index.js`, root)).toBe(source);
});

test("cedar-wasm's .wasm is required (embedded by the file loader), and a changed cedar-wasm fails the build", () => {
  const path = `${root}/node_modules/@cedar-policy/cedar-wasm/nodejs/cedar_wasm.js`;
  const line = ["const wasmPath = `$", "{__dirname}/cedar_wasm_bg.wasm`;"].join("");
  const out = withoutCheckoutPath(`"use strict";\n${line}\n`, path, root);
  expect(out).toContain('const wasmPath = require("./cedar_wasm_bg.wasm");');
  expect(out).not.toContain(line);
  expect(() => withoutCheckoutPath("const wasmPath = somewhereElse;\n", path, root)).toThrow(/update it/);
});
