/**
 * Image verification without an engine (runtime/docker/images.ts): which references a pulled image
 * proves (a digest pin against its ID or RepoDigests), and what each --image-verification mode does
 * with one it cannot.
 */
import { describe, expect, test } from "bun:test";
import { applyVerification, type ImageFacts, verifyImage } from "../../src/runtime/docker/images.ts";
import { rejection } from "../support/errors.ts";

const attempt = async (fn: () => unknown) => fn();

describe("image verification", () => {
  const digest = `sha256:${"ab".repeat(32)}`;
  const other = `sha256:${"cd".repeat(32)}`;
  const image = (changes: Partial<ImageFacts> = {}): ImageFacts => ({
    id: other,
    repoTags: [],
    repoDigests: [],
    exposedPorts: [],
    user: "",
    entrypoint: [],
    cmd: [],
    os: "linux",
    architecture: "amd64",
    ...changes,
  });

  test("a tag-only reference is unverified", () => {
    expect(
      verifyImage("ghcr.io/org/srv:1", image({ id: digest, repoDigests: [`ghcr.io/org/srv@${digest}`] })).verified,
    ).toBe(false);
    expect(verifyImage("ghcr.io/org/srv", image()).verified).toBe(false);
    expect(verifyImage(`ghcr.io/org/srv@sha256:${"AB".repeat(32)}`, image({ id: digest })).verified).toBe(false);
  });

  test("a digest pin matching the image ID or a RepoDigest is verified", () => {
    expect(verifyImage(`ghcr.io/org/srv@${digest}`, image({ id: digest }))).toEqual({ verified: true });
    expect(
      verifyImage(
        `ghcr.io/org/srv@${digest}`,
        image({ repoDigests: [`ghcr.io/org/srv@${other}`, `ghcr.io/org/srv@${digest}`] }),
      ),
    ).toEqual({ verified: true });
  });

  test("a base image of a cached build that is gone locally: the digest pin is what is checked", () => {
    expect(verifyImage(`ghcr.io/org/base@${digest}`, undefined)).toEqual({ verified: true });
    expect(verifyImage("ghcr.io/org/base:1", undefined).verified).toBe(false);
  });

  test("a digest pin the local image does not have is unverified", () => {
    const result = verifyImage(`ghcr.io/org/srv@${digest}`, image({ repoDigests: [`ghcr.io/org/srv@${other}`] }));
    expect(result.verified).toBe(false);
  });

  describe("applyVerification", () => {
    const unverified = ["ghcr.io/org/srv:1", image()] as const;

    const warnings = (run: (warn: (text: string) => void) => void): string[] => {
      const seen: string[] = [];
      run((text) => seen.push(text));
      return seen;
    };

    test("disabled never throws or warns", () => {
      expect(warnings((warn) => applyVerification("disabled", ...unverified, warn))).toEqual([]);
    });

    test("warn reports an unverified image once and carries on", () => {
      const seen = warnings((warn) => applyVerification("warn", ...unverified, warn));
      expect(seen).toHaveLength(1);
      expect(seen[0]).toContain("ghcr.io/org/srv:1");
    });

    test("enabled refuses an unverified image with IMAGE_UNVERIFIED", async () => {
      const seen: string[] = [];
      await rejection(
        attempt(() => applyVerification("enabled", ...unverified, (text) => seen.push(text))),
        "IMAGE_UNVERIFIED",
      );
      expect(seen).toEqual([]);
    });

    test("a verified image passes silently in every mode", () => {
      for (const mode of ["enabled", "warn", "disabled"] as const) {
        expect(
          warnings((warn) => applyVerification(mode, `ghcr.io/org/srv@${digest}`, image({ id: digest }), warn)),
        ).toEqual([]);
      }
    });
  });
});
