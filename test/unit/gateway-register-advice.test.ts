/**
 * The advice that moves an AI client onto a gateway serving it with its group's policies: `--gateway`
 * alone only when the group's one running background gateway guards it (review33 "left open").
 */
import { expect, test } from "bun:test";
import { gatewayRegisterAdvice } from "../../src/state/gateway-guard.ts";

const register = "'mcpmgr client register cursor --group team --gateway'";

test("one guarding background gateway and no other: --gateway", () => {
  expect(gatewayRegisterAdvice("cursor", "team", { guarding: ["gw"], others: [] })).toBe(register);
});

test("beside other background gateways (one without policies, or a second guarding one): stop them first", () => {
  expect(gatewayRegisterAdvice("cursor", "team", { guarding: ["gw", "gw2"], others: ["gateway-team"] })).toBe(
    `stop the group's other background gateways ('mcpmgr stop gateway-team', 'mcpmgr stop gw2': a client gets one), then ${register}`,
  );
});

test("only a foreground gateway guards: run it in the background first, since a registration follows background gateways alone", () => {
  expect(gatewayRegisterAdvice("cursor", "team", { guarding: [], others: [] })).toBe(
    `run the gateway with policies in the background ('mcpmgr gateway team --detach' with its options; a foreground one gets no client entry), then ${register}`,
  );
  expect(gatewayRegisterAdvice("cursor", "team", { guarding: [], others: ["gateway-team"] })).toContain(
    "stop the group's other background gateways ('mcpmgr stop gateway-team': a client gets one), then",
  );
});
