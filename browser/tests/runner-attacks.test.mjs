// What a response being rated can try through the code runner, in Chromium with the
// vendored Pyodide (issue 26, items 1-4): forge the result of another block's run, forge
// its own, switch the Python runner off or block the rater's saves with a status the
// server refuses, and pass a rater's edited scratch copy off as the response's result.
// Each attack is written as the response's own code; the page must record only what
// really ran, end every run's worker, and keep saving.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const PYODIDE_DIR = process.env.VERDICT_PYODIDE_DIR
  ?? fileURLToPath(new URL("../../vendor/node_modules/pyodide", import.meta.url));
process.env.VERDICT_PYODIDE_DIR = PYODIDE_DIR; // the server started below inherits it
if (!existsSync(`${PYODIDE_DIR}/pyodide.asm.wasm`)) {
  throw new Error(`no Pyodide in ${PYODIDE_DIR}: run scripts/vendor-pyodide first`);
}

// A rater of its own for each form, so that no draft of one test reaches another's page.
const RATERS = ["rater1", "rater2", "rater3", "rater4", "rater5"];
const env = suite(() => startVerdict([["admin", "admin"], ...RATERS.map((name) => [name, "rater"])]));
const LOADING = { timeout: 120_000 };

// Item 1: A's block takes over the worker's message handler, so that the next run sent to
// that worker (another block's) gets a made-up "passed" with made-up output.
const PYTHON_HIJACK = [
  "import js",
  "from pyodide.ffi import create_proxy",
  "def forge(event):",
  "    for message in ['{\"type\": \"ready\"}',",
  "                    '{\"type\": \"stdout\", \"text\": \"FORGED by A\\\\n\"}',",
  "                    '{\"type\": \"done\", \"status\": \"passed\", \"exit_code\": 0}']:",
  "        js.postMessage(js.JSON.parse(message))",
  "js.onmessage = create_proxy(forge)",
  "print('armed')",
].join("\n");
// B's honest block, which fails.
const PYTHON_HONEST = "def add(a, b):\n    return a - b\n\nassert add(2, 2) == 4";
// Item 2: a block that says it passed, then fails, or then never ends.
const JS_SAYS_PASSED_THEN_THROWS = 'postMessage({ type: "done", status: "passed", exit_code: 0 });\nthrow new Error("really failed");';
const JS_SAYS_PASSED_THEN_SPINS = 'postMessage({ type: "ready" });\npostMessage({ type: "done", status: "passed", exit_code: 0 });\nwhile (true) {}';
// ... or that keeps the worker from seeing its error with a listener of its own.
const JS_HIDES_ITS_ERROR = [
  "self.addEventListener(\"error\", (event) => { event.preventDefault(); event.stopImmediatePropagation(); }, true);",
  "setTimeout(() => { throw new Error(\"late failure\"); }, 0);",
].join("\n");
// Item 3: a block that says the Python runner is not installed, and one that ends with a
// status the server does not know.
const JS_SAYS_UNAVAILABLE = 'postMessage({ type: "unavailable" });\nconsole.log("still here");';
const JS_BOGUS_STATUS = 'postMessage({ type: "ready" });\npostMessage({ type: "done", status: "bogus", exit_code: 0 });';
// Item 4: a block that passes as written.
const JS_FINE = 'console.log("fine as written");';

const fence = (language, code) => `\`\`\`${language}\n${code}\n\`\`\``;

function task(id) {
  return {
    external_id: id,
    prompt: "Write `add`.",
    response_a: [
      fence("python", PYTHON_HIJACK),
      fence("js", JS_SAYS_PASSED_THEN_THROWS),
      fence("js", JS_SAYS_PASSED_THEN_SPINS),
      fence("js", JS_SAYS_UNAVAILABLE),
      fence("js", JS_BOGUS_STATUS),
      fence("js", JS_FINE),
      fence("js", JS_HIDES_ITS_ERROR),
    ].join("\n\n"),
    response_b: [fence("python", PYTHON_HONEST), fence("python", "print('the other Python block')")].join("\n\n"),
  };
}

const state = {};

async function makeBatch(base) {
  const admin = await watchedPage(env.browser);
  await login(admin, base, "admin");
  const csrf = await admin.getAttribute('input[name="csrf_token"]', "value");
  const body = RATERS.map((_, i) => JSON.stringify(task(`attack-${i + 1}`))).join("\n");
  const made = await admin.request.post(`${base}/api/v1/batches?name=attacks&rubric=blackhat&randomize=false`, {
    headers: { "x-csrf-token": csrf, "content-type": "application/x-ndjson" },
    data: body,
  });
  assert.equal(made.status(), 201, await made.text());
  await admin.context().close();
}

