/**
 * `--thv-ca-bundle PATH`: extra CA certificates (PEM) trusted for every HTTPS request
 * mcpmgr makes on its own behalf (incoming OIDC discovery, JWKS and introspection; outgoing
 * OAuth discovery, registration, token, refresh and token-exchange requests). Read and
 * checked once here, so a wrong path fails before anything starts.
 */
import { FileTooLarge, readCappedFile } from "../bounded-file.ts";
import { McpmgrError } from "../errors.ts";

export function readCaBundle(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readCappedFile(path);
  } catch (err) {
    const why = err instanceof FileTooLarge ? err.message : "cannot read the file";
    throw new McpmgrError("INVALID_OPTION", `--thv-ca-bundle ${JSON.stringify(path)}: ${why}`, {
      hint: "give the path of a readable PEM file",
    });
  }
  if (!text.includes("-----BEGIN CERTIFICATE-----")) {
    throw new McpmgrError("INVALID_OPTION", `--thv-ca-bundle ${path}: no PEM certificate in the file`, {
      hint: "give a PEM bundle (-----BEGIN CERTIFICATE----- ...)",
    });
  }
  return text;
}
