// The leads' hours page on the demo: a rater writes one sentence as the rationale of every
// task they rate; the lead finds their hours in the table, filters by the batch, and
// follows the repeated-explanations flag to the review page of a rating behind it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);
const BATCH = "Demo: answers compared on six aspects";
const SENTENCE = "Response A is better.";
const ASPECTS = ["helpfulness", "clarity", "factuality", "depth", "engagement", "safety"];

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

test("the hours page: the table, a batch's flags, and a flag's link to the rating", async () => {
  const rater = await signedIn("rater1");
  const statuses = await rater.evaluate(async ({ name, sentence, aspects }) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const headers = { "content-type": "application/json", "x-csrf-token": token };
    const listed = await (await fetch("/api/v1/batches")).json();
    const batch = (listed.items ?? listed).find((b) => b.name === name);
    const out = [];
    for (let i = 0; i < 4; i++) {
      const next = await (await fetch(`/api/v1/batches/${batch.id}/next`, { method: "POST", headers })).json();
      const answers = { rationale: sentence, time_spent_s: 120 + i };
      aspects.forEach((a, k) => { answers[a] = ["a", "tie", "b"][(i + k) % 3]; });
      const sent = await fetch(`/api/v1/assignments/${next.assignment_id}/submit`, { method: "POST", headers, body: JSON.stringify(answers) });
      out.push(sent.status);
    }
    return out;
  }, { name: BATCH, sentence: SENTENCE, aspects: ASPECTS });
  assert.deepEqual(statuses, [200, 200, 200, 200]);
  await rater.context().close();

  const lead = await signedIn("lead");
  await lead.goto(`${env.server.base}/`);
  await Promise.all([lead.waitForNavigation(), lead.click('nav a[href="/reports/hours"]')]);
  const rows = await lead.locator("#hours tbody tr").allInnerTexts();
  assert.ok(rows.some((r) => r.startsWith("rater1")), rows.join("\n"));
  assert.equal(await lead.locator("#flags").count(), 0, "no batch picked, no flags");

  await lead.selectOption('#hours-filters select[name="batch"]', { label: BATCH });
  await lead.selectOption('#hours-filters select[name="by"]', "week");
  await Promise.all([lead.waitForNavigation(), lead.click('#hours-filters button[type="submit"]')]);
  assert.match(lead.url(), /by=week/);
  const weekRow = (await lead.locator("#hours tbody tr").allInnerTexts()).find((r) => r.startsWith("rater1"));
  assert.ok(weekRow, "rater1 has a row for the week");
  // Four rated tasks of 120-123 seconds: 8 minutes 6 seconds.
  assert.match(weekRow, /\b4\b/);
  assert.match(weekRow, /0:08:06/);
  assert.match(await lead.getAttribute("#hours-csv", "href"), /format=csv/);

  const flag = lead.locator('#flags li.flag[data-kind="repeated_explanations"]', { hasText: "rater1" });
  assert.equal(await flag.count(), 1, await lead.locator("#flags").innerText());
  assert.match(await flag.innerText(), /Response A is better\./);
  await flag.locator("summary").click();
  const link = flag.locator("a").first();
  const href = await link.getAttribute("href");
  assert.match(href, /^\/review\/[0-9a-f-]{36}$/);
  await Promise.all([lead.waitForNavigation(), link.click()]);
  assert.equal(new URL(lead.url()).pathname, href);
  assert.match(await lead.locator("main").innerText(), /rater1/);
  assert.deepEqual(await lead.problems(), []);
  await lead.context().close();
});
