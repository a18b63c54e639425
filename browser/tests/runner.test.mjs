// The code runner on the rating form, in Chromium, with the vendored Pyodide
// (scripts/vendor-pyodide): a Python block with a bug shows its traceback, an infinite
// loop ends at the time limit, Stop ends a run, JavaScript's console output shows, blocks
// that reach for the network are refused (as served, and with the workers' removal of
// the network globals taken out, so the policy alone is what refuses), an attached run
// survives a reload and reaches the lead's review and the export, a language without a
// runner says why, the page fetches nothing of the runner until Run is pressed, and axe
// finds nothing serious on the form with the runner's controls open.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const PYODIDE_DIR = process.env.VERDICT_PYODIDE_DIR
  ?? fileURLToPath(new URL("../../vendor/node_modules/pyodide", import.meta.url));
process.env.VERDICT_PYODIDE_DIR = PYODIDE_DIR; // the server started below inherits it
if (!existsSync(`${PYODIDE_DIR}/pyodide.asm.wasm`)) {
  throw new Error(`no Pyodide in ${PYODIDE_DIR}: run scripts/vendor-pyodide first`);
}

const env = suite(() => startVerdict([["admin", "admin"], ["lead", "lead"], ["rater", "rater"]]));
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
// Loading Pyodide the first time in a fresh browser profile takes seconds on this machine.
const LOADING = { timeout: 120_000 };

// A server on another port that counts every request and socket it gets: the blocks that
// try the network aim at it (and at verdict's API), and it must get nothing.
const probe = { hits: [] };
before(async () => {
  probe.server = createServer((request, response) => {
    probe.hits.push(request.url);
    response.setHeader("access-control-allow-origin", "*");
    response.end("reached");
  });
  probe.server.on("upgrade", (request, socket) => {
    probe.hits.push(`upgrade ${request.url}`);
    socket.destroy();
  });
  await new Promise((resolve) => probe.server.listen(0, "127.0.0.1", resolve));
  probe.base = `http://127.0.0.1:${probe.server.address().port}`;
});
after(() => probe.server?.close());

const PYTHON_BUG = 'print("hello")\nitems = [1, 2]\nprint(items[0] / (items[1] - 2))';
const PYTHON_LOOP = "while True:\n    pass";
const PYTHON_STDLIB = [
  "import collections, dataclasses, datetime, itertools, json, math, re, textwrap",
  "@dataclasses.dataclass",
  "class Point:",
  "    x: int",
  "    y: int",
  "counts = collections.Counter(re.findall(r\"\\w+\", \"a b a\"))",
  "print(json.dumps({\"counts\": counts, \"point\": dataclasses.asdict(Point(1, 2)), \"sqrt\": math.isqrt(17)}, sort_keys=True))",
].join("\n");
// Interactive sessions: run as doctests, each example's output checked.
const DOCTEST_PASSING = ">>> 1 + 1\n2\n>>> sorted({3, 1, 2})\n[1, 2, 3]\n>>> print('no output expected')\nno output expected";
const DOCTEST_FAILING = ">>> def double(n):\n...     return n * 3\n>>> double(2)\n4";
const JS_LOG = 'console.log("sum", [1, 2, 3].reduce((a, b) => a + b, 0), { ok: true });\nconsole.error("a warning");';
const JS_LOOP = "while (true) {}";

