// LLM judges in a real browser, on `verdict demo`: an admin adds a judge on the judges
// page, pointing at a tiny OpenAI-compatible server run by this test, starts a run from
// the additive batch's page, watches the run's row reach "finished" without reloading
// (the page's live progress), and reads the run's calls; a judge whose server is down
// shows, live, that it retries and then that it failed, and why; then axe-core checks the
// judges' pages as the accessibility test checks the others.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);

/**
 * A chat completions endpoint that holds every answer until `release()` is called, so
 * the test can see a run under way before it ends: a score line for a task with one
 * response (additive-5), the choices JSON for a pair.
 */
function heldJudge() {
  let open = false;
  const waiting = [];
  let asked = 0;
  const server = createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404).end();
      return;
    }
    let body = "";
    req.on("data", (chunk) => { body += chunk; });
    req.on("end", () => {
      asked += 1;
      const request = JSON.parse(body);
      const prompt = request.messages.map((m) => m.content).join("\n");
      const content = prompt.includes("Response B")
        ? JSON.stringify({ rationale: "Both are fine; A is a little clearer.", choices: { helpfulness: "A", clarity: "A", factuality: "tie", depth: "tie", engagement: "tie", safety: "tie" } })
        : "score: 3\nIt answers the question with working code, but misses an edge case.";
      const answer = () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
          id: `chatcmpl-${asked}`, object: "chat.completion", model: request.model,
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
          usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60 },
        }));
      };
      if (open) answer(); else waiting.push(answer);
    });
  });
  return {
    server,
    get asked() { return asked; },
    release() {
      open = true;
      waiting.splice(0).forEach((answer) => answer());
    },
  };
}

const judge = heldJudge();
let judgeBase;

before(async () => {
  await new Promise((resolve) => judge.server.listen(0, "127.0.0.1", resolve));
  judgeBase = `http://127.0.0.1:${judge.server.address().port}/v1`;
});

after(() => {
  judge.server.closeAllConnections();
  judge.server.close();
});

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

test("an admin adds a judge, runs it from the batch page and watches it finish live", async () => {
  const page = await signedIn("admin");
  await Promise.all([page.waitForNavigation(), page.click('nav a[href="/admin/judges"]')]);
  assert.match(await page.textContent("#no-judges"), /No judge yet/);
  await page.fill('#add-judge input[name="name"]', "node-judge");
  await page.fill('#add-judge input[name="base_url"]', judgeBase);
  await page.fill('#add-judge input[name="model"]', "held");
  await page.fill('#add-judge input[name="temperature"]', "0");
  await page.fill('#add-judge input[name="concurrency"]', "2");
  await Promise.all([page.waitForNavigation(), page.click('#add-judge button[type="submit"]')]);
  assert.match(await page.textContent("#judge-saved"), /Judge node-judge was added/);
  const listed = await page.locator("#judges tbody tr").first().locator("td").allTextContents();
  assert.deepEqual(listed.slice(0, 4), ["node-judge", judgeBase, "held", "no key"]);

  // The additive batch's page, found through the API with the session.
  const batches = await (await page.request.get(`${env.server.base}/api/v1/batches`)).json();
  const additive = batches.find((b) => b.rubric === "additive-5");
  assert.ok(additive, "the demo has an additive batch");
  await page.goto(`${env.server.base}/batches/${additive.id}`);
  assert.match(await page.textContent("#no-runs"), /No judge has been run over this batch yet/);
  await page.selectOption("#run-judge", "node-judge");
  await Promise.all([page.waitForNavigation(), page.click('#start-run button[type="submit"]')]);

  // Served while the judge holds its answers: the run is running, nothing over yet.
  const row = page.locator("#judge-runs tbody tr").first();
  assert.equal(await row.getAttribute("data-status"), "running");
  assert.equal(await row.locator('[data-field="status"]').textContent(), "running");
  assert.equal(await row.locator('[data-field="done"]').textContent(), "0");
  assert.equal(await row.locator('button[data-action="pause"]').isVisible(), true);
  await page.evaluate(() => { window.__sameDocument = true; });

  judge.release();
  await page.waitForFunction(
    () => document.querySelector('#judge-runs tbody tr [data-field="status"]').textContent === "finished",
    null,
    { timeout: 30_000 },
  );
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was not reloaded");
  assert.equal(await row.locator('[data-field="done"]').textContent(), "6");
  assert.equal(await row.locator("progress").evaluate((bar) => bar.value), 6);
  assert.equal(await row.locator('[data-field="tokens"]').textContent(), "300 + 60");
  assert.notEqual(await row.locator('[data-field="finished"]').textContent(), "—");
  assert.equal(await row.locator('button[data-action="pause"]').isVisible(), false, "nothing left to pause");
  assert.equal(await row.locator('button[data-action="cancel"]').isVisible(), false);
  assert.match(await page.textContent("#judge-runs-live"), /The run of node-judge is finished: 6 of 6 calls over, 0 failed\./);
  assert.equal(judge.asked, 6, "each task asked once");

  // Reloaded, the judge's figures are there; then its calls.
  await page.reload();
  assert.match(await page.textContent("#judges .judge-summary"), /6 tasks asked in 6 calls \(6 answered, 0 unparsed, 0 failed\)/);
  await Promise.all([page.waitForNavigation(), page.click('#judge-runs a:has-text("Calls of node-judge")')]);
  assert.equal(await page.locator("article.judge-call").count(), 6);
  assert.match(await page.locator("article.judge-call pre").first().textContent(), /^score: 3\nIt answers the question/);
  assert.match(await page.textContent("#call-filters"), /All \(6\)/);
  assert.deepEqual(await page.problems(), []);
});

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * The serious and critical violations axe finds on the page as it stands, or only in the
 * element `within` (a selector) when given.
 */
