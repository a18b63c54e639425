// What both workers share, put in place of their worker-common marker line by the server
// (src/runner/mod.rs): taking the network globals away, the channel to the page, and
// writing capped output to it.
// BroadcastChannel goes with them: it reaches every other context of verdict's origin (the
// pages, another block's worker), and a block has no one there to talk to.
function dropNetworkGlobals() {
  for (const name of ["fetch", "XMLHttpRequest", "WebSocket", "WebSocketStream", "EventSource",
    "WebTransport", "importScripts", "caches", "BroadcastChannel"]) {
    // Deleted where the browser allows it (so Python's `from js import fetch` fails
    // plainly), otherwise shadowed by an undefined that cannot be changed back.
    try {
      delete self[name];
    } catch {
      // Not configurable: shadowed below.
    }
    if (!(name in self)) continue;
    try {
      Object.defineProperty(self, name, { value: undefined, writable: false, configurable: false });
    } catch {
      // Cannot be shadowed either: the policy still refuses it.
    }
  }
}

// Everything the worker tells the page goes through the MessagePort the page hands over
// with the run, before any code of the block runs; it is kept here, out of the block's
// reach. The block's own `postMessage` reaches the worker's global channel, which the
// page does not listen to. `send` calls the prototype's `postMessage` as it was when the
// worker started, so neither the block replacing it nor the JavaScript worker's own
// wrapper (which counts the block's messages) changes anything for it.
const portPostMessage = MessagePort.prototype.postMessage;
let send = null;
function post(message) {
  if (send !== null) send(message);
}
function takePort(event) {
  const port = event.ports?.[0];
  if (!port || send !== null) return false;
  send = (message) => portPostMessage.call(port, message);
  return true;
}

// Output is capped per run so that a block printing in a loop cannot flood the page before
// its time is up; the page says where it was cut.
const MAX_OUTPUT = 200_000;
let written = 0;
function write(stream, text) {
  if (written >= MAX_OUTPUT || text === "") return;
  const room = MAX_OUTPUT - written;
  written += Math.min(text.length, room);
  post({ type: stream, text: text.length > room ? text.slice(0, room) : text });
  if (written >= MAX_OUTPUT) post({ type: "truncated" });
}
