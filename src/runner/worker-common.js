// What both workers share, put in place of their worker-common marker line by the server
// (src/runner/mod.rs): taking the network globals away, the channel to the page, and
// writing capped output to it.
function dropNetworkGlobals() {
  for (const name of ["fetch", "XMLHttpRequest", "WebSocket", "WebSocketStream", "EventSource",
    "WebTransport", "importScripts", "caches"]) {
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
// page does not listen to. `send` is bound to the port once, so replacing
// `MessagePort.prototype.postMessage` afterwards changes nothing for it.
let send = null;
function post(message) {
  if (send !== null) send(message);
}
function takePort(event) {
  const port = event.ports?.[0];
  if (!port || send !== null) return false;
  send = port.postMessage.bind(port);
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
