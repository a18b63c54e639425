// The admin's batch pages in a real browser: upload with progress, errors by line,
// settings.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const env = suite(startVerdict);

const task = (id) => JSON.stringify({ external_id: id, prompt: "Reverse a string in Go", response_a: "Use a rune slice.", response_b: "Use bytes." });

async function uploadPage() {
  const page = await watchedPage(env.browser);
  await login(page, env.server.base, "admin");
  await page.goto(`${env.server.base}/admin/batches`);
  return page;
}

test("an admin uploads a batch file and sees it listed", async () => {
  const page = await uploadPage();
  await page.fill('#upload-form input[name="name"]', "go strings");
  await page.setInputFiles('#upload-form input[name="file"]', {
    name: "tasks.jsonl",
    mimeType: "application/x-ndjson",
    buffer: Buffer.from([task("g1"), task("g2"), task("g3")].join("\n") + "\n"),
  });
  await page.click('#upload-form button[type="submit"]');
  await page.waitForFunction(() => document.getElementById("upload-status").textContent.includes("tasks added"));
  assert.equal(await page.textContent("#upload-status"), "go strings: 3 tasks added, 0 unchanged.");
  await page.waitForSelector("text=go strings >> xpath=ancestor::tr");
  const cells = await page.locator("tr", { hasText: "go strings" }).locator("td").allTextContents();
  assert.deepEqual(cells.slice(0, 5), ["go strings", "blackhat", "open", "1", "3"]);
  assert.deepEqual(await page.problems(), []);
});

test("tasks uploaded to an existing batch of a custom rubric keep its rubric and settings", async () => {
  const page = await uploadPage();
  const csrf = await page.getAttribute("#upload-form", "data-csrf");
  const headers = { "x-csrf-token": csrf };
  const doc = await (await page.request.get(`${env.server.base}/api/v1/rubrics/additive-5`)).json();
  doc.name = "one-answer";
  const added = await page.request.post(`${env.server.base}/api/v1/rubrics`, { headers, data: doc });
  assert.equal(added.status(), 201, await added.text());
  const single = (id) => JSON.stringify({ external_id: id, prompt: "Sum a list in Go", response: "Use a for loop." });
  const made = await page.request.post(`${env.server.base}/api/v1/batches?name=one+answer&rubric=one-answer&overlap=2`, {
    headers: { ...headers, "content-type": "application/x-ndjson" },
    data: single("o1") + "\n",
  });
  assert.equal(made.status(), 201, await made.text());
  // Every setting left at the batch's own: the new task joins the batch as it is.
  await page.fill('#upload-form input[name="name"]', "one answer");
  await page.setInputFiles('#upload-form input[name="file"]', {
    name: "more.jsonl",
    mimeType: "application/x-ndjson",
    buffer: Buffer.from(single("o2") + "\n"),
  });
  await page.click('#upload-form button[type="submit"]');
  await page.waitForFunction(() => document.getElementById("upload-status").textContent.includes("added"));
  assert.equal(await page.textContent("#upload-status"), "one answer: 1 tasks added, 0 unchanged.");
  await page.reload();
  const cells = await page.locator("tr", { hasText: "one answer" }).locator("td").allTextContents();
  assert.deepEqual(cells.slice(0, 5), ["one answer", "one-answer", "open", "2", "2"]);
  assert.deepEqual(await page.problems(), []);
});

test("a bad file lists every bad line and stores nothing", async () => {
  const page = await uploadPage();
  await page.fill('#upload-form input[name="name"]', "broken");
  await page.setInputFiles('#upload-form input[name="file"]', {
    name: "tasks.jsonl",
    mimeType: "application/x-ndjson",
    buffer: Buffer.from([task("b1"), "{not json", task("b1")].join("\n") + "\n"),
  });
  await page.click('#upload-form button[type="submit"]');
  await page.waitForSelector("#upload-errors:not([hidden])");
  const rows = await page.locator("#upload-errors tbody tr").allTextContents();
  assert.equal(rows.length, 2);
  assert.match(rows[0], /^2/);
  assert.match(rows[1], /^3external_id "b1" appears again \(first on line 1\)/);
  assert.match(await page.textContent("#upload-status"), /2 of the records are invalid; nothing was stored/);
  await page.reload();
  assert.equal(await page.locator("tr", { hasText: "broken" }).count(), 0);
});

