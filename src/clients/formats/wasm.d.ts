/** `import path from "x.wasm" with { type: "file" }`: Bun hands out a path (embedded in a compiled executable). */
declare module "*.wasm" {
  const path: string;
  export default path;
}