/** A Python block that tries the network four ways and says what happened to each. */
function pythonNetwork(base) {
  return [
    "import pyodide.http",
    "def attempt(what, go):",
    "    try:",
    "        go()",
    "        print('REACHED', what)",
    "    except BaseException as error:",
    "        print('refused', what, '-', type(error).__name__)",
    "def xhr(url):",
    "    from js import XMLHttpRequest",
    "    request = XMLHttpRequest.new()",
    "    request.open('GET', url, False)",
    "    request.send()",
    `attempt('open_url to another site', lambda: pyodide.http.open_url('${probe.base}/py-open-url'))`,
    `attempt('open_url to the verdict API', lambda: pyodide.http.open_url('${base}/api/v1/me?from=py-open-url'))`,
    `attempt('XMLHttpRequest to the verdict API', lambda: xhr('${base}/api/v1/me?from=py-xhr'))`,
    // A fetch the policy refuses still returns its promise: the probe and the browser's
    // own record of responses say whether it went anywhere.
    "try:",
    "    from js import fetch",
    `    fetch('${base}/api/v1/me?from=py-fetch')`,
    "    print('called fetch to the verdict API')",
    "except BaseException as error:",
    "    print('refused fetch to the verdict API -', type(error).__name__)",
  ].join("\n");
}

/** A JavaScript block that tries the network five ways and says what happened to each. */
function jsNetwork(base) {
  const host = probe.base.replace("http://", "");
  return `const attempts = {
  "fetch to another site": () => fetch("${probe.base}/js-fetch"),
  "fetch to the verdict API": () => fetch("${base}/api/v1/me?from=js-fetch"),
  "import from the verdict API": () => import("${base}/api/v1/me?from=js-import"),
  "XMLHttpRequest": () => new Promise((ok, no) => {
    const request = new XMLHttpRequest();
    request.onload = ok;
    request.onerror = () => no(new Error("network error"));
    request.open("GET", "${probe.base}/js-xhr");
    request.send();
  }),
  "WebSocket": () => new Promise((ok, no) => {
    const socket = new WebSocket("ws://${host}/js-ws");
    socket.onopen = ok;
    socket.onerror = () => no(new Error("socket error"));
  }),
};
for (const [what, attempt] of Object.entries(attempts)) {
  try {
    await attempt();
    console.log("REACHED", what);
  } catch (error) {
    console.log("refused", what, "-", error.name);
  }
}`;
}

const fence = (language, code) => `\`\`\`${language}\n${code}\n\`\`\``;

/** The task: Python blocks (two of them sessions, run as doctests) in A, JavaScript and a language without a runner in B. */
function task(base, id) {
  return {
    external_id: id,
    prompt: `Write a function.\n\n${fence("python", "print('a block in the prompt gets no Run button')")}`,
    response_a: [
      `A bug:\n\n${fence("python", PYTHON_BUG)}`,
      `A loop:\n\n${fence("py", PYTHON_LOOP)}`,
      `The network:\n\n${fence("python3", pythonNetwork(base))}`,
      `The standard library:\n\n${fence("python", PYTHON_STDLIB)}`,
      `A session:\n\n${fence("pycon", DOCTEST_PASSING)}`,
      `A session with a wrong answer:\n\n${fence("python", DOCTEST_FAILING)}`,
    ].join("\n\n"),
    response_b: [
      `Output:\n\n${fence("js", JS_LOG)}`,
      `A loop:\n\n${fence("javascript", JS_LOOP)}`,
      `The network:\n\n${fence("node", jsNetwork(base))}`,
      `Rust:\n\n${fence("rust", 'fn main() { println!("hi"); }')}`,
    ].join("\n\n"),
  };
}

const state = {};

/** A batch of two tasks on the server at `base`, shown as uploaded (A is A). */
async function makeBatch(base) {
  const admin = await watchedPage(env.browser);
  await login(admin, base, "admin");
  const csrf = await admin.getAttribute('input[name="csrf_token"]', "value");
  const body = [task(base, "run-1"), task(base, "run-2")].map((t) => JSON.stringify(t)).join("\n");
  const made = await admin.request.post(`${base}/api/v1/batches?name=runner&rubric=blackhat&randomize=false&raters_see_external_ids=true`, {
    headers: { "x-csrf-token": csrf, "content-type": "application/x-ndjson" },
    data: body,
  });
  assert.equal(made.status(), 201, await made.text());
  const { id } = await made.json();
  await admin.context().close();
  return id;
}