/** The page of the next of RATERS on the form of their task, in `context` when given. */
async function formPage(context) {
  state.batch ??= await makeBatch(env.server.base);
  const page = context ? await context.newPage() : await watchedPage(env.browser);
  page.drafts = [];
  page.on("response", (response) => {
    if (response.request().method() === "POST" && /\/draft$/.test(new URL(response.url()).pathname)) {
      page.drafts.push(response.status());
    }
  });
  state.raters = (state.raters ?? 0) + 1;
  await login(page, env.server.base, RATERS[state.raters - 1]);
  await Promise.all([page.waitForNavigation(), page.click('form[action$="/next"] button')]);
  await page.waitForSelector(".runner");
  return page;
}

const runner = (page, side, index) => page.locator(`.runner[data-side="${side}"][data-block="${index}"]`);

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

async function run(page, side, index) {
  await runner(page, side, index).locator(".runner-run").click();
  return finished(page, side, index);
}

const evidence = async (page) => {
  const value = await page.inputValue("#evidence");
  return value === "" ? null : JSON.parse(value);
};

/** Waits until the page has no worker left running: each run's worker ends with it. */
async function noWorkerLeft(page) {
  const deadline = Date.now() + 5_000;
  while (page.workers().length > 0 && Date.now() < deadline) await page.waitForTimeout(50);
  assert.deepEqual(page.workers().map((w) => w.url()), [], "every run's worker is ended when the run ends");
}

/**
 * Answers the preference question with `value` and waits for the draft saves that follow
 * (the run's own may be one): every one must be saved, and the form must say so.
 */
async function draftSaves(page, value) {
  const before = page.drafts.length;
  await page.check(`input[name="sxs"][value="${value}"]`);
  const deadline = Date.now() + 15_000;
  while (page.drafts.length === before && Date.now() < deadline) await page.waitForTimeout(100);
  await page.waitForTimeout(2_500); // a save tried again after a refusal would show by now
  const answered = page.drafts.slice(before);
  assert.ok(answered.length > 0, "a draft save was sent");
  assert.deepEqual(answered, answered.map(() => 200), "every draft save was taken");
  assert.match(await page.textContent("#save-status"), /^Draft saved at /);
  assert.ok(await page.isChecked(`input[name="sxs"][value="${value}"]`));
}

test("item 1: a block that takes over the Python worker cannot forge another block's result", async () => {
  const page = await formPage();
  const honest = await run(page, "b", 1);
  assert.equal(honest.status, "failed");
  assert.match(honest.words, /^Failed · exit code 1/);
  assert.match(honest.stderr, /AssertionError/);
  const hijack = await run(page, "a", 1);
  assert.equal(hijack.stdout, "armed\n", hijack.stderr);
  const again = await run(page, "b", 1);
  assert.equal(again.status, "failed", `the honest block still fails: ${again.words} ${again.stdout}`);
  assert.match(again.words, /^Failed · exit code 1/);
  assert.doesNotMatch(again.stdout, /FORGED/);
  assert.match(again.stderr, /AssertionError/);
  await runner(page, "b", 1).locator(".runner-attach").click();
  const stored = await evidence(page);
  assert.deepEqual(stored.runs.find((r) => r.side === "b" && r.block === 1).status, "failed");
  assert.equal(stored.attachments.length, 1);
  assert.equal(stored.attachments[0].status, "failed");
  assert.equal(stored.attachments[0].exit_code, 1);
  assert.doesNotMatch(stored.attachments[0].stdout, /FORGED/);
  await noWorkerLeft(page);
  assert.deepEqual(await page.problems(), []);
  await page.context().close();
});

test("item 2: a block cannot say it passed for itself, and its worker ends with its run", async () => {
  const page = await formPage();
  const thrown = await run(page, "a", 2);
  assert.equal(thrown.status, "failed", thrown.words);
  assert.match(thrown.stderr, /Uncaught Error: really failed/);
  await noWorkerLeft(page);

  await page.evaluate(() => { document.body.dataset.runnerTimeLimitMs = "1500"; });
  const started = Date.now();
  const spun = await run(page, "a", 3);
  assert.equal(spun.status, "timed_out", spun.words);
  assert.ok(Date.now() - started >= 1500, "it ran until the limit");
  await noWorkerLeft(page);

  const hidden = await run(page, "a", 7);
  assert.equal(hidden.status, "failed", hidden.words);
  assert.match(hidden.stderr, /Uncaught Error: late failure/);
  await noWorkerLeft(page);

  // An honest block that passes: its worker is ended too, not left idle.
  const fine = await run(page, "a", 6);
  assert.equal(fine.status, "passed");
  await noWorkerLeft(page);
  assert.deepEqual(
    (await evidence(page)).runs.map((r) => [r.block, r.status]),
    [[2, "failed"], [3, "timed_out"], [6, "passed"], [7, "failed"]],
  );
  assert.deepEqual(await page.problems(), []);
  await page.context().close();
});

