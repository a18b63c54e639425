// A returned rating in a real browser, on `verdict demo`: the rater finds it counted in
// the menu and listed on the queue, revises it with the keyboard, the revision is saved
// as they go and survives a reload, the timer goes on from the time already spent, and
// sending it ends on a confirmation.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

test("a rater revises a returned rating by keyboard, with autosave, timer and a confirmation", async () => {
  const rater = await signedIn("rater1");
  const coding = rater.locator("tbody tr", { hasText: "Demo: coding answers" });
  await Promise.all([rater.waitForNavigation(), coding.locator('form[action$="/next"] button').click()]);
  for (const [name, value] of [["a.executability", "yes_fully"], ["b.executability", "yes_fully"], ["a.instruction_following", "no_issues"],
    ["b.instruction_following", "no_issues"], ["a.correctness", "no_issues"], ["b.correctness", "no_issues"], ["sxs", "4"],
    ["classifications.language", "python"], ["classifications.kind", "bug fix"]]) {
    await rater.check(`input[name="${name}"][value="${value}"]`);
  }
  await rater.fill('textarea[name="sxs_explanation"]', "Both fix the loop and both run as given.");
  await Promise.all([rater.waitForNavigation(), rater.click("#submit")]);

  const lead = await signedIn("lead");
  await lead.goto(`${env.server.base}/review`);
  await Promise.all([lead.waitForNavigation(), lead.locator("a.review-open").first().click()]);
  await lead.check('input[name="decision"][value="return"]');
  await lead.fill('textarea[name="comment"]', "B's version raises on an empty list; look again.");
  await Promise.all([lead.waitForNavigation(), lead.locator('form.review-form button[type="submit"]').click()]);

  // The menu and the queue show what came back.
  await rater.goto(`${env.server.base}/`);
  assert.equal((await rater.textContent("#returned-count")).trim(), "1 returned");
  assert.match(await rater.textContent(".returned"), /B's version raises on an empty list/);
  await Promise.all([rater.waitForNavigation(), rater.locator(".returned-list a").first().click()]);
  assert.match(await rater.textContent(".lead-comment"), /raises on an empty list/);
  const started = Number(await rater.getAttribute("#timer", "data-start"));

  // By keyboard: down to B's correctness, major issues, and say why.
  await rater.locator('input[name="a.executability"]').first().focus();
  for (let i = 0; i < 5; i++) await rater.keyboard.press("j");
  assert.equal(await rater.evaluate(() => document.querySelector(".question.current").dataset.question), "b.correctness");
  await rater.keyboard.press("3");
  assert.equal(await rater.evaluate(() => document.activeElement.name), "b.correctness_explanation");
  const why = "moving_average([], 3) raises ValueError instead of returning an empty list.";
  await rater.keyboard.type(why);
  await rater.locator("#save-status", { hasText: "Draft saved" }).waitFor();

  // A reload restores the unsent revision; the rating itself is still the one sent.
  await rater.reload();
  assert.match(await rater.textContent("#save-status"), /Your unsent revision is restored/);
  assert.equal(await rater.locator('input[name="b.correctness"][value="major_issues"]').isChecked(), true);
  assert.equal(await rater.inputValue('textarea[name="b.correctness_explanation"]'), why);
  assert.ok(Number(await rater.getAttribute("#timer", "data-start")) >= started, "time adds up");

  await rater.locator('textarea[name="b.correctness_explanation"]').focus();
  await rater.keyboard.down("Control");
  await Promise.all([rater.waitForNavigation(), rater.keyboard.press("Enter")]);
  await rater.keyboard.up("Control");
  assert.match(await rater.textContent("#confirmation"), /Your revision was saved and is back with the leads for review/);
  assert.equal(await rater.locator("#returned-count").count(), 0, "nothing waits for the rater any more");
  assert.deepEqual(await rater.problems(), []);
  assert.deepEqual(await lead.problems(), []);
});
