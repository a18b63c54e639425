// The A vs B diff page in a real browser: a rater opens a task, then its diff, sees the
// changed lines side by side and inline (layouts chosen by links, no script needed), and
// axe finds no accessibility violation on either layout, for the rater or a lead.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const env = suite(() => startVerdict([["admin", "admin"], ["lead", "lead"], ["rater", "rater"]]));
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const TASK = {
  external_id: "d1",
  prompt: "Write f, which doubles its argument.",
  response_a: "Alpha explains the loop.\n\n```python\ndef f(x):\n    return x * alpha_value\n```\n\n```bash\necho only-alpha\n```\n",
  response_b: "Beta explains the loop. <script>alert(1)</script>\n\n```py\ndef f(x):\n    return x * beta_value\n```\n",
};

/** A signed-in page; `bypassCSP` lets axe's script run, as in the other accessibility checks. */
async function signedIn(username, { axe = false } = {}) {
  const page = axe ? await (await env.browser.newContext({ bypassCSP: true })).newPage() : await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, username);
  return page;
}

/** Every axe violation on the page as it stands (any impact). */
async function violations(page) {
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
}

let batchId;

test("an admin uploads a batch of one task shown in its own order", async () => {
  const admin = await signedIn("admin");
  const csrf = await admin.getAttribute('input[name="csrf_token"]', "value");
  const res = await admin.request.post(`${env.server.base}/api/v1/batches?name=diffs&randomize=false`, {
    headers: { "x-csrf-token": csrf, "content-type": "application/x-ndjson" },
    data: `${JSON.stringify(TASK)}\n`,
  });
  assert.equal(res.status(), 201, await res.text());
  batchId = (await res.json()).id;
});

test("a rater opens a task, then its diff, in both layouts", async () => {
  const page = await signedIn("rater");
  await Promise.all([page.waitForNavigation(), page.click('form[action$="/next"] button')]);
  await page.waitForSelector("#rating-form");
  const form = new URL(page.url()).pathname;
  assert.match(form, /^\/assignments\/[0-9a-f-]+$/);

  await page.goto(`${env.server.base}${form}/diff`);
  // The rater knows the task by its number among theirs, not by its external id (d1).
  assert.equal(await page.title(), "A vs B · Task 1 · verdict");
  // Side by side: A's line on the left, B's replacing it on the right, changed words marked.
  const changed = page.locator("table.diff-side tbody tr", { has: page.locator("del", { hasText: "alpha_value" }) });
  assert.equal(await changed.count(), 1);
  const cells = await changed.locator("td").allTextContents();
  assert.deepEqual(cells, ["2", "−only in A", "    return x * alpha_value", "2", "+only in B", "    return x * beta_value"]);
  assert.equal(await changed.locator("ins").textContent(), "beta_value");
  assert.match(await page.textContent(".diff-overview"), /python block 1: 1 line changed/);
  assert.match(await page.textContent(".diff-overview"), /bash block 1: only in A/);
  // The script tag in B's prose is text, and nothing ran.
  assert.match(await page.textContent("#section-1"), /<script>alert\(1\)<\/script>/);
  assert.equal(await page.locator("main script").count(), 0);
  assert.equal(await page.getAttribute('.diff-views a[aria-current="page"]', "href"), `${form}/diff?view=side`);

  // Inline, by the link: the removed line, then the line that replaces it.
  await Promise.all([page.waitForNavigation(), page.click('.diff-views a:has-text("Inline")')]);
  assert.equal(new URL(page.url()).search, "?view=inline");
  assert.equal(await page.locator("table.diff-side").count(), 0);
  const lines = await page.locator("#section-2 table.diff-inline tbody tr").evaluateAll((rows) =>
    rows.map((row) => [...row.cells].map((c) => c.textContent).join("|")));
  assert.deepEqual(lines, [
    "1|1||def f(x):",
    "2||−only in A|    return x * alpha_value",
    "|2|+only in B|    return x * beta_value",
  ]);
  // Back to the task's form.
  await Promise.all([page.waitForNavigation(), page.click('a:has-text("Back to the task")')]);
  assert.equal(new URL(page.url()).pathname, form);
  assert.deepEqual(await page.problems(), []);
});

test("axe finds no violation on either layout, for the rater or the lead", async () => {
  const rater = await signedIn("rater", { axe: true });
  // The rater's open assignment is where the queue's "next" leads.
  await Promise.all([rater.waitForNavigation(), rater.click('form[action$="/next"] button')]);
  const form = new URL(rater.url()).pathname;
  const lead = await signedIn("lead", { axe: true });
  for (const [page, path] of [[rater, `${form}/diff`], [lead, `/batches/${batchId}/tasks/d1/diff`]]) {
    for (const view of ["side", "inline"]) {
      await page.goto(`${env.server.base}${path}?view=${view}`);
      await page.waitForSelector(`table.diff-${view}`);
      assert.deepEqual(await violations(page), [], `${path}?view=${view}`);
    }
  }
  // On a phone, too.
  await lead.setViewportSize({ width: 390, height: 844 });
  await lead.goto(`${env.server.base}/batches/${batchId}/tasks/d1/diff`);
  assert.deepEqual(await violations(lead), [], "side by side on a phone");
});
