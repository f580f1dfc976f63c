/** Container, network and image build options (`run`). */
import { booleanOption, repeatableOption, stringOption } from "../option-spec.ts";
import { nonEmpty, oneOf } from "../values.ts";

export const containerOptions = {
  network: stringOption({
    description: "Network mode of the container (Docker, Podman): host, or the name of a network",
    valueHint: "mode",
    // What container-placement.ts (httpIsolated) and networkModeFor choose without it: "bridge" alone hid most
    // cases, and an HTTP server under a profile that allows no network is isolated on Podman too, not given none.
    defaultText:
      "a stdio server: none when the permission profile allows no network, else the profile's network mode, else bridge; an sse/streamable-http server: an internal network of its own when the profile allows no network, on Docker also when neither the profile nor -p chooses one, else as a stdio server",
    schema: nonEmpty,
  }),
  "isolate-network": booleanOption({
    description: "Let the server reach only the hosts and ports its permission profile allows",
    default: false,
  }),
  "allow-docker-gateway": booleanOption({
    description: "With --isolate-network, allow the container runtime's host-gateway addresses (blocked by default)",
    default: false,
  }),
  "permission-profile": stringOption({
    description: "Permission profile: none, network, or a JSON file",
    valueHint: "none|network|path",
    defaultText: "the registry entry's profile, else network",
    schema: nonEmpty,
  }),
  "allow-registry-mount": repeatableOption({
    description:
      "Let the registry entry's permission profile mount PATH although it is a host path refused by default (engine socket, system directory, home directory, mcpmgr's state); repeatable",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "image-verification": stringOption({
    description:
      "Image verification (the image must be pinned by a digest its content matches): enabled refuses others, warn warns, disabled skips",
    valueHint: "warn|enabled|disabled",
    default: "warn",
    schema: oneOf(["warn", "enabled", "disabled"] as const),
  }),
  "insecure-allow-unsandboxed": booleanOption({
    description:
      "Run a local server without isolation when its permission profile cannot be enforced here (no bubblewrap)",
    default: false,
  }),
  "ca-cert": stringOption({
    description: "CA certificate (PEM) trusted inside protocol-scheme image builds",
    valueHint: "path",
    schema: nonEmpty,
  }),
  "runtime-image": stringOption({
    description: "Base image for protocol-scheme builds (npx://, uvx://, go://)",
    valueHint: "image",
    schema: nonEmpty,
  }),
  "runtime-add-package": repeatableOption({
    description: "Extra OS package installed in protocol-scheme images (repeatable)",
    valueHint: "package",
    schema: nonEmpty,
  }),
} as const;
