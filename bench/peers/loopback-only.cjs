// Preloaded into peers that cannot be told where to listen (`node --require
// bench/peers/loopback-only.cjs ...`): a listen() without a host binds 127.0.0.1
// instead of every interface, so the bench never exposes a server beyond loopback.
// supergateway's stdio→streamable-HTTP gateway calls `app.listen(port)`.
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (
    first &&
    typeof first === "object" &&
    first.path === undefined &&
    first.host === undefined &&
    !first._handle &&
    !first.fd
  ) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
