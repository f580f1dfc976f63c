/**
 * `--allowed-hosts`: the host names, besides the ones every listener answers to, that clients
 * may use to reach mcpmgr's endpoint (middleware/host-names.ts decides). A browser page whose
 * DNS name was rebound to this machine sends its own name as `Host`, so only names listed on
 * purpose pass. There is no wildcard that turns the check off: `*` or `all` is refused, and a
 * leading dot (`.example.com`) allows a whole domain.
 */
import * as v from "valibot";
import { ipVersion } from "./ip-address.ts";
import { commaList } from "./values.ts";

/** "Example.COM." → "example.com", "[::1]" → "::1": the one spelling names are compared in. */
export function normalizeHostName(name: string): string {
  const lower = name.toLowerCase();
  const bare = lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
  return bare.endsWith(".") ? bare.slice(0, -1) : bare;
}

const dnsName = /^(?=.{1,253}$)(?:(?!-)[a-z0-9_-]{1,63}(?<!-)\.)*(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** Why an entry cannot be one, or undefined when it can. */
function problemOf(entry: string): string | undefined {
  if (entry === "*" || entry === "all")
    return `${JSON.stringify(entry)} would answer to any name, which is what a DNS-rebinding page sends; list the names instead`;
  if (entry.includes("*")) return `${JSON.stringify(entry)}: write a domain and its subdomains as .example.com`;
  if (entry.includes("/")) return `${JSON.stringify(entry)}: give a host name, not a URL`;
  const name = normalizeHostName(entry.startsWith(".") ? entry.slice(1) : entry);
  if (ipVersion(name) !== 0)
    return entry.startsWith(".") ? `${JSON.stringify(entry)}: an IP address has no subdomains` : undefined;
  if (name.includes(":")) return `${JSON.stringify(entry)}: give the name without a port (every port is the same host)`;
  return dnsName.test(name) ? undefined : `${JSON.stringify(entry)} is not a host name`;
}

/** The names of one `--allowed-hosts` value ("a.example, .corp.example"), normalized; bad entries refused. */
export const allowedHostList = v.pipe(
  commaList,
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    for (const entry of dataset.value) {
      const problem = problemOf(entry.toLowerCase());
      if (problem !== undefined) return void addIssue({ message: problem });
    }
  }),
  v.transform((entries) =>
    entries.map((entry) =>
      entry.startsWith(".") ? `.${normalizeHostName(entry.slice(1))}` : normalizeHostName(entry),
    ),
  ),
);