async function violations(page, within) {
  await page.evaluate(AXE);
  const found = await page.evaluate(async (selector) => {
    const context = selector ? { include: [selector] } : document;
    const result = await window.axe.run(context, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  }, within ?? null);
  return found.filter((v) => v.impact === "serious" || v.impact === "critical");
}

test("a run against a judge whose server is down says live that it retries, then that it failed", async () => {
  // Down behind its proxy: every request answers 503, which is retried (a refused port
  // or a server that does not speak HTTP fails at once, so it is not this test's).
  const down = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(503).end("down for maintenance"));
  });
  await new Promise((resolve) => down.listen(0, "127.0.0.1", resolve));
  after(() => new Promise((resolve) => down.close(resolve)));
  const deadBase = `http://127.0.0.1:${down.address().port}/v1`;

  const page = await signedIn("admin");
  await page.goto(`${env.server.base}/admin/judges`);
  await page.fill('#add-judge input[name="name"]', "down-judge");
  await page.fill('#add-judge input[name="base_url"]', deadBase);
  await page.fill('#add-judge input[name="model"]', "gone");
  // Every call at once: the run is over when the first call's six attempts are.
  await page.fill('#add-judge input[name="concurrency"]', "6");
  await Promise.all([page.waitForNavigation(), page.click('#add-judge button[type="submit"]')]);
  assert.match(await page.textContent("#judge-saved"), /Judge down-judge was added/);

  const batches = await (await page.request.get(`${env.server.base}/api/v1/batches`)).json();
  const batchPage = `${env.server.base}/batches/${batches.find((b) => b.rubric === "additive-5").id}`;
  await page.goto(batchPage);
  await page.selectOption("#run-judge", "down-judge");
  await Promise.all([page.waitForNavigation(), page.click('#start-run button[type="submit"]')]);
  const row = page.locator("#judge-runs tbody tr").first();
  assert.match(await row.locator("td").first().textContent(), /down-judge/);
  const rowId = `#${await row.getAttribute("id")}`;
  const status = row.locator('[data-field="status"]');
  await page.evaluate(() => { window.__sameDocument = true; });

  // While the calls wait to be asked again, the row says so, with the attempt and why,
  // and the live region says it once.
  const saysRetrying = /^retrying · attempt [2-6] · HTTP 503 Service Unavailable from the endpoint$/;
  await page.waitForFunction(
    () => document.getElementById("judge-runs-live").textContent.startsWith("The run of down-judge is retrying: "),
    null,
    { timeout: 30_000 },
  );
  assert.match(await page.textContent("#judge-runs-live"), /^The run of down-judge is retrying: HTTP 503 Service Unavailable from the endpoint/);
  assert.match(await status.textContent(), saysRetrying);
  assert.equal(await status.locator("*").count(), 0, "the error is text, not markup");
  assert.equal(await row.getAttribute("data-status"), "running");
  assert.equal(await row.locator('button[data-action="cancel"]').isVisible(), true);

  // Served while it retries, the row says the same; axe finds nothing serious in it.
  const context = await env.browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true });
  const checker = await context.newPage();
  await login(checker, env.server.base, "admin", env.server.passwords.admin);
  await checker.goto(batchPage);
  assert.match(await checker.textContent(`${rowId} [data-field="status"]`), saysRetrying);
  assert.deepEqual(await violations(checker, rowId), [], "the row of a run that retries");

  // Every call's six attempts answered 503: the run failed, and says why, without a reload.
  await page.waitForFunction(
    (selector) => document.querySelector(selector).dataset.status === "failed",
    rowId,
    { timeout: 120_000 },
  );
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was not reloaded");
  const failed = await status.textContent();
  assert.match(failed, /^failed · HTTP 503 Service Unavailable from the endpoint$/);
  assert.equal(await row.locator('[data-field="done"]').textContent(), "0");
  assert.equal(await row.locator('[data-field="failed"]').textContent(), "6");
  assert.notEqual(await row.locator('[data-field="finished"]').textContent(), "—");
  const resume = row.locator('button[data-action="resume"]');
  assert.equal(await resume.isVisible(), true, "a failed run can be asked again");
  assert.equal(await resume.textContent(), "Ask failed calls again");
  assert.equal(await row.locator('button[data-action="pause"]').isVisible(), false);
  assert.equal(await row.locator('button[data-action="cancel"]').isVisible(), false);
  assert.match(
    await page.textContent("#judge-runs-live"),
    /^The run of down-judge failed: 0 of 6 calls over, 6 failed\. The last error: HTTP 503 Service Unavailable from the endpoint/,
  );

  // Reloaded, the page serves the row as it was left.
  await page.reload();
  assert.equal(await status.textContent(), failed);
  assert.equal(await resume.textContent(), "Ask failed calls again");
  await checker.reload();
  assert.equal(await checker.textContent(`${rowId} [data-field="status"]`), failed);
  assert.deepEqual(await violations(checker, rowId), [], "the row of a failed run");
  await context.close();
  assert.deepEqual(await page.problems(), []);
});

test("the judges' pages have no serious accessibility problems", async () => {
  // The check's script is let past the app's CSP.
  const context = await env.browser.newContext({ viewport: { width: 1366, height: 900 }, bypassCSP: true });
  const page = await context.newPage();
  await login(page, env.server.base, "admin", env.server.passwords.admin);
  const check = async (what) => assert.deepEqual(await violations(page), [], what);
  await page.goto(`${env.server.base}/admin/judges`);
  await check("the judges page");
  await Promise.all([page.waitForNavigation(), page.click('#add-judge button[type="submit"]')]);
  assert.match(await page.textContent("#judge-errors"), /Nothing was saved/);
  await check("the judges page with every error shown");
  await Promise.all([page.waitForNavigation(), page.click('#judges a:has-text("Change")')]);
  await check("a judge's settings");
  const batches = await (await page.request.get(`${env.server.base}/api/v1/batches`)).json();
  await page.goto(`${env.server.base}/batches/${batches.find((b) => b.rubric === "additive-5").id}`);
  await check("the batch page with a judge and its run");
  await Promise.all([page.waitForNavigation(), page.click('#judge-runs a:has-text("Calls of node-judge")')]);
  await check("a run's calls");
  await context.close();
});
