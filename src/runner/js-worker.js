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

  // Messages between the block's own MessageChannel ports keep it going too, as a port
  // that listens keeps a Node script alive: a chain of any length is waited for, so an
  // error thrown at its end fails the block. A message counts while its receiving port
  // listens (`onmessage` set or `start()` called) and neither end is closed; one sent to a
  // port that never listens holds nothing, as in Node. The counting listener is the first
  // on each port, so it runs before the block's own; it hands back its count a task later,
  // after the block's handler has had its turn to send the next message. A port moved in
  // a message between the block's ports is followed to its new object; one moved any other
  // way stops being counted (and a message still on its way to it keeps the block going
  // until the time limit: never a pass that was not earned).
  const hops = (() => {
    const Port = self.MessagePort;
    const RealChannel = self.MessageChannel;
    const real = {
      post: Port.prototype.postMessage,
      start: Port.prototype.start,
      close: Port.prototype.close,
      listen: EventTarget.prototype.addEventListener,
      onmessage: Object.getOwnPropertyDescriptor(Port.prototype, "onmessage"),
    };
    const ports = new WeakMap(); // the block's port object -> its record
    let live = 0; // messages on their way to a listening, open port
    const count = (port) => (port.listening && !port.closed ? port.queued : 0);
    const change = (port, apply) => {
      live -= count(port);
      apply(port);
      live += count(port);
    };
    // The counting listeners, on a port object the block may use.
    function attach(object, port) {
      ports.set(object, port);
      const delivered = (event) => {
        // A port moved in this message arrives here as a new object: it keeps its record
        // (its peer, the messages on their way to it) and listens once the block says so.
        const moved = port.moving.shift() ?? [];
        (event.ports ?? []).forEach((arrived, index) => {
          if (moved[index]) attach(arrived, moved[index]);
        });
        realSetTimeout(() => {
          change(port, (p) => { p.queued -= 1; });
          finishIfDone();
        }, 0);
      };
      real.listen.call(object, "message", delivered);
      real.listen.call(object, "messageerror", delivered);
    }
    function track(object) {
      const port = { peer: null, listening: false, closed: false, queued: 0, moving: [] };
      attach(object, port);
      return port;
    }
    function listening(object) {
      const port = ports.get(object);
      if (port && !port.listening) change(port, (p) => { p.listening = true; });
    }
    class MessageChannel extends RealChannel {
      constructor() {
        super();
        const one = track(this.port1);
        const two = track(this.port2);
        one.peer = two;
        two.peer = one;
      }
    }
    Object.defineProperty(self, "MessageChannel", { value: MessageChannel, writable: true, configurable: true });
    Port.prototype.postMessage = function postMessage(message, options) {
      const port = ports.get(this);
      const transfer = [...(Array.isArray(options) ? options : options?.transfer ?? [])];
      const result = real.post.call(this, message, options);
      // Only a message the browser took is counted (a refused one threw above).
      if (port && !port.closed && !port.peer.closed) {
        // A port of the block's moved in the message listens no more until it arrives.
        const moved = transfer.filter((item) => item instanceof Port).map((item) => {
          const record = ports.get(item) ?? null;
          if (record) change(record, (p) => { p.listening = false; });
          return record;
        });
        port.peer.moving.push(moved);
        change(port.peer, (p) => { p.queued += 1; });
      }
      return result;
    };
    Port.prototype.start = function start() {
      listening(this);
      return real.start.call(this);
    };
    Port.prototype.close = function close() {
      const port = ports.get(this);
      if (port) {
        for (const end of [port, port.peer]) change(end, (p) => { p.closed = true; });
        finishIfDone();
      }
      return real.close.call(this);
    };
    Object.defineProperty(Port.prototype, "onmessage", {
      ...real.onmessage,
      set(handler) {
        real.onmessage.set.call(this, handler);
        if (handler !== null) listening(this);
      },
    });
    return { busy: () => live > 0 };
  })();

  // A task the block hands to the scheduler keeps it going until the task has run or was
  // aborted. The callback is wrapped rather than the returned promise watched, so a task
  // that throws still rejects a promise nobody handles, and fails the block.
  const scheduler = self.scheduler;
  if (scheduler && typeof scheduler.postTask === "function") {
    const realPostTask = scheduler.postTask.bind(scheduler);
    const hold = () => {
      let held = true;
      pending += 1;
      return () => {
        if (!held) return;
        held = false;
        pending -= 1;
        finishIfDone();
      };
    };
    scheduler.postTask = (callback, options) => {
      const release = hold();
      try {
        if (options?.signal instanceof AbortSignal) options.signal.addEventListener("abort", release);
        return realPostTask(function task(...args) {
          try {
            return callback.apply(this, args);
          } finally {
            release();
          }
        }, options);
      } catch (error) {
        release();
        throw error;
      }
    };
    if (typeof scheduler.yield === "function") {
      const realYield = scheduler.yield.bind(scheduler);
      scheduler.yield = (...args) => {
        const release = hold();
        const yielded = realYield(...args);
        yielded.then(release, release);
        return yielded;
      };
    }
  }

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

  // The verdict waits this long once the block is quiet: the browser tells of a promise
  // rejected with nobody to catch it in a task of its own, which a timer of 0 ms can
  // overtake (a scheduled task that throws is one); a few milliseconds let it arrive.
  const SETTLE_MS = 15;
  let done = false;
  let checking = false;
  const busy = () => !returned || pending > 0 || hops.busy();
  function finishIfDone() {
    if (done || checking || busy()) return;
    // Look again once settled: a handler that ran meanwhile may have started more.
    checking = true;
    realSetTimeout(() => {
      checking = false;
      if (done || busy()) return;
      done = true;
      post({ type: "done", status: failed ? "failed" : "passed", exit_code: failed ? 1 : 0 });
    }, SETTLE_MS);
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
