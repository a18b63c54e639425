// Running a programme on the demo's blackhat batch: the admin sets adaptive overlap and
// strict skills routing on the settings page and confirms them; a rater says what they
// know on the skills page, which a strict batch does not go by; the lead reads it there and
// sets the rater's skills, and the rater is offered only the tasks they know; the lead
// reads the batch page's routing section and sets another rater's skills.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);
const BATCH = "Demo: coding answers";

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

test("adaptive overlap and skills routing, set on the pages and seen working", async () => {
  const admin = await signedIn("admin");
  await admin.goto(`${env.server.base}/admin/batches`);
  await Promise.all([admin.waitForNavigation(), admin.click(`tr:has-text("${BATCH}") a:has-text("Settings")`)]);
  await admin.fill('input[name="max_overlap"]', "3");
  await admin.fill('input[name="escalate"]', "points:sxs:3");
  await admin.fill('input[name="route_by"]', "metadata.nonsense key");
  await admin.selectOption('select[name="routing"]', "strict");
  await admin.click('button:has-text("Review changes")');
  // Refused whole, with the reason beside the field and what was typed kept.
  assert.match(await admin.textContent(".error-summary"), /Nothing was saved/);
  assert.match(await admin.locator("p.error", { hasText: "Route tasks by" }).innerText(), /letters, digits, _ or -/);
  assert.equal(await admin.inputValue('input[name="max_overlap"]'), "3");
  assert.equal(await admin.inputValue('select[name="routing"]'), "strict");

  await admin.fill('input[name="route_by"]', "metadata.language");
  await admin.click('button:has-text("Review changes")');
  const settings = await admin.locator(".confirm-changes tbody th").allTextContents();
  assert.deepEqual(settings, ["Most raters per task", "One more rater when", "Route tasks by", "Routing"]);
  const values = await admin.locator(".confirm-changes tbody td").allTextContents();
  assert.deepEqual(values.slice(4), [
    "nothing (tasks in upload order to anyone)", "metadata.language",
    "prefer: tasks matching a rater's skills first", "strict: only tasks matching a rater's skills",
  ]);
  await admin.click('button:has-text("Confirm")');
  assert.equal(
    await admin.textContent('p.notice[role="status"]'),
    "Saved: Most raters per task, One more rater when, Route tasks by, Routing changed.",
  );
  assert.equal(await admin.inputValue('input[name="route_by"]'), "metadata.language");
  assert.equal(await admin.inputValue('input[name="max_overlap"]'), "3");
  await admin.context().close();

  // The rater says what they know, on the skills page reached from the top bar.
  const rater = await signedIn("rater1");
  await Promise.all([rater.waitForNavigation(), rater.click('nav a[href="/skills"]')]);
  await rater.fill('#my-skills input[name="skills"]', "Rust, Python,");
  await rater.click('#my-skills button[type="submit"]');
  assert.match(await rater.locator("#my-skills .error").innerText(), /a skill is empty/);
  assert.equal(await rater.inputValue('#my-skills input[name="skills"]'), "Rust, Python,");
  await rater.fill('#my-skills input[name="skills"]', "Rust, Python");
  await Promise.all([rater.waitForNavigation(), rater.click('#my-skills button[type="submit"]')]);
  assert.equal(await rater.inputValue('#my-skills input[name="skills"]'), "python, rust");
  assert.equal(await rater.locator("#team-skills").count(), 0, "a rater sets only their own");
  assert.match(await rater.locator("#set-for-me").innerText(), /^Set by your lead: none yet\./);

  // Offered every task in turn, skipping each: the languages seen.
  const offered = (page) => page.evaluate(async (name) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const headers = { "content-type": "application/json", "x-csrf-token": token };
    const listed = await (await fetch("/api/v1/batches")).json();
    const batch = (listed.items ?? listed).find((b) => b.name === name);
    const out = [];
    for (;;) {
      const next = await fetch(`/api/v1/batches/${batch.id}/next`, { method: "POST", headers });
      if (next.status === 204) return out;
      const taken = await next.json();
      out.push(taken.task.metadata.language);
      const skip = await fetch(`/api/v1/assignments/${taken.assignment_id}/skip`, {
        method: "POST", headers, body: JSON.stringify({ reason: "too_long" }),
      });
      if (skip.status !== 200) return [...out, `skip ${skip.status}`];
    }
  }, BATCH);
  // What a rater declares does not decide a strict batch: nothing yet for rater1.
  assert.deepEqual(await offered(rater), []);

  // The lead reads what rater1 says they know and sets it as their skills.
  const lead = await signedIn("lead");
  await lead.goto(`${env.server.base}/skills`);
  assert.equal(await lead.locator("#user-rater1 td.declared").innerText(), "python, rust");
  await lead.fill('input[aria-label="Skills of rater1"]', "Python, Rust");
  await Promise.all([lead.waitForNavigation(), lead.click('#user-rater1 button[type="submit"]')]);

  // Offered only Python and Rust: three tasks of the demo's twelve, then nothing.
  await rater.reload();
  assert.match(await rater.locator("#set-for-me").innerText(), /^Set by your lead: python, rust\./);
  assert.deepEqual([...(await offered(rater))].sort(), ["python", "python", "rust"]);
  await rater.context().close();

  // The lead sees the routing on the batch page and gives rater2 a skill.
  await lead.goto(`${env.server.base}/`);
  await Promise.all([lead.waitForNavigation(), lead.click(`a:has-text("${BATCH}")`)]);
  // Adaptive overlap, set above, says what it has asked so far.
  assert.match(await lead.locator("#adaptive-overlap").innerText(), /^Adaptive overlap: 0 of 12 tasks escalated \(0 raters added\) · 24 ratings asked against 36 with 3 on every task: 12 saved so far\.$/);
  const routing = await lead.locator("#routing").innerText();
  assert.match(routing, /routed by metadata\.language, strict/);
  assert.match(routing, /After routing\s+3\s+3\s+100%\s+too_long 3/);
  assert.match(await lead.locator("#unmatched").innerText(), /wait for a rater with the skill: no rater allowed on this batch has it: .*go 1/);
  await Promise.all([lead.waitForNavigation(), lead.click('#routing a[href="/skills"]')]);
  await lead.fill('input[aria-label="Skills of rater2"]', "Go");
  await Promise.all([lead.waitForNavigation(), lead.click('#user-rater2 button[type="submit"]')]);
  assert.equal(await lead.inputValue('input[aria-label="Skills of rater2"]'), "go");
  assert.equal(await lead.inputValue('input[aria-label="Skills of rater1"]'), "python, rust");
  assert.equal(await lead.locator('input[aria-label="Skills of admin"]').count(), 0, "a lead sets raters' skills only");
  assert.deepEqual(await lead.problems(), []);
});