/** The rater's page on the form of their open task, recording every request it makes. */
async function formPage(options = {}) {
  const base = options.base ?? env.server.base;
  if (base === env.server.base) state.batch ??= await makeBatch(base);
  const page = options.context ? await options.context.newPage() : await watchedPage(env.browser);
  page.requests = [];
  page.responses = [];
  page.on("request", (request) => page.requests.push(request.url()));
  page.on("response", (response) => page.responses.push(response.url()));
  await page.setViewportSize({ width: 1400, height: 1000 });
  await login(page, base, "rater");
  await Promise.all([page.waitForNavigation(), page.click('form[action$="/next"] button')]);
  await page.waitForSelector(".runner");
  return page;
}

/** The runner of code block `index` (from 1) of response `side`. */
const runner = (page, side, index) => page.locator(`.runner[data-side="${side}"][data-block="${index}"]`);

/** Presses Run on a block and waits for its run to end; returns what the block shows. */
async function run(page, side, index, { wait = LOADING } = {}) {
  const block = runner(page, side, index);
  await block.locator(".runner-run").click();
  return finished(page, side, index, wait);
}

async function finished(page, side, index, wait = LOADING) {
  const block = runner(page, side, index);
  await page.waitForFunction(
    (el) => !["running", undefined].includes(el.querySelector(".runner-status").dataset.status),
    await block.elementHandle(),
    wait,
  );
  return block.evaluate((el) => ({
    status: el.querySelector(".runner-status").dataset.status,
    words: el.querySelector(".runner-status").textContent,
    stdout: el.querySelector(".runner-stdout").textContent,
    stderr: el.querySelector(".runner-stderr").textContent,
  }));
}

const evidence = async (page) => {
  const value = await page.inputValue("#evidence");
  return value === "" ? null : JSON.parse(value);
};

test("the page fetches nothing of the runner until Run is pressed; a language without a runner says why", async () => {
  const page = await formPage();
  state.page = page;
  await page.waitForLoadState("networkidle");
  assert.deepEqual(page.requests.filter((url) => url.includes("/runner/")), [], "no worker, no Pyodide on load");
  // Blocks of the responses have a runner, the prompt's do not.
  assert.equal(await page.locator(".prompt-card .runner").count(), 0);
  assert.equal(await page.locator(".response .runner").count(), 10);
  const rust = runner(page, "b", 4).locator(".runner-run");
  assert.equal(await rust.textContent(), "No runner for rust: verdict runs Python and JavaScript in your browser");
  assert.equal(await rust.getAttribute("aria-disabled"), "true");
  await rust.focus();
  assert.equal(await page.evaluate(() => document.activeElement.textContent), await rust.textContent(), "focusable");
  // form.js's Copy button still sits in each block's box, and still copies.
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
  const copy = page.locator(".response .code-box").first().locator("button.copy");
  await copy.click();
  // The label says "Copied" once the clipboard has taken the text (and "Copy" again
  // 1.5 s later): wait for it rather than read it straight after the click.
  await page.waitForFunction((button) => button.textContent === "Copied", await copy.elementHandle());
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), PYTHON_BUG);
  assert.deepEqual(await page.problems(), []);
});

