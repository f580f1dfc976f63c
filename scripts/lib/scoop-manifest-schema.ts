/**
 * The constraints of scoop's app manifest schema (schema.json in the ScoopInstaller/Scoop
 * repository, JSON Schema draft-07) for the fields mcpmgr's manifest uses, written as a
 * valibot schema: this machine cannot download scoop's file, and scoop itself does not run
 * here. Every object is strict, as scoop's are (additionalProperties: false), so a field
 * outside this subset is an error rather than something scoop might reject later.
 */
import * as v from "valibot";

/** JSON Schema's "format": "uri": an absolute URI. */
const uri = v.pipe(
  v.string(),
  v.check((text) => URL.canParse(text), "must be an absolute URI"),
);

/** "format": "regex". scoop substitutes $sha256-style placeholders before using it; they parse as-is too. */
const regex = v.pipe(
  v.string(),
  v.check((text) => {
    try {
      new RegExp(text);
      return true;
    } catch {
      return false;
    }
  }, "must be a regular expression"),
);

/** definitions.hashPattern */
const hash = v.pipe(
  v.string(),
  v.regex(
    /^([a-fA-F0-9]{64}|(sha1|sha256|sha512|md5):([a-fA-F0-9]{32}|[a-fA-F0-9]{40}|[a-fA-F0-9]{64}|[a-fA-F0-9]{128}))$/,
    "must be a SHA-256 in hex (or algorithm:hex)",
  ),
);

/** definitions.uriOrArrayOfUris (the download itself: no $ placeholders). */
const downloadUrl = v.pipe(uri, v.regex(/^[^$]*$/, "must not contain $ (placeholders belong in autoupdate)"));

const stringOrStrings = v.union([v.string(), v.pipe(v.array(v.string()), v.minLength(1))]);

/** definitions.hashExtraction (the fields we use). */
const hashExtraction = v.strictObject({
  url: v.optional(
    v.union([uri, v.pipe(v.string(), v.regex(/^.*(\$url|\$baseurl).*$/, "must be a URI or use $url/$baseurl"))]),
  ),
  regex: v.optional(regex),
});

export const scoopManifestSchema = v.strictObject({
  version: v.pipe(v.string(), v.regex(/^[\w\-.+_]+$/, "must match ^[\\w\\-.+_]+$")),
  description: v.optional(v.string()),
  homepage: v.optional(uri),
  license: v.optional(v.union([v.string(), v.strictObject({ identifier: v.string(), url: v.optional(uri) })])),
  architecture: v.optional(
    v.strictObject({
      "64bit": v.optional(
        v.strictObject({
          url: v.union([downloadUrl, v.pipe(v.array(downloadUrl), v.minLength(1))]),
          hash: v.union([hash, v.pipe(v.array(hash), v.minLength(1))]),
          bin: v.optional(stringOrStrings),
        }),
      ),
    }),
  ),
  bin: v.optional(stringOrStrings),
  checkver: v.optional(
    v.union([
      regex,
      v.strictObject({
        github: v.optional(uri),
        url: v.optional(uri),
        regex: v.optional(regex),
      }),
    ]),
  ),
  autoupdate: v.optional(
    v.strictObject({
      architecture: v.optional(
        v.strictObject({
          "64bit": v.optional(
            v.strictObject({
              url: v.optional(uri),
              hash: v.optional(hashExtraction),
            }),
          ),
        }),
      ),
    }),
  ),
});

export type ScoopManifest = v.InferOutput<typeof scoopManifestSchema>;

/** The manifest, or an error naming the first field scoop's schema would reject. */
export function validateScoopManifest(manifest: unknown): ScoopManifest {
  const result = v.safeParse(scoopManifestSchema, manifest);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = issue?.path?.map((p) => String(p.key)).join(".") || "(root)";
  throw new Error(`scoop manifest: ${path}: ${issue?.message ?? "invalid"}`);
}