test("settings are reviewed and confirmed, with raters ticked and questions edited as a form", async () => {
  const page = await uploadPage();
  await page.click('tr:has-text("go strings") a:has-text("Settings")');
  const settingsUrl = page.url();
  // Raters are ticked from the accounts that rate, not typed.
  await page.check('#raters-picker input[name="raters_scope"][value="only"]');
  await page.check('#raters-picker input[name="rater"][value="rater"]');
  assert.equal(await page.locator('#raters-picker input[name="rater"][value="admin"]').count(), 0);
  await page.fill('input[name="overlap"]', "2");
  // A question in the empty row, and one more added with the button.
  await page.fill('input[name="q0.key"]', "Bad Key");
  await page.fill('input[name="q0.label"]', "Language");
  await page.fill('textarea[name="q0.options"]', "python\nrust");
  await page.click("#add-question");
  await page.fill('input[name="q1.key"]', "kind");
  await page.fill('input[name="q1.label"]', "Kind");
  await page.fill('textarea[name="q1.options"]', "bug\nfeature");
  await page.check('input[name="q1.multiple"]');
  await page.click('button:has-text("Review changes")');
  // Refused whole: the error beside its question, and what was typed is kept.
  assert.match(await page.textContent(".error-summary"), /Nothing was saved: 1 field needs changing/);
  assert.match(await page.textContent('.question-row[data-index="0"] .error'), /key must be 1-64 of a-z/);
  assert.equal(await page.inputValue('input[name="q1.key"]'), "kind");
  assert.equal(await page.isChecked('#raters-picker input[name="rater"][value="rater"]'), true);

  await page.fill('input[name="q0.key"]', "language");
  await page.click('button:has-text("Review changes")');
  // The confirmation lists each change, before and after; nothing applied yet.
  assert.match(await page.textContent("h2"), /You are about to change/);
  const settings = await page.locator(".confirm-changes tbody th").allTextContents();
  assert.deepEqual(settings, ["Raters per task", "Classification questions", "Raters"]);
  const values = await page.locator(".confirm-changes tbody td").allTextContents();
  assert.deepEqual(values, [
    "1", "2",
    "none", "Language (language): python, rust; Kind (kind, several choices): bug, feature",
    "every rater", "rater",
  ]);

  // Cancel leaves the settings as they were.
  await page.click('a:has-text("Cancel")');
  assert.equal(await page.inputValue('input[name="overlap"]'), "1");
  assert.equal(await page.isChecked('#raters-picker input[name="raters_scope"][value="all"]'), true);

  // Again, and this time confirm.
  await page.fill('input[name="overlap"]', "2");
  await page.check('#raters-picker input[name="raters_scope"][value="only"]');
  await page.check('#raters-picker input[name="rater"][value="rater"]');
  await page.fill('input[name="q0.key"]', "language");
  await page.fill('input[name="q0.label"]', "Language");
  await page.fill('textarea[name="q0.options"]', "python\nrust");
  await page.click('button:has-text("Review changes")');
  await page.click('button:has-text("Confirm")');
  assert.equal(new URL(page.url()).pathname, new URL(settingsUrl).pathname);
  assert.equal(await page.textContent('p.notice[role="status"]'), "Saved: Raters per task, Classification questions, Raters changed.");
  assert.equal(await page.inputValue('input[name="overlap"]'), "2");
  assert.equal(await page.isChecked('#raters-picker input[name="rater"][value="rater"]'), true);
  assert.equal(await page.inputValue('input[name="q0.key"]'), "language");
  assert.equal(await page.inputValue('textarea[name="q0.options"]'), "python\nrust");
  assert.equal(await page.inputValue('input[name="q1.key"]'), "", "an empty row for the next question");
  assert.deepEqual(await page.problems([422]), []);
});