test("a Python block with a bug runs and shows its traceback", async () => {
  const { page } = state;
  const block = runner(page, "a", 1);
  await block.locator(".runner-run").click();
  assert.match(await block.locator(".runner-status").textContent(), /Loading Python/);
  const shown = await finished(page, "a", 1);
  assert.equal(shown.status, "failed");
  assert.match(shown.words, /^Failed · exit code 1 · \d+ ms$/);
  assert.equal(shown.stdout, "hello\n");
  assert.match(shown.stderr, /^Traceback \(most recent call last\):\n {2}File "main\.py", line 3, in <module>\n/);
  assert.match(shown.stderr, /print\(items\[0\] \/ \(items\[1\] - 2\)\)/, "the line itself");
  assert.match(shown.stderr, /ZeroDivisionError: division by zero\n$/);
  assert.ok(page.requests.some((url) => url.endsWith("/pyodide.asm.wasm")), "Pyodide came from verdict itself");
  assert.ok(page.requests.every((url) => url.startsWith(env.server.base)), "and nothing from anywhere else");
  // A second block, in a fresh worker of its own: the standard library is there.
  const stdlib = await run(page, "a", 4);
  assert.equal(stdlib.status, "passed", stdlib.stderr);
  assert.equal(stdlib.stdout, '{"counts": {"a": 2, "b": 1}, "point": {"x": 1, "y": 2}, "sqrt": 4}\n');
  assert.deepEqual((await evidence(page)).runs, [
    { side: "a", block: 1, language: "python", status: "failed" },
    { side: "a", block: 4, language: "python", status: "passed" },
  ]);
  assert.equal(await page.locator('[data-code-runs="a"], .response .runner-tally').first().textContent(), "Ran 2 blocks: 1 passed, 1 failed.");
  assert.deepEqual(await page.problems(), []);
});

test("an infinite loop is stopped at the time limit, and Stop ends a run at once", async () => {
  const { page } = state;
  await page.evaluate(() => { document.body.dataset.runnerTimeLimitMs = "1500"; });
  const started = Date.now();
  const loop = await run(page, "a", 2);
  assert.equal(loop.status, "timed_out");
  assert.match(loop.words, /^Timed out · the 1\.5 s limit was reached and the run was stopped$/);
  assert.ok(Date.now() - started >= 1500, "not before the limit");
  // The next run gets a fresh Python (the stopped one is gone) and works.
  const again = await run(page, "a", 1);
  assert.equal(again.status, "failed");
  assert.match(again.stderr, /ZeroDivisionError/);

  await page.evaluate(() => { document.body.dataset.runnerTimeLimitMs = "60000"; });
  const block = runner(page, "b", 2);
  await block.locator(".runner-run").focus();
  await page.keyboard.press("Enter");
  await block.locator(".runner-stop").waitFor({ state: "visible" });
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Stop", "the keyboard is on Stop");
  await page.waitForFunction((el) => /Running/.test(el.textContent), await block.locator(".runner-status").elementHandle());
  await page.keyboard.press("Enter");
  const stopped = await finished(page, "b", 2);
  assert.equal(stopped.status, "stopped");
  assert.equal(await block.locator(".runner-stop").isVisible(), false);
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Run", "back on Run");
  assert.deepEqual(await page.problems(), []);
});

