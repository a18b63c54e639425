// An automated accessibility check (axe-core, from npm, run inside each page) of the
// pages raters and leads spend their day on: the queue, the rating form, the revise
// page, the review queue and a rating under review, the disagreement views and the
// batch's dashboard, on a laptop screen and on a phone. No serious or critical
// violation is allowed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import { login, startDemo, suite } from "./harness.mjs";

const env = suite(startDemo);
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** A signed-in page at this size; the check's script is let past the app's CSP. */
async function signedIn(username, viewport) {
  const context = await env.browser.newContext({ viewport, bypassCSP: true });
  const page = await context.newPage();
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

/** The serious and critical violations axe finds on the page as it stands. */
async function violations(page) {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
    }));
  });
  return found.filter((v) => v.impact === "serious" || v.impact === "critical");
}

async function check(page, what) {
  const found = await violations(page);
  assert.deepEqual(found, [], `${what}: ${JSON.stringify(found, null, 1)}`);
}

for (const [screen, viewport] of [["laptop", { width: 1366, height: 900 }], ["phone", { width: 390, height: 844 }]]) {
  test(`${screen}: the rater's pages have no serious accessibility problems`, async () => {
    const rater = await signedIn(screen === "laptop" ? "rater1" : "rater2", viewport);
    await check(rater, "the queue");
    await Promise.all([rater.waitForNavigation(), rater.locator('form[action$="/next"] button').first().click()]);
    await rater.waitForSelector("#rating-form");
    await check(rater, "the rating form");
    // With the shortcuts, the out-of-scope box and the skip form open, and errors shown.
    await rater.evaluate(() => { document.getElementById("shortcuts").hidden = false; });
    await rater.click("#submit");
    await rater.locator("#error-summary").waitFor({ state: "visible" });
    await rater.keyboard.press("o");
    await rater.evaluate(() => { document.getElementById("skip").open = true; });
    await check(rater, "the rating form with its panels open and errors shown");
    // One response at full width, code unwrapped, and on a phone the prompt's tab.
    await rater.keyboard.press("Escape");
    await rater.evaluate(() => document.querySelector('.focus-toggle[data-side="b"]').click());
    await rater.evaluate(() => document.querySelector(".wrap-toggle").click());
    if (screen === "phone") await rater.evaluate(() => document.getElementById("tab-part-prompt").click());
    await check(rater, "the rating form with a response at full width and code unwrapped");
    // The guidelines open over the page, and an option's definition beside it.
    await rater.evaluate(() => { document.getElementById("guidelines").open = true; });
    await rater.locator('input[name="a.correctness"][value="minor_issues"]').focus();
    await check(rater, "the rating form with its guidelines and a definition open");
    await rater.goto(`${env.server.base}/ratings`);
    await check(rater, "the rater's ratings");
  });

  test(`${screen}: the lead's pages have no serious accessibility problems`, async () => {
    const rater = await signedIn(screen === "laptop" ? "rater1" : "rater2", viewport);
    const home = `${env.server.base}/`;
    await rater.goto(home);
    const coding = rater.locator("tbody tr", { hasText: "Demo: coding answers" });
    await Promise.all([rater.waitForNavigation(), coding.locator('form[action$="/next"] button').click()]);
    // Submit a whole rating through the form, as the rater would.
    for (const name of ["a.executability", "b.executability", "a.instruction_following", "b.instruction_following",
      "a.correctness", "b.correctness"]) {
      await rater.locator(`input[name="${name}"]`).first().check();
    }
    await rater.check('input[name="sxs"][value="4"]');
    await rater.fill('textarea[name="sxs_explanation"]', "Both answers fix the loop the same way and both run.");
    for (const name of ["classifications.language", "classifications.kind"]) {
      await rater.locator(`input[name="${name}"]`).first().check();
    }
    await Promise.all([rater.waitForNavigation(), rater.click("#submit")]);

    const lead = await signedIn("lead", viewport);
    await lead.goto(`${env.server.base}/review`);
    await check(lead, "the review queue");
    await lead.locator("#tick-all").check();
    await lead.click("#bulk-reject");
    await lead.locator("#bulk-reject-confirm").waitFor({ state: "visible" });
    await check(lead, "the review queue, every rating ticked, asking before rejecting them");
    await lead.click("#bulk-reject-no");
    const review = lead.locator("a.review-open").first();
    await review.waitFor();
    await Promise.all([lead.waitForNavigation(), review.click()]);
    await check(lead, "a rating under review");
    await lead.keyboard.press("x");
    await lead.locator("#reject-confirm").waitFor({ state: "visible" });
    await check(lead, "a rating under review, asking before a rejection");
    await lead.keyboard.press("Escape");
    // Accepted: the next page says so.
    await Promise.all([lead.waitForNavigation(), lead.keyboard.press("a")]);
    await lead.locator("#flash").waitFor();
    await check(lead, "the page after a decision, with its notice");
    await lead.goto(home);
    await Promise.all([lead.waitForNavigation(), lead.locator('a[href^="/batches/"]', { hasText: "Demo: coding answers" }).click()]);
    await check(lead, "the batch's dashboard");
    const batch = new URL(lead.url()).pathname;
    await lead.goto(`${env.server.base}${batch}/disagreements`);
    await check(lead, "the batch's tasks by disagreement");
    await lead.goto(`${env.server.base}${batch}/tasks/demo-001`);
    await check(lead, "a task's ratings side by side");
  });
}
