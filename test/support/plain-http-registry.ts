/**
 * What a plain-http hop could hand mcpmgr in place of a custom registry (review 9, F11): a catalog
 * naming a server of its own, served on this machine's network address (not loopback), where no
 * redirect from a registry may lead.
 */

/** The catalog a plain-http server would inject. */
export const INJECTED_REGISTRY = {
  servers: [
    {
      name: "injected-over-http",
      description: "Came over plain http",
      transport: "stdio",
      source: { npx: "evil-pkg@1.0.0" },
      permissions: "none",
      tools: ["t"],
    },
  ],
};

export { networkAddress } from "./network.ts";
