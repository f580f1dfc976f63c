/**
 * A test certificate authority made with openssl, and a server certificate for 127.0.0.1
 * signed by it: HTTPS servers in tests (webhooks) that mcpmgr must trust through a CA bundle
 * option, as a real deployment's private CA would be trusted.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface TestCertificates {
  /** The CA certificate (what `ca_bundle_path` names). */
  readonly ca: string;
  /** The server's certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1), signed by the CA. */
  readonly cert: string;
  readonly key: string;
}

/** Writes ca.pem, server.pem and server.key (and their by-products) into `dir`, valid for one day. */
export async function makeTestCa(dir: string): Promise<TestCertificates> {
  const openssl = (...args: string[]) => {
    const result = Bun.spawnSync(["openssl", ...args], { cwd: dir, stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
  };
  const key = ["-newkey", "rsa:2048", "-nodes"];
  openssl("req", "-x509", ...key, "-days", "1", "-subj", "/CN=mcpmgr test CA", "-keyout", "ca.key", "-out", "ca.pem");
  openssl("req", ...key, "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr");
  await writeFile(join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1\n");
  openssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "1",
    "-extfile",
    "san.ext",
    "-out",
    "server.pem",
  );
  return { ca: join(dir, "ca.pem"), cert: join(dir, "server.pem"), key: join(dir, "server.key") };
}
