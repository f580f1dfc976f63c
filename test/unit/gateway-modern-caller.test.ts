/**
 * The gateway's own part in a 2026-07-28 caller's exchange (src/gateway/modern-caller.ts): a member's
 * identity is taken out of its results (the gateway's SDK server puts its own), nothing else.
 */
import { expect, test } from "bun:test";
import { withoutMemberIdentity } from "../../src/gateway/modern-caller.ts";

const SERVER_INFO = "io.modelcontextprotocol/serverInfo";

test("a member's serverInfo leaves its result; its other _meta keys stay", () => {
  const result = {
    content: [{ type: "text", text: "hi" }],
    _meta: { [SERVER_INFO]: { name: "member", version: "1" }, "example.com/trace": "abc" },
  };
  expect(withoutMemberIdentity(result)).toEqual({
    content: [{ type: "text", text: "hi" }],
    _meta: { "example.com/trace": "abc" },
  });
});

test("a result whose only _meta key was the member's serverInfo has no _meta left", () => {
  expect(withoutMemberIdentity({ content: [], _meta: { [SERVER_INFO]: { name: "member", version: "1" } } })).toEqual({
    content: [],
  });
});

test("a result without the member's serverInfo is returned as it is", () => {
  const result = { content: [], _meta: { progressToken: 1 } };
  expect(withoutMemberIdentity(result)).toBe(result);
});