test("JavaScript's console output shows under its block, and an edited copy runs instead", async () => {
  const { page } = state;
  const shown = await run(page, "b", 1);
  assert.equal(shown.status, "passed");
  assert.match(shown.words, /^Passed · exit code 0 · \d+ ms$/);
  assert.equal(shown.stdout, 'sum 6 {"ok":true}\n');
  assert.equal(shown.stderr, "a warning\n");

  const block = runner(page, "b", 1);
  await block.locator(".runner-edit").click();
  const scratch = block.locator("textarea");
  assert.equal(await scratch.inputValue(), JS_LOG);
  await scratch.fill('throw new TypeError("edited")');
  // Ctrl+Enter in the scratch copy runs it; it does not submit the rating.
  const url = page.url();
  await scratch.press("Control+Enter");
  const edited = await finished(page, "b", 1);
  assert.equal(page.url(), url);
  assert.equal(edited.status, "failed");
  assert.match(edited.stderr, /^Uncaught TypeError: edited/);
  // A block ends once its timers have run, as a script under Node does.
  await scratch.fill('let n = 0;\nconst t = setInterval(() => { console.log("tick", ++n); if (n === 3) clearInterval(t); }, 10);\nsetTimeout(() => console.log("later"), 80);');
  await block.locator(".runner-run").click();
  const timers = await finished(page, "b", 1);
  assert.equal(timers.status, "passed");
  assert.equal(timers.stdout, "tick 1\ntick 2\ntick 3\nlater\n");
  const original = page.locator(".response").nth(1).locator(".code .src").first();
  assert.match(await original.textContent(), /console\.log\("sum"/, "the response is unchanged");
  await block.locator(".runner-edit").click(); // Reset: back to the original
  assert.equal(await block.locator(".runner-scratch").isVisible(), false);
  assert.equal((await run(page, "b", 1)).status, "passed");
  assert.deepEqual(await page.problems(), []);
});

// Each block ends as Node would end it: a chain of messages between the block's own ports
// is waited for however long it is, so what it prints and how it fails at the end is the
// block's result; a message to a port that never listens holds nothing.
const HOPS = {
  thrown: [
    "const { port1, port2 } = new MessageChannel();",
    "port1.onmessage = ({ data }) => {",
    "  if (data === 200) { console.log('hop', data); throw new Error('after 200 hops'); }",
    "  port2.postMessage(data + 1);",
    "};",
    "port2.postMessage(1);",
  ].join("\n"),
  rejected: [
    "const { port1, port2 } = new MessageChannel();",
    "port1.onmessage = ({ data }) => data === 300 ? Promise.reject(new Error('rejected at 300')) : port2.postMessage(data + 1);",
    "port2.postMessage(1);",
  ].join("\n"),
  clean: [
    "const { port1, port2 } = new MessageChannel();",
    "port1.addEventListener('message', ({ data }) => {",
    "  if (data === 1000) { console.log('done', data); port1.close(); return; }",
    "  port2.postMessage(data + 1);",
    "});",
    "port1.start();",
    "port2.postMessage(1);",
    "new MessageChannel().port1.postMessage('to a port that never listens');",
    "console.log('sent');",
  ].join("\n"),
  moved: [
    "const relay = new MessageChannel();",
    "relay.port1.onmessage = ({ data }) => relay.port1.postMessage(data + 1);",
    "const carrier = new MessageChannel();",
    "carrier.port1.onmessage = ({ ports: [moved] }) => {",
    "  moved.onmessage = ({ data }) => { if (data === 50) throw new Error('moved port, hop 50'); moved.postMessage(data); };",
    "  moved.postMessage(1);",
    "};",
    "carrier.port2.postMessage('take this', [relay.port2]);",
  ].join("\n"),
  scheduled: "scheduler.postTask(() => scheduler.postTask(() => { throw new Error('a scheduled task'); }, { delay: 50 }));",
};

test("a JavaScript block that fails after any number of message hops is recorded as failed, with its output", async () => {
  const { page } = state;
  const block = runner(page, "b", 1);
  await block.locator(".runner-edit").click();
  const scratch = block.locator("textarea");
  const attempt = async (code) => {
    await scratch.fill(code);
    await block.locator(".runner-run").click();
    return finished(page, "b", 1);
  };

  const thrown = await attempt(HOPS.thrown);
  assert.equal(thrown.status, "failed", thrown.words);
  assert.match(thrown.words, /Failed · exit code 1/);
  assert.equal(thrown.stdout, "hop 200\n");
  assert.match(thrown.stderr, /^Uncaught Error: after 200 hops/);

  const rejected = await attempt(HOPS.rejected);
  assert.equal(rejected.status, "failed", rejected.words);
  assert.match(rejected.stderr, /^Uncaught Error: rejected at 300/);

  const moved = await attempt(HOPS.moved);
  assert.equal(moved.status, "failed", moved.words);
  assert.match(moved.stderr, /^Uncaught Error: moved port, hop 50/);

  const scheduled = await attempt(HOPS.scheduled);
  assert.equal(scheduled.status, "failed", scheduled.words);
  assert.match(scheduled.stderr, /^Uncaught Error: a scheduled task/);

  // A long chain that ends well passes, and a message nobody listens for does not keep the
  // block going to its time limit.
  const clean = await attempt(HOPS.clean);
  assert.equal(clean.status, "passed", clean.words);
  assert.equal(clean.stdout, "sent\ndone 1000\n");

  // A block cannot reach other contexts of verdict's origin through a BroadcastChannel.
  const broadcast = await attempt("console.log(typeof BroadcastChannel)");
  assert.equal(broadcast.stdout, "undefined\n");

  await block.locator(".runner-edit").click(); // Reset: back to the original
  assert.deepEqual(await page.problems(), []);
});

test("blocks that try the network are refused and nothing reaches a server", async () => {
  const { page } = state;
  const responsesBefore = page.responses.length;
  const python = await run(page, "a", 3);
  assert.doesNotMatch(python.stdout, /REACHED/);
  assert.equal(python.stdout.match(/^refused /gm)?.length, 4, python.stdout + python.stderr);
  assert.match(python.stdout, /refused XMLHttpRequest to the verdict API - ImportError/, "the global is gone");
  assert.match(python.stdout, /refused fetch to the verdict API - (ImportError|TypeError)/, "fetch is gone too");
  const js = await run(page, "b", 3);
  assert.doesNotMatch(js.stdout, /REACHED/);
  assert.equal(js.stdout.match(/^refused /gm)?.length, 5, js.stdout + js.stderr);

  // The policy alone: the same workers with their removal of the network globals taken
  // out (their headers as served), so fetch and XMLHttpRequest are there to call.
  const context = await env.browser.newContext();
  for (const worker of ["python-worker.js", "js-worker.js"]) {
    await context.route(`**/runner/${worker}`, async (route) => {
      const response = await route.fetch();
      const source = await response.text();
      const stripped = source.replace("/* drop-network-globals */ dropNetworkGlobals();", "");
      assert.notEqual(stripped, source, `${worker} has the removal to take out`);
      await route.fulfill({ response, body: stripped, headers: response.headers() });
    });
  }
  const bare = await formPage({ context });
  const bareResponsesBefore = bare.responses.length;
  const policyPython = await run(bare, "a", 3);
  assert.doesNotMatch(policyPython.stdout, /REACHED/, policyPython.stdout);
  assert.match(policyPython.stdout, /refused open_url to another site - \w+/);
  assert.equal(policyPython.stdout.match(/^refused /gm)?.length, 3, policyPython.stdout);
  assert.match(policyPython.stdout, /called fetch to the verdict API/, "fetch was there to call");
  const policyJs = await run(bare, "b", 3);
  assert.doesNotMatch(policyJs.stdout, /REACHED/, policyJs.stdout);
  assert.equal(policyJs.stdout.match(/^refused /gm)?.length, 5, policyJs.stdout);
  assert.match(policyJs.stdout, /refused fetch to the verdict API - TypeError/, "fetch was there, and refused");
  await bare.waitForTimeout(500); // a fetch the policy let through would have landed by now

  assert.deepEqual(probe.hits, [], "the other site got nothing");
  const answered = [...page.responses.slice(responsesBefore), ...bare.responses.slice(bareResponsesBefore)]
    .filter((url) => url.includes("/api/") || url.startsWith(probe.base));
  assert.deepEqual(answered, [], "no request of a block was answered");
  await context.close();
});

test("an attached run survives a reload and reaches the lead's review and the export", async () => {
  const { page } = state;
  await run(page, "a", 1);
  await page.waitForTimeout(1500); // the run's own draft save goes first
  const savedBefore = await page.getAttribute("#save-status", "data-saved");
  const block = runner(page, "a", 1);
  await block.locator(".runner-attach").click();
  assert.equal(await block.locator(".runner-attach").textContent(), "Attached");
  const attached = (await evidence(page)).attachments;
  assert.equal(attached.length, 1);
  assert.deepEqual(
    { ...attached[0], duration_ms: 0 },
    { side: "a", block: 1, language: "python", code: PYTHON_BUG, stdout: "hello\n", stderr: attached[0].stderr,
      status: "failed", exit_code: 1, duration_ms: 0 },
  );
  assert.match(attached[0].stderr, /ZeroDivisionError: division by zero/);
  // The draft autosave sends it; a reload brings it back from the draft.
  await page.waitForFunction((before) => document.getElementById("save-status").dataset.saved !== before, savedBefore, { timeout: 15_000 });
  await page.reload();
  await page.waitForSelector(".runner");
  assert.deepEqual((await evidence(page)).attachments.map((a) => a.code), [PYTHON_BUG]);
  const summary = runner(page, "a", 1).locator(".runner-attachment summary");
  assert.match(await summary.textContent(), /^Attached to your rating: Failed · exit code 1/);
  assert.match(await page.locator('[data-code-runs="a"], .response .runner-tally').first().textContent(), /^Ran 4 blocks: /);

  // Submitted with the rating.
  for (const [name, value] of [["a.executability", "yes_partially"], ["b.executability", "yes_fully"],
    ["a.instruction_following", "no_issues"], ["b.instruction_following", "no_issues"],
    ["a.correctness", "major_issues"], ["b.correctness", "no_issues"], ["sxs", "6"]]) {
    await page.check(`input[name="${name}"][value="${value}"]`);
  }
  await page.fill('textarea[name="a.executability_explanation"]', "The first block raises ZeroDivisionError when run.");
  await page.fill('textarea[name="a.correctness_explanation"]', "It divides by zero for the example input.");
  await page.fill('textarea[name="sxs_explanation"]', "B runs and prints what is asked; A crashes.");
  const url = page.url();
  await page.click("#submit");
  // The rubric may ask once to look again at answers it warns about; sending again sends.
  await page.waitForFunction((first) => location.href !== first || document.querySelector("#error-summary.warning:not([hidden])"), url, { timeout: 15_000 });
  if (page.url() === url) await page.click("#submit");
  await page.waitForURL((next) => next.href !== url, { timeout: 15_000 });

  const list = await (await page.request.get(`${env.server.base}/api/v1/ratings?limit=100`)).json();
  const rating = list.items.find((item) => item.external_id === "run-1");
  assert.ok(rating, "the rating is stored");
  const lead = await watchedPage(env.browser);
  await login(lead, env.server.base, "lead");
  await lead.goto(`${env.server.base}/review/${rating.id}`);
  const shownToLead = await lead.locator("#evidence").textContent();
  assert.match(shownToLead, /print\(items\[0\] \/ \(items\[1\] - 2\)\)/, "the code");
  assert.match(shownToLead, /ZeroDivisionError: division by zero/, "the traceback");
  assert.match(shownToLead, /hello/, "the output");
  const exported = await lead.request.get(`${env.server.base}/api/v1/batches/${state.batch}/export?format=csv`);
  assert.equal(exported.status(), 200);
  const csv = await exported.text();
  assert.match(csv, /ZeroDivisionError: division by zero/);
  assert.match(csv, /a: ran 4 blocks: /);
  assert.deepEqual(await lead.problems(), []);
  assert.deepEqual(await page.problems(), []);
});

test("attachments keep to the server's caps: output cut with a marker, long code and a ninth run refused", async () => {
  const { page } = state; // now on the form of the next task
  await page.waitForSelector(".runner");
  const block = runner(page, "b", 1);
  await block.locator(".runner-edit").click();
  const scratch = block.locator("textarea");
  const attach = async () => {
    await block.locator(".runner-attach").click();
    return block.locator(".runner-note").textContent();
  };
  await scratch.fill('console.log("é".repeat(30000))');
  await block.locator(".runner-run").click();
  assert.equal((await finished(page, "b", 1)).status, "passed");
  assert.equal(await attach(), "This run's code and output are attached to your rating.");
  const [cut] = (await evidence(page)).attachments;
  assert.equal([...cut.stdout].length, 20_000, "20,000 characters (not UTF-16 units)");
  assert.ok(cut.stdout.endsWith("… (output truncated)"));

  await scratch.fill(`// ${"x".repeat(20_000)}`);
  await block.locator(".runner-run").click();
  await finished(page, "b", 1);
  assert.match(await attach(), /^This code is 20,003 characters long; at most 20,000 can be attached/);
  assert.equal((await evidence(page)).attachments.length, 1, "not attached");

  for (let i = 2; i <= 9; i++) {
    await scratch.fill(`console.log(${i})`);
    await block.locator(".runner-run").click();
    await finished(page, "b", 1);
    const said = await attach();
    if (i <= 8) assert.equal(said, "This run's code and output are attached to your rating.", `run ${i}`);
    else assert.equal(said, "At most 8 runs can be attached to a rating: remove one first.");
  }
  assert.equal((await evidence(page)).attachments.length, 8);
  // Removing one makes room, and the draft keeps what is left.
  await block.locator(".runner-remove").first().click();
  assert.equal((await evidence(page)).attachments.length, 7);
  assert.deepEqual(await page.problems(), []);
});

test("a Python session runs as doctests: each example's output is checked, and the button says so", async () => {
  const { page } = state; // on the form of the second task
  assert.equal(await runner(page, "a", 1).locator(".runner-run").textContent(), "Run", "a script is run as one");
  const button = runner(page, "a", 5).locator(".runner-run");
  assert.equal(await button.textContent(), "Run doctests");
  assert.equal(await button.getAttribute("aria-label"), "Run doctests: code block 5 of Response A");
  const passing = await run(page, "a", 5);
  assert.equal(passing.status, "passed", passing.stdout + passing.stderr);
  assert.equal(passing.stdout, "doctest: 3 of 3 examples passed\n");
  const failing = await run(page, "a", 6);
  assert.equal(failing.status, "failed");
  assert.match(failing.words, /^Failed · exit code 1/);
  assert.match(failing.stdout, /Failed example:\n {4}double\(2\)\nExpected:\n {4}4\nGot:\n {4}6\n/);
  assert.match(failing.stdout, /doctest: 1 of 2 examples passed\n$/, "the definition passes, the call does not");
  assert.equal(failing.stderr, "");
  // As a script the same text would be a syntax error: it is not run as one.
  assert.doesNotMatch(failing.stdout + failing.stderr, /SyntaxError/);
  assert.deepEqual(await page.problems(), []);
});

test("axe finds nothing serious on the form with the runner's controls in use", async () => {
  const context = await env.browser.newContext({ bypassCSP: true, viewport: { width: 1366, height: 900 } });
  const page = await formPage({ context });
  await run(page, "b", 1);
  await runner(page, "b", 1).locator(".runner-attach").click();
  await runner(page, "b", 1).locator(".runner-attachment summary").first().click();
  await runner(page, "a", 1).locator(".runner-edit").click();
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  assert.deepEqual(found, []);
  await context.close();
});

test("without Pyodide on the server, a Python block says the runner is not installed and JavaScript still runs", async () => {
  const installed = process.env.VERDICT_PYODIDE_DIR;
  process.env.VERDICT_PYODIDE_DIR = join(tmpdir(), "verdict-no-pyodide-here");
  const server = await startVerdict([["admin", "admin"], ["rater", "rater"]]);
  process.env.VERDICT_PYODIDE_DIR = installed;
  try {
    await makeBatch(server.base);
    const page = await formPage({ base: server.base });
    const python = await run(page, "a", 1);
    assert.equal(python.status, "unavailable");
    assert.match(python.words, /^The Python runner is not installed on this server/);
    for (const index of [1, 2, 3, 4]) {
      const button = runner(page, "a", index).locator(".runner-run");
      assert.equal(await button.textContent(), "Python runner not installed on this server");
      assert.equal(await button.getAttribute("aria-disabled"), "true");
    }
    assert.equal(await evidence(page), null, "nothing ran, nothing is recorded");
    assert.equal((await run(page, "b", 1)).status, "passed");
    assert.deepEqual(await page.problems(), []);
  } finally {
    await server.stop();
  }
});
