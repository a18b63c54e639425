// The code runner on the rating form: each code block of a response gets Run, Edit (a
// scratch copy), Stop and, after a run, "Attach to rating". Python runs in Pyodide and
// JavaScript in a plain worker, each in a Web Worker the server gives a policy that keeps
// it off the network (src/runner/); nothing of either is fetched until the rater first
// presses Run. Every run gets a fresh worker, ended when the run ends, and the worker
// reports on a MessagePort handed over with the block, before any of its code runs: what
// the block itself posts reaches nobody, so it cannot forge a result for itself or for
// another block, or switch a runner off. Runs and attachments go into the form's hidden
// `evidence` input, in the orientation the rater is shown, and the draft autosave sends
// them; only the statuses the server knows ever go there. A run of an edited scratch copy
// is the rater's, not the response's: it never sets the block's result, and attached it
// is marked `edited`.
(() => {
  "use strict";

  const LANGUAGES = {
    python: "python", py: "python", python3: "python", pycon: "python",
    javascript: "javascript", js: "javascript", node: "javascript", mjs: "javascript",
  };
  const NAMES = { python: "Python", javascript: "JavaScript" };
  const WORKERS = { python: "/runner/python-worker.js", javascript: "/runner/js-worker.js" };
  // The server refuses evidence past these (SPEC: issue 15's contract); the page keeps to
  // them so a rater never meets that refusal.
  const MAX_CHARS = 20_000;
  const MAX_ATTACHMENTS = 8;
  const TRUNCATED = "… (output truncated)";
  // Shown output stops here, whatever the run prints (the worker stops sending too).
  const MAX_SHOWN = 200_000;
  const DEFAULT_LIMIT_MS = 10_000;
  const STATUS_WORDS = { passed: "passed", failed: "failed", timed_out: "timed out", stopped: "stopped" };
  // How a worker may say its block ended; the page itself ends one at the time limit or on
  // Stop. Anything else means the worker is not one of ours: the run is not recorded.
  const WORKER_ENDINGS = new Set(["passed", "failed"]);
  const known = (status) => Object.hasOwn(STATUS_WORDS, status);

  const responses = [...document.querySelectorAll(".response")].filter((r) => r.querySelector(".rendered"));
  if (responses.length === 0) return;
  const evidenceInput = document.getElementById("evidence");
  const runs = new Map(); // "a:1" -> {side, block, language, status}, the latest run of a block
  let attachments = [];
  const origins = new WeakMap(); // attachment -> the run it was made from (this page's runs)
  const blocks = new Map(); // "a:1" -> the block's runner
  let active = null; // the run under way, if any: one at a time on the page
  let pythonMissing = false;

  const key = (side, block) => `${side}:${block}`;
  const chars = (text) => [...text].length; // the server counts characters, not UTF-16 units
  const limitMs = () => Number(document.body.dataset.runnerTimeLimitMs) || DEFAULT_LIMIT_MS;
  const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const el = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props);
    node.append(...children);
    return node;
  };

  function readEvidence() {
    if (!evidenceInput || evidenceInput.value.trim() === "") return;
    let saved;
    try {
      saved = JSON.parse(evidenceInput.value);
    } catch {
      return;
    }
    // A draft is the server's, which refuses unknown statuses; kept to them all the same,
    // so that nothing read back can make a save fail.
    for (const run of Array.isArray(saved.runs) ? saved.runs : []) {
      if (run && typeof run.side === "string" && Number.isInteger(run.block) && known(run.status)) {
        runs.set(key(run.side, run.block), run);
      }
    }
    attachments = (Array.isArray(saved.attachments) ? saved.attachments : [])
      .filter((a) => a && typeof a.side === "string" && known(a.status));
  }

  function writeEvidence() {
    if (!evidenceInput) return;
    const listed = [...runs.values()].sort((x, y) => x.side.localeCompare(y.side) || x.block - y.block);
    evidenceInput.value = listed.length === 0 && attachments.length === 0
      ? ""
      : JSON.stringify({ runs: listed, attachments });
    evidenceInput.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // "Ran 3 blocks: 2 passed, 1 failed." for one side, where the rubric's question asks for
  // it (the form marks the place) or else under the response's heading.
  function showTally(side) {
    const mine = [...runs.values()].filter((r) => r.side === side);
    const counts = Object.keys(STATUS_WORDS)
      .map((status) => [status, mine.filter((r) => r.status === status).length])
      .filter(([, n]) => n > 0)
      .map(([status, n]) => `${n} ${STATUS_WORDS[status]}`);
    const text = mine.length === 0 ? "" : `Ran ${mine.length} block${mine.length === 1 ? "" : "s"}: ${counts.join(", ")}.`;
    const single = responses.length === 1;
    const slots = [...document.querySelectorAll(`[data-code-runs="${side}"]`)];
    if (single) slots.push(...document.querySelectorAll('[data-code-runs=""]'));
    if (slots.length === 0) {
      const response = responses[side === "b" ? 1 : 0];
      let own = response && response.querySelector(".runner-tally");
      if (!own && response) {
        own = el("p", { className: "runner-tally" });
        own.setAttribute("aria-live", "polite");
        response.querySelector("h2").after(own);
      }
      if (own) slots.push(own);
    }
    for (const slot of slots) {
      slot.textContent = text;
      slot.hidden = text === "";
    }
  }

  // Output the page keeps of a run: at most MAX_CHARS characters, cut with a marker.
  function capped(text) {
    const points = [...text];
    if (points.length <= MAX_CHARS) return text;
    return points.slice(0, MAX_CHARS - chars(TRUNCATED)).join("") + TRUNCATED;
  }

  function describe(result) {
    const word = STATUS_WORDS[result.status] ?? "unknown";
    const parts = [word[0].toUpperCase() + word.slice(1)];
    if (result.edited) parts.unshift("Edited copy");
    if (result.exit_code !== null && result.exit_code !== undefined) parts.push(`exit code ${result.exit_code}`);
    if (result.status === "timed_out") parts.push(`the ${seconds(limitMs())} limit was reached and the run was stopped`);
    else if (typeof result.duration_ms === "number") parts.push(`${result.duration_ms} ms`);
    return parts.join(" · ");
  }

  // Whether Python code is an interactive session (`>>> ` examples with their output)
  // rather than a script: its first line that is not blank starts with the prompt.
  const isSession = (code) => /^\s*>>>( |$)/.test(code.split("\n").find((line) => line.trim() !== "") ?? "");

  /** The runner of one code block: its toolbar, scratch copy, output and attachments. */
  function makeBlock(response, side, index, code) {
    const label = response.getAttribute("aria-label") || `Response ${side.toUpperCase()}`;
    const requested = (code.dataset.lang || "").trim().toLowerCase();
    const language = LANGUAGES[requested] ?? null;
    const source = code.querySelector(".src code");
    const original = source ? source.textContent : "";
    const block = { side, index, label, language, original, result: null, attached: null };

    const bar = el("div", { className: "runner-bar" });
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", `Code block ${index} of ${label}`);
    const run = el("button", { type: "button", className: "runner-run", textContent: "Run" });
    const edit = el("button", { type: "button", className: "runner-edit secondary", textContent: "Edit" });
    edit.setAttribute("aria-expanded", "false");
    const stop = el("button", { type: "button", className: "runner-stop", textContent: "Stop", hidden: true });
    const attach = el("button", { type: "button", className: "runner-attach secondary", textContent: "Attach to rating", hidden: true });
    bar.append(run, edit, stop, attach);

    const scratch = el("textarea", { className: "runner-code", spellcheck: false, rows: 8 });
    scratch.setAttribute("autocomplete", "off");
    const scratchLabel = el("label", { className: "runner-scratch", hidden: true },
      el("span", { textContent: "Scratch copy: edits run here; the response above is unchanged. " }), scratch);

    const status = el("p", { className: "runner-status" });
    const stdout = el("pre", { className: "runner-stdout", tabIndex: 0, hidden: true });
    stdout.setAttribute("aria-label", "Output");
    const stderr = el("pre", { className: "runner-stderr", tabIndex: 0, hidden: true });
    stderr.setAttribute("aria-label", "Errors");
    const output = el("div", { className: "runner-output", hidden: true }, status, stdout, stderr);
    output.setAttribute("aria-live", "polite");
    const note = el("p", { className: "runner-note", hidden: true });
    note.setAttribute("role", "status");
    const attachedList = el("div", { className: "runner-attached" });

    const box = el("div", { className: "runner" }, bar, scratchLabel, output, note, attachedList);
    box.dataset.side = side;
    box.dataset.block = String(index);
    box.dataset.language = language ?? requested;
    (code.closest(".code-box") || code).after(box);
    Object.assign(block, { box, run, edit, stop, attach, scratch, scratchLabel, output, status, stdout, stderr, note, attachedList });

    if (language === null) {
      cannotRun(block, requested === ""
        ? "No runner: this block names no language (verdict runs Python and JavaScript in your browser)"
        : `No runner for ${requested.length > 24 ? `${requested.slice(0, 24)}…` : requested}: verdict runs Python and JavaScript in your browser`);
      edit.hidden = true;
    } else {
      // A Python session (its first line is a `>>>` prompt) runs as doctests: each
      // example's output is checked against the one shown (the worker does the same test).
      if (language === "python" && isSession(original)) {
        run.textContent = "Run doctests";
        run.setAttribute("aria-label", `Run doctests: code block ${index} of ${label}`);
      } else {
        run.setAttribute("aria-label", `Run ${NAMES[language]} code block ${index} of ${label}`);
      }
      run.addEventListener("click", () => start(block));
    }
    edit.addEventListener("click", () => toggleEdit(block));
    stop.addEventListener("click", () => active && active.block === block && active.finish({ status: "stopped" }));
    attach.addEventListener("click", () => attachRun(block));
    scratch.addEventListener("keydown", (event) => {
      // Ctrl+Enter runs the scratch copy, as in an editor; it must not reach the form's
      // shortcut, which would submit the rating.
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        event.stopPropagation();
        start(block);
      }
    });
    return block;
  }

  // A control that cannot run stays focusable, with the reason as its text and name.
  function cannotRun(block, reason) {
    block.run.textContent = reason;
    block.run.removeAttribute("aria-label");
    block.run.setAttribute("aria-disabled", "true");
    block.run.classList.add("runner-none");
  }

  function toggleEdit(block) {
    const editing = block.scratchLabel.hidden;
    if (editing) block.scratch.value = block.original;
    block.scratchLabel.hidden = !editing;
    block.edit.textContent = editing ? "Reset" : "Edit";
    block.edit.setAttribute("aria-expanded", String(editing));
    if (editing) block.scratch.focus();
  }

  function say(block, text) {
    block.note.textContent = text;
    block.note.hidden = text === "";
  }

  // A fresh worker per run: nothing a block leaves behind (a replaced handler, a changed
  // builtin, a timer) reaches the next run.
  function workerFor(language) {
    return language === "python"
      ? new Worker(WORKERS.python, { type: "module" })
      : new Worker(WORKERS.javascript);
  }

  function start(block) {
    if (block.run.getAttribute("aria-disabled") === "true") return;
    if (active) {
      say(block, active.block === block ? "" : "Another code block is running: stop it or wait for it first.");
      return;
    }
    if (block.language === "python" && pythonMissing) return;
    say(block, "");
    const code = block.scratchLabel.hidden ? block.original : block.scratch.value;
    // The rater's changed copy: its result is theirs, never the response's.
    const edited = code !== block.original;
    const shown = { stdout: [], stderr: [], size: 0, cut: false };
    const kept = { stdout: "", stderr: "" };
    block.stdout.textContent = "";
    block.stderr.textContent = "";
    block.stdout.hidden = true;
    block.stderr.hidden = true;
    block.output.hidden = false;
    block.output.setAttribute("aria-busy", "true");
    block.attach.hidden = true;
    block.status.dataset.status = "running";
    block.status.textContent = block.language === "python"
      ? "Loading Python… (the time limit starts once it is ready)"
      : "Starting…";
    const hadFocus = document.activeElement === block.run;
    block.stop.hidden = false;
    block.run.disabled = true;
    if (hadFocus) block.stop.focus();

    let worker = null;
    let channel = null;
    let began = null;
    let timer = null;
    let frame = null;
    const flush = () => {
      frame = null;
      for (const stream of ["stdout", "stderr"]) {
        if (shown[stream].length === 0) continue;
        block[stream].append(shown[stream].join(""));
        shown[stream] = [];
        block[stream].hidden = false;
      }
    };
    const append = (stream, text) => {
      if (kept[stream].length < MAX_CHARS * 2) kept[stream] += text;
      if (shown.cut) return;
      if (shown.size + text.length > MAX_SHOWN) {
        text = `${text.slice(0, MAX_SHOWN - shown.size)}${TRUNCATED}`;
        shown.cut = true;
      }
      shown.size += text.length;
      shown[stream].push(text);
      frame ??= requestAnimationFrame(flush);
    };
    active = { block, finish: finishWith };

    function finishWith(outcome) {
      if (active && active.block !== block) return;
      active = null;
      clearTimeout(timer);
      // However it ended, its worker goes: code that posted "done" and kept going stops
      // here, and nothing it sends later is heard.
      if (channel) {
        channel.port1.onmessage = null;
        channel.port1.close();
      }
      if (worker) {
        worker.onerror = null;
        worker.terminate();
      }
      if (outcome.error) append("stderr", `${outcome.error}\n`);
      if (frame !== null) cancelAnimationFrame(frame);
      flush();
      block.stop.hidden = true;
      block.run.disabled = false;
      if (document.activeElement === block.stop || document.activeElement === document.body) block.run.focus();
      block.output.setAttribute("aria-busy", "false");
      if (outcome.notRun) return;
      if (!known(outcome.status)) {
        // Not a status the page knows (the worker is not one of ours): nothing is recorded.
        block.status.dataset.status = "broken";
        block.status.textContent = "The runner gave no result this page knows; nothing was recorded. Run it again.";
        return;
      }
      const result = {
        side: block.side,
        block: block.index,
        language: block.language,
        code,
        stdout: kept.stdout,
        stderr: kept.stderr,
        status: outcome.status,
        exit_code: outcome.exit_code ?? null,
        duration_ms: began === null ? 0 : Math.round(performance.now() - began),
      };
      if (edited) result.edited = true;
      block.result = result;
      block.status.dataset.status = result.status;
      block.status.textContent = describe(result);
      if (!shown.size) {
        block.stdout.textContent = "(no output)";
        block.stdout.hidden = false;
      }
      // Only a run of the response's own code is the block's result.
      if (!edited) runs.set(key(block.side, block.index), { side: block.side, block: block.index, language: block.language, status: result.status });
      block.attach.hidden = false;
      block.attach.textContent = "Attach to rating";
      block.attach.removeAttribute("aria-disabled");
      if (!edited) {
        writeEvidence();
        showTally(block.side);
      }
    }

    try {
      worker = workerFor(block.language);
      channel = new MessageChannel();
    } catch (error) {
      block.status.dataset.status = "broken";
      block.status.textContent = `The ${NAMES[block.language]} runner could not start: ${error}`;
      finishWith({ notRun: true });
      return;
    }
    // The worker's own global channel is the block's to post on: never listened to.
    channel.port1.onmessage = ({ data }) => {
      if (!active || active.block !== block || data === null || typeof data !== "object") return;
      switch (data.type) {
        case "loading":
          block.status.textContent = "Loading Python… (the time limit starts once it is ready)";
          break;
        case "ready":
          if (began !== null) break;
          began = performance.now();
          block.status.textContent = `Running… (stops after ${seconds(limitMs())})`;
          timer = setTimeout(() => finishWith({ status: "timed_out" }), limitMs());
          break;
        case "stdout":
        case "stderr":
          append(data.type, String(data.text));
          break;
        case "truncated":
          append("stderr", `${TRUNCATED}\n`);
          shown.cut = true;
          break;
        case "broken":
          // The runtime itself failed (not the block): nothing is recorded as run.
          block.status.dataset.status = "broken";
          block.status.textContent = String(data.message);
          finishWith({ notRun: true, broken: true });
          break;
        case "unavailable":
          if (block.language !== "python") break;
          pythonMissing = true;
          block.status.dataset.status = "unavailable";
          block.status.textContent = "The Python runner is not installed on this server (an admin installs it with scripts/vendor-pyodide). JavaScript blocks still run.";
          for (const other of blocks.values()) {
            if (other.language === "python") cannotRun(other, "Python runner not installed on this server");
          }
          finishWith({ notRun: true, broken: true });
          break;
        case "done":
          finishWith(WORKER_ENDINGS.has(data.status)
            ? { status: data.status, exit_code: Number.isSafeInteger(data.exit_code) ? data.exit_code : null }
            : { status: "unknown" });
          break;
        default:
          break;
      }
    };
    worker.onerror = (event) => {
      event.preventDefault();
      block.status.dataset.status = "broken";
      block.status.textContent = `The ${NAMES[block.language]} runner could not start${event.message ? `: ${event.message}` : ""}.`;
      finishWith({ notRun: true, broken: true });
    };
    worker.postMessage({ type: "run", code }, [channel.port2]);
  }

  function attachRun(block) {
    const result = block.result;
    if (!result || block.attached === result) return;
    if (chars(result.code) > MAX_CHARS) {
      say(block, `This code is ${chars(result.code).toLocaleString()} characters long; at most ${MAX_CHARS.toLocaleString()} can be attached. Shorten the scratch copy and run it again.`);
      return;
    }
    if (attachments.length >= MAX_ATTACHMENTS) {
      say(block, `At most ${MAX_ATTACHMENTS} runs can be attached to a rating: remove one first.`);
      return;
    }
    const attachment = { ...result, stdout: capped(result.stdout), stderr: capped(result.stderr) };
    origins.set(attachment, result);
    attachments.push(attachment);
    block.attached = result;
    block.attach.textContent = "Attached";
    block.attach.setAttribute("aria-disabled", "true");
    say(block, "This run's code and output are attached to your rating.");
    writeEvidence();
    showAttachments();
  }

  // Each attachment under its block, with what it holds and a way to remove it.
  function showAttachments() {
    for (const block of blocks.values()) block.attachedList.replaceChildren();
    attachments.forEach((attachment, position) => {
      const block = blocks.get(key(attachment.side, attachment.block));
      if (!block) return;
      const details = el("details", { className: "runner-attachment" },
        el("summary", { textContent: `Attached to your rating: ${describe(attachment)}` }));
      for (const [name, text] of [["Code", attachment.code], ["Output", attachment.stdout], ["Errors", attachment.stderr]]) {
        if (!text) continue;
        const pre = el("pre", { tabIndex: 0, textContent: text });
        pre.setAttribute("aria-label", name);
        details.append(el("p", { className: "runner-label", textContent: name }), pre);
      }
      const remove = el("button", { type: "button", className: "link runner-remove", textContent: "Remove attachment" });
      remove.setAttribute("aria-label", `Remove attachment of code block ${block.index} of ${block.label}`);
      remove.addEventListener("click", () => {
        attachments.splice(position, 1);
        if (block.attached && origins.get(attachment) === block.attached) {
          block.attached = null;
          block.attach.textContent = "Attach to rating";
          block.attach.removeAttribute("aria-disabled");
        }
        writeEvidence();
        showAttachments();
        (block.attach.hidden ? block.run : block.attach).focus();
      });
      block.attachedList.append(el("div", { className: "runner-attachment-row" }, details, remove));
    });
  }

  readEvidence();
  responses.forEach((response, i) => {
    const side = i === 0 ? "a" : "b";
    [...response.querySelectorAll(".rendered .code")].forEach((code, j) => {
      blocks.set(key(side, j + 1), makeBlock(response, side, j + 1, code));
    });
  });
  showAttachments();
  for (const side of responses.map((_, i) => (i === 0 ? "a" : "b"))) showTally(side);
})();
