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

test("settings are changed from the batch page, with errors beside their fields", async () => {
  const page = await uploadPage();
  await page.click('tr:has-text("go strings") a:has-text("Settings")');
  await page.fill('textarea[name="raters"]', "nobody");
  await page.click('button:has-text("Save")');
  assert.match(await page.textContent("main"), /no user named "nobody"/);
  await page.fill('input[name="overlap"]', "2");
  await page.fill('textarea[name="raters"]', "rater");
  await page.click('button:has-text("Save")');
  assert.equal(await page.inputValue('input[name="overlap"]'), "2");
  assert.equal(await page.inputValue('textarea[name="raters"]'), "rater");
  assert.deepEqual(await page.problems([422]), []);
});
