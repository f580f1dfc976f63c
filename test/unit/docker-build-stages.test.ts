/**
 * The builder-stage images a build leaves untagged, read from the engine's own output (lines
 * as Docker's classic builder and Podman's compatible API print them), so they can be removed.
 */
import { expect, test } from "bun:test";
import { StageImages } from "../../src/runtime/docker/build-context.ts";

function stagesOf(output: string): string[] {
  const stages = new StageImages();
  for (const line of output.split("\n")) stages.see(line.trim());
  return stages.ids();
}

test("Docker: the last image of the builder stage, not the base images", () => {
  const output = `Step 1/17 : FROM mcpmgr-test/node-base:2 AS builder
 ---> c8e8026ed0e7
Step 2/17 : USER root
 ---> Running in 1d2c3b4a5f60
 ---> bb39636169e2
Step 5/17 : RUN ["npm","install","pkg"]
 ---> Running in 659b248588d8
 ---> 5b9e9c881460
Step 6/17 : RUN ["node","/app/mcpmgr-resolve-bin.cjs"]
 ---> fe6d9c996d9d
Step 7/17 : FROM mcpmgr-test/node-base:2
 ---> c8e8026ed0e7
Step 8/17 : USER root
 ---> 825db2f213da
Successfully built 825db2f213da`;
  expect(stagesOf(output)).toEqual(["fe6d9c996d9d"]);
});

test("Podman: stages numbered [S/T], steps restarting at 1, no ID after a FROM", () => {
  const output = `[1/2] STEP 1/2: FROM scratch AS b
[1/2] STEP 2/2: COPY a /a
--> bed40f27912
[2/2] STEP 1/2: FROM scratch
[2/2] STEP 2/2: COPY --from=b /a /b
[2/2] COMMIT walk6-pb
--> c6e1d312f86
Successfully tagged localhost/walk6-pb:latest`;
  expect(stagesOf(output)).toEqual(["bed40f27912"]);
});

test("a single-stage build has none, and a stage that only names its base gives no base away", () => {
  expect(stagesOf("Step 1/2 : FROM scratch\n ---> 1111111111aa\nStep 2/2 : COPY a /a\n ---> 2222222222bb")).toEqual([]);
  expect(stagesOf("Step 1/2 : FROM base AS b\n ---> 1111111111aa\nStep 2/2 : FROM base\n ---> 1111111111aa")).toEqual(
    [],
  );
});

test("after a failed build: the last image it made too, never a base", () => {
  const stages = new StageImages();
  for (const line of [
    "Step 1/20 : FROM base AS builder",
    "---> c8e8026ed0e7",
    "Step 2/20 : USER root",
    "---> 4ad16074b776",
  ])
    stages.see(line);
  expect(stages.unfinished()).toEqual(["4ad16074b776"]);
  const none = new StageImages();
  for (const line of ["Step 1/2 : FROM base", "---> c8e8026ed0e7", "Step 2/2 : RUN false"]) none.see(line);
  expect(none.unfinished()).toEqual([]);
});
