// A lead's review in a real browser, on `verdict demo`: the batch page, returning a
// rating with a comment, the rater seeing it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

test("a lead returns a rating with a comment and the rater sees it", async () => {
  // rater1 submits the first task through the API with their session's CSRF token.
  const rater = await signedIn("rater1");
  await Promise.all([rater.waitForNavigation(), rater.click('form[action$="/next"] button')]);
  for (const [name, value] of [["a.executability", "yes_fully"], ["b.executability", "no"], ["a.instruction_following", "no_issues"],
    ["b.instruction_following", "no_issues"], ["a.correctness", "no_issues"], ["b.correctness", "no_issues"], ["sxs", "2"],
    ["classifications.language", "python"], ["classifications.kind", "bug fix"]]) {
    await rater.check(`input[name="${name}"][value="${value}"]`);
  }
  await rater.fill('textarea[name="b.executability_explanation"]', "It needs a database server I do not have.");
  await rater.fill('textarea[name="sxs_explanation"]', "A runs as given; B could not be run at all.");
  await Promise.all([rater.waitForNavigation(), rater.click("#submit")]);

  const lead = await signedIn("lead");
  await lead.click('a[href="/review"]');
  const row = lead.locator("tbody tr").first();
  assert.match(await row.textContent(), /rater1/);
  await Promise.all([lead.waitForNavigation(), row.locator("a.button").click()]);
  await lead.check('input[name="decision"][value="return"]');
  await lead.fill('textarea[name="comment"]', "B runs with SQLite; please try again.");
  await Promise.all([lead.waitForNavigation(), lead.click('button:has-text("Record the decision")')]);
  assert.equal(new URL(lead.url()).pathname, "/review");
  assert.deepEqual(await lead.problems(), []);

  await rater.goto(`${env.server.base}/ratings`);
  const mine = rater.locator("tbody tr", { hasText: "returned" });
  assert.match(await mine.textContent(), /B runs with SQLite; please try again\./);
  await Promise.all([rater.waitForNavigation(), mine.locator("a").click()]);
  assert.match(await rater.textContent(".feedback"), /B runs with SQLite/);
  assert.equal(await rater.locator('input[name="a.executability"][value="yes_fully"]').isChecked(), true, "their answers, as they saw them");
  assert.deepEqual(await rater.problems(), []);
});

test("the batch page shows its empty states without script errors", async () => {
  const lead = await signedIn("lead");
  await lead.click('a[href^="/batches/"]');
  // The one rating was returned, so nothing counts yet: no empty charts, words instead.
  assert.equal(await lead.locator("svg.chart").count(), 0);
  assert.match(await lead.textContent("#no-counted"), /No counted ratings yet/);
  assert.match(await lead.textContent("main"), /No agreement to show yet/);
  const exportLink = lead.locator('a:has-text("Export CSV")');
  assert.match(await exportLink.getAttribute("href"), /\/export\?format=csv$/);
  assert.deepEqual(await lead.problems(), []);
});
