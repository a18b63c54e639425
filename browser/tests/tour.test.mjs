// The README's tour, taken in a real browser on `verdict demo`: a rater's form beside
// the answers, a lead's review queue, and a batch's dashboard. Each stop checks that the
// screen shows what the README says it does, then saves its screenshot into
// docs/screens/, so the pictures in the README are redrawn by every run of the suite.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);
const SCREENS = new URL("../../docs/screens/", import.meta.url);
mkdirSync(SCREENS, { recursive: true });

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 800 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

const shot = (page, name) => page.screenshot({ path: new URL(`${name}.png`, SCREENS).pathname });

test("tour: the rater's form, the lead's review queue, the batch's dashboard", async () => {
  const rater = await signedIn("rater1");
  const coding = rater.locator("tbody tr", { hasText: "Demo: coding answers" });
  await Promise.all([rater.waitForNavigation(), coding.locator('form[action$="/next"] button').click()]);
  // Rate the first task by keyboard, stopping at the correctness of B to take the picture.
  await rater.locator('input[name="a.executability"]').first().focus();
  for (const key of ["1", "1", "1", "1", "1"]) await rater.keyboard.press(key);
  assert.equal(await rater.evaluate(() => document.querySelector(".question.current").dataset.question), "b.correctness");
  assert.equal(await rater.isVisible("#answers-pane .response"), true, "the answers beside the form");
  await shot(rater, "rater-form");
  await rater.keyboard.press("1");
  await rater.keyboard.press("4");
  await rater.keyboard.type("Both fix the off-by-one; A also keeps a running total.");
  await rater.keyboard.press("Escape");
  for (const key of ["j", "1", "1", "j"]) await rater.keyboard.press(key);
  await rater.keyboard.down("Control");
  await Promise.all([rater.waitForNavigation(), rater.keyboard.press("Enter")]);
  await rater.keyboard.up("Control");

  const lead = await signedIn("lead");
  await lead.goto(`${env.server.base}/review`);
  assert.match(await lead.textContent("main table"), /rater1/);
  await shot(lead, "lead-review");
  await lead.goto(`${env.server.base}/`);
  await Promise.all([lead.waitForNavigation(), lead.locator('a[href^="/batches/"]', { hasText: "Demo: coding answers" }).click()]);
  assert.equal(await lead.locator("svg.chart").count() > 0, true, "the dashboard draws its charts");
  await shot(lead, "lead-dashboard");
  assert.deepEqual(await rater.problems(), []);
  assert.deepEqual(await lead.problems(), []);
});