test("item 3: a block cannot switch the Python runner off, and an unknown status never blocks a save", async () => {
  const page = await formPage();
  const unavailable = await run(page, "a", 4);
  assert.equal(unavailable.status, "passed", unavailable.words);
  assert.equal(unavailable.stdout, "still here\n");
  for (const [side, index] of [["a", 1], ["b", 1], ["b", 2]]) {
    const button = runner(page, side, index).locator(".runner-run");
    assert.equal(await button.textContent(), "Run", `${side}${index} still runs`);
    assert.equal(await button.getAttribute("aria-disabled"), null);
  }
  assert.equal((await run(page, "b", 2)).stdout, "the other Python block\n");

  const bogus = await run(page, "a", 5);
  assert.equal(bogus.status, "passed", "what the block posted was not heard");
  assert.doesNotMatch(await page.inputValue("#evidence"), /bogus/);
  await draftSaves(page, "4");
  assert.deepEqual(await page.problems(), []);
  await page.context().close();

  // A worker that is not one of ours (a stand-in serving the real worker with its status
  // word changed) ends a run with a status the page does not know: the page shows that
  // nothing was recorded, keeps it out of the evidence, and saves as before.
  const context = await env.browser.newContext();
  await context.route("**/runner/js-worker.js", async (route) => {
    const response = await route.fetch();
    const source = await response.text();
    const changed = source.replace('status: failed ? "failed" : "passed"', 'status: failed ? "failed" : "bogus"');
    assert.notEqual(changed, source, "the worker has the status to change");
    await route.fulfill({ response, body: changed, headers: response.headers() });
  });
  const standIn = await formPage(context);
  const unknown = await run(standIn, "a", 6);
  assert.equal(unknown.status, "broken");
  assert.match(unknown.words, /nothing was recorded/);
  assert.equal(await standIn.inputValue("#evidence"), "");
  assert.equal(await runner(standIn, "a", 6).locator(".runner-attach").isVisible(), false, "nothing to attach");
  await run(standIn, "a", 2); // a known status still goes in
  assert.deepEqual((await evidence(standIn)).runs.map((r) => r.status), ["failed"]);
  await draftSaves(standIn, "3");
  await context.close();
});

test("item 4: a run of the rater's edited copy is marked edited and never the response's result", async () => {
  const page = await formPage();
  const original = await run(page, "a", 6);
  assert.equal(original.status, "passed");
  const block = runner(page, "a", 6);
  await block.locator(".runner-edit").click();
  await block.locator("textarea").fill("while (true) {}");
  await page.evaluate(() => { document.body.dataset.runnerTimeLimitMs = "1500"; });
  await block.locator(".runner-run").click();
  const edited = await finished(page, "a", 6);
  assert.equal(edited.status, "timed_out");
  assert.match(edited.words, /^Edited copy · Timed out/);
  // The response's result is still its own code's.
  assert.deepEqual((await evidence(page)).runs, [{ side: "a", block: 6, language: "javascript", status: "passed" }]);
  assert.equal(await page.locator(".response .runner-tally, [data-code-runs='a']").first().textContent(), "Ran 1 block: 1 passed.");
  await block.locator(".runner-attach").click();
  const [attached] = (await evidence(page)).attachments;
  assert.equal(attached.edited, true);
  assert.equal(attached.status, "timed_out");
  assert.equal(attached.code, "while (true) {}");
  assert.match(await block.locator(".runner-attachment summary").textContent(), /^Attached to your rating: Edited copy · Timed out/);

  // An edited copy never run before the response's own code sets nothing either.
  const other = runner(page, "a", 2);
  await other.locator(".runner-edit").click();
  await other.locator("textarea").fill('console.log("my own test")');
  await other.locator(".runner-run").click();
  assert.equal((await finished(page, "a", 2)).status, "passed");
  assert.deepEqual((await evidence(page)).runs.map((r) => r.block), [6]);
  // Reset, the response's own code runs and is its result again.
  await other.locator(".runner-edit").click();
  assert.equal((await run(page, "a", 2)).status, "failed");
  assert.deepEqual((await evidence(page)).runs.map((r) => [r.block, r.status]), [[2, "failed"], [6, "passed"]]);
  await draftSaves(page, "5");
  assert.deepEqual(await page.problems(), []);
  await page.context().close();
});
