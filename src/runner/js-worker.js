// The JavaScript runner: a Web Worker that runs one code block of a response and tells the
// page (static/runner.js) what it printed and how it ended. Served at
// /runner/js-worker.js with a Content-Security-Policy (src/runner/mod.rs) that allows
// `eval` and nothing else: no fetch, no import, no nested worker. The network globals are
// also removed before any code runs, so a block that reaches for them fails plainly; the
// policy, not this, is what holds.
// Everything below lives in one function, so a block's code sees none of it.
(() => {
  "use strict";

  const AsyncFunction = (async () => {}).constructor;

  /* drop-network-globals */ dropNetworkGlobals();

  /* worker-common */

  // Values print the way a rater expects from Node: strings as they are, the rest as JSON
  // where it can be, otherwise as the value says itself.
  function show(value) {
    if (typeof value === "string") return value;
    if (value instanceof Error) return value.stack || String(value);
    if (typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") return String(value);
    try {
      const json = JSON.stringify(value);
      return json === undefined ? String(value) : json;
    } catch {
      return String(value);
    }
  }
  const printer = (stream) => (...args) => write(stream, `${args.map(show).join(" ")}\n`);
  const runnerConsole = {
    log: printer("stdout"), info: printer("stdout"), debug: printer("stdout"),
    warn: printer("stderr"), error: printer("stderr"), trace: printer("stderr"),
  };
  Object.defineProperty(self, "console", { value: runnerConsole, writable: false, configurable: false });

  // A block ends when its code has returned and no timer it set is still due, as Node ends
  // a script; an error thrown anywhere, or a promise rejected with nobody to catch it,
  // fails it.
  let pending = 0;
  let failed = false;
  let returned = false;
  const realSetTimeout = self.setTimeout.bind(self);
  const realClearTimeout = self.clearTimeout.bind(self);
  const timers = new Set();
  self.setTimeout = (callback, delay, ...args) => {
    pending += 1;
    const id = realSetTimeout(() => {
      timers.delete(id);
      pending -= 1;
      try {
        if (typeof callback === "function") callback(...args);
      } finally {
        finishIfDone();
      }
    }, delay);
    timers.add(id);
    return id;
  };
  self.clearTimeout = (id) => {
    if (timers.delete(id)) pending -= 1;
    realClearTimeout(id);
    finishIfDone();
  };
  // An interval keeps the block going until it is cleared (or the time limit ends it).
  const realSetInterval = self.setInterval.bind(self);
  const realClearInterval = self.clearInterval.bind(self);
  const intervals = new Set();
  self.setInterval = (callback, delay, ...args) => {
    pending += 1;
    const id = realSetInterval(callback, delay, ...args);
    intervals.add(id);
    return id;
  };
  self.clearInterval = (id) => {
    if (intervals.delete(id)) pending -= 1;
    realClearInterval(id);
    finishIfDone();
  };

  function fail(error) {
    failed = true;
    write("stderr", `Uncaught ${show(error)}\n`);
  }
  // Capturing, and added before any code of the block: they run first, so a listener
  // of the block's own cannot stop them from seeing an error.
  self.addEventListener("error", (event) => {
    event.preventDefault();
    fail(event.error ?? event.message);
    finishIfDone();
  }, true);
  self.addEventListener("unhandledrejection", (event) => {
    event.preventDefault();
    fail(event.reason);
    finishIfDone();
  }, true);

  let done = false;
  function finishIfDone() {
    if (done || !returned || pending > 0) return;
    done = true;
    // Let a rejection of the last tick be seen before the verdict.
    realSetTimeout(() => post({ type: "done", status: failed ? "failed" : "passed", exit_code: failed ? 1 : 0 }), 0);
  }

  self.onmessage = async (event) => {
    if (event.data?.type !== "run" || !takePort(event)) return;
    self.onmessage = null; // one block per worker: the page makes a fresh one for the next
    post({ type: "ready" });
    try {
      await new AsyncFunction(String(event.data.code))();
    } catch (error) {
      fail(error);
    }
    returned = true;
    finishIfDone();
  };
})();
