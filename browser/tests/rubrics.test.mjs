// One task of each built-in rubric rated with the keyboard only, on `verdict demo`: the
// blackhat form, the additive 0-5 score (yes/no criteria, a derived score and a
// justification asked in words) and the six-aspect comparison (A / tie / B). The
// stored rating is read back as its rater and as a lead, who sees it canonical.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);

const BLACKHAT = "Demo: coding answers";
const ADDITIVE = "Demo: one answer scored 0-5";
const ASPECTS = "Demo: answers compared on six aspects";

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

/** From the queue, the form of the next task of the batch named `batch`. */
async function openNext(page, batch) {
  await page.goto(`${env.server.base}/`);
  const row = page.locator("tbody tr", { hasText: batch });
  await Promise.all([page.waitForNavigation(), row.locator('form[action$="/next"] button').click()]);
  await page.waitForSelector("#rating-form");
}

async function press(page, ...keys) {
  for (const key of keys) await page.keyboard.press(key);
}

const current = (page) => page.evaluate(() => document.querySelector("#rating-form .current")?.dataset.question);
const focused = (page) => page.evaluate(() => document.activeElement.name ?? null);
/** A response's text as rendered, without the code runner's controls and output. */
const responseText = (page, side) =>
  page.locator(`section[aria-label="Response ${side}"] .rendered`).evaluate((rendered) => {
    const copy = rendered.cloneNode(true);
    for (const added of copy.querySelectorAll(".runner, .runner-tally, .code-tools")) added.remove();
    document.body.append(copy);
    const text = copy.innerText;
    copy.remove();
    return text;
  });

/** Ctrl+Enter, and the form of the next task (or the page saying there is none). */
async function submitByKeyboard(page) {
  const url = page.url();
  await page.keyboard.down("Control");
  await Promise.all([page.waitForNavigation(), page.keyboard.press("Enter")]);
  await page.keyboard.up("Control");
  assert.notEqual(page.url(), url, "the form was sent");
}

/**
 * The rater's newest submitted rating of `batch`, as they see it and as a lead sees it;
 * checks the rater's history page lists it as rated and submitted.
 */
async function stored(page, lead, batch, externalId) {
  await page.goto(`${env.server.base}/ratings`);
  const row = page.locator("tbody tr", { hasText: batch }).filter({ hasText: externalId });
  assert.match(await row.textContent(), /rated\s+submitted/);
  const list = await (await page.request.get(`${env.server.base}/api/v1/ratings?limit=100`)).json();
  const item = list.items.find((i) => i.batch === batch && i.external_id === externalId);
  assert.ok(item, `${externalId} is in the rater's ratings`);
  const asShown = await (await page.request.get(`${env.server.base}/api/v1/ratings/${item.id}`)).json();
  const canonical = await (await lead.request.get(`${env.server.base}/api/v1/ratings/${item.id}`)).json();
  assert.equal(asShown.status, "submitted");
  assert.equal(canonical.status, "submitted");
  return { asShown, canonical, batchId: item.batch_id };
}

// The tests below find each task the rater rated by its external id, which raters see
// only where a batch shows it (the demo's batches do not): the admin turns it on.
test("an admin shows raters the external ids of the demo's batches", async () => {
  const admin = await signedIn("admin");
  await admin.goto(`${env.server.base}/admin/batches`);
  const csrf = await admin.getAttribute('input[name="csrf_token"]', "value");
  const batches = await (await admin.request.get(`${env.server.base}/api/v1/batches`)).json();
  for (const name of [BLACKHAT, ADDITIVE, ASPECTS]) {
    const batch = batches.find((b) => b.name === name);
    assert.ok(batch, `${name} is a demo batch`);
    const res = await admin.request.patch(`${env.server.base}/api/v1/batches/${batch.id}`, {
      headers: { "x-csrf-token": csrf },
      data: { raters_see_external_ids: true },
    });
    assert.equal(res.status(), 200, await res.text());
    assert.equal((await res.json()).raters_see_external_ids, true);
  }
});

/** The task's external id, from the form's heading ("Batch · task ID"). */
async function externalIdOf(page) {
  const heading = await page.textContent("h1 .muted");
  return /task (\S+)/.exec(heading)[1];
}

/**
 * Whether the rater was shown B first, told apart without the server's word: the
 * response shown as A is compared with the task's own A on the lead's task page.
 */
async function shownSwapped(lead, batchId, externalId, shownA, shownB) {
  await lead.goto(`${env.server.base}/batches/${batchId}/tasks/${encodeURIComponent(externalId)}`);
  const [a, b] = [await responseText(lead, "A"), await responseText(lead, "B")];
  if (shownA === a && shownB === b) return false;
  if (shownA === b && shownB === a) return true;
  assert.fail(`the responses shown for ${externalId} are not the task's`);
}

test("a blackhat task rated by keyboard is stored canonical", async () => {
  const page = await signedIn("rater1");
  const lead = await signedIn("lead");
  await openNext(page, BLACKHAT);
  const externalId = await externalIdOf(page);
  const [shownA, shownB] = [await responseText(page, "A"), await responseText(page, "B")];
  // A and B executability, A and B instruction following (B's needs a word), A and B
  // correctness, then the side-by-side score with its explanation.
  await press(page, "1", "4", "1", "2");
  assert.equal(await focused(page), "b.instruction_following_explanation");
  await page.keyboard.type("It prints the list instead of returning it.");
  await press(page, "Escape", "j", "1", "1", "2");
  assert.equal(await focused(page), "sxs_explanation");
  await page.keyboard.type("A does what was asked; B only prints.");
  await press(page, "Escape", "j", "1", "1", "j");
  await submitByKeyboard(page);

  const { asShown, canonical, batchId } = await stored(page, lead, BLACKHAT, externalId);
  const shown = {
    a: { executability: "yes_fully", instruction_following: "no_issues", correctness: "no_issues" },
    b: { executability: "no_code", instruction_following: "minor_issues", correctness: "no_issues" },
  };
  for (const side of ["a", "b"]) {
    for (const [key, value] of Object.entries(shown[side])) assert.equal(asShown.answers[side][key], value, `${side}.${key} as shown`);
  }
  assert.equal(asShown.answers.sxs, 2);
  const swapped = await shownSwapped(lead, batchId, externalId, shownA, shownB);
  assert.equal(canonical.swapped, swapped, "the lead is told the orientation the rater saw");
  assert.equal(canonical.answers.sxs, swapped ? 6 : 2, "a swapped score is mirrored");
  const [canonA, canonB] = swapped ? ["b", "a"] : ["a", "b"];
  assert.equal(canonical.answers[canonB].instruction_following, "minor_issues", "the answers about B follow B");
  assert.equal(canonical.answers[canonB].instruction_following_explanation, "It prints the list instead of returning it.");
  assert.equal(canonical.answers[canonA].executability, "yes_fully");
  assert.deepEqual(await page.problems(), []);
  assert.deepEqual(await lead.problems(), []);
});

test("an additive 0-5 task rated by keyboard stores the score the form showed", async () => {
  const page = await signedIn("rater1");
  const lead = await signedIn("lead");
  await openNext(page, ADDITIVE);
  const externalId = await externalIdOf(page);
  assert.equal(await page.locator('section[aria-label="Response B"]').count(), 0, "one response");
  const score = page.locator('[data-derived-value="score"]');
  assert.equal(await score.textContent(), "–", "no score before every criterion is answered");
  // The five criteria are one ladder, whose levels are picked by their own digit: level 3
  // (relevant, substantial, useful); then the zero rule, its own question: no.
  assert.equal(await current(page), "ladder.score");
  assert.equal(await page.locator('input[name="relevant"]').count(), 0, "no criterion asked on its own");
  await press(page, "3");
  assert.equal(await page.locator('input[name="ladder.score"][value="3"]').isChecked(), true, "3 picks level 3");
  assert.equal(await score.textContent(), "–", "no score before the zero rule is answered");
  assert.equal(await current(page), "repetitive");
  await press(page, "2");
  assert.equal(await page.locator('input[name="repetitive"][value="false"]').isChecked(), true);
  const shownScore = await score.textContent();
  assert.equal(shownScore, "3");
  // The justification is a question asked in words: e reaches its box.
  assert.equal(await current(page), "justification");
  await press(page, "e");
  assert.equal(await focused(page), "justification");
  const justification = "It finds the bug and fixes it, but says nothing about the rows it skips.";
  await page.keyboard.type(justification);
  await press(page, "Escape");
  assert.equal(await focused(page), null, "Escape leaves the box");
  // Climbing one level more by keyboard works the score out again.
  await press(page, "k", "k");
  assert.equal(await current(page), "ladder.score");
  await press(page, "4");
  assert.equal(await page.locator('input[name="ladder.score"][value="4"]').isChecked(), true);
  assert.equal(await score.textContent(), "4");
  await submitByKeyboard(page);

  const { asShown, canonical } = await stored(page, lead, ADDITIVE, externalId);
  const expected = { relevant: true, substantial: true, useful: true, comprehensive: true, expert: false,
    repetitive: false, score: 4, justification };
  for (const [key, value] of Object.entries(expected)) {
    assert.deepEqual(asShown.answers[key], value, `${key} as the rater sees it`);
    assert.deepEqual(canonical.answers[key], value, `${key} as a lead sees it`);
  }
  assert.equal(canonical.swapped, false, "one response is never swapped");
  await page.goto(`${env.server.base}/ratings/${asShown.id}`);
  assert.equal(await page.textContent('[data-derived-value="score"]'), "4", "the rating's page shows the stored score");
  assert.equal(await page.locator('input[name="ladder.score"][value="4"]').isChecked(), true, "and the level reached");
  assert.deepEqual(await page.problems(), []);
  assert.deepEqual(await lead.problems(), []);
});

test("six-aspect tasks rated by keyboard are stored canonical, shown swapped or not", async () => {
  const page = await signedIn("rater2");
  const lead = await signedIn("lead");
  const aspects = ["helpfulness", "clarity", "factuality", "depth", "engagement", "safety"];
  const digits = { a: "1", tie: "2", b: "3" };
  const flip = { a: "b", b: "a", tie: "tie" };
  // As shown: A wins helpfulness and depth, B wins clarity and engagement, ties on the rest.
  const shown = { helpfulness: "a", clarity: "b", factuality: "tie", depth: "a", engagement: "b", safety: "tie" };
  const rationale = "A solves the problem; B reads better but misses the edge case.";
  const seen = new Set();
  // The batch shows A and B in a random order: rate until both orders were seen.
  for (let n = 0; n < 10 && seen.size < 2; n++) {
    await openNext(page, ASPECTS);
    const externalId = await externalIdOf(page);
    const [shownA, shownB] = [await responseText(page, "A"), await responseText(page, "B")];
    for (const aspect of aspects) {
      assert.equal(await current(page), aspect);
      await press(page, digits[shown[aspect]]);
      assert.equal(await page.locator(`input[name="${aspect}"][value="${shown[aspect]}"]`).isChecked(), true);
    }
    assert.equal(await current(page), "rationale");
    await press(page, "e");
    assert.equal(await focused(page), "rationale");
    await page.keyboard.type(rationale);
    await press(page, "Escape");
    await submitByKeyboard(page);

    const { asShown, canonical, batchId } = await stored(page, lead, ASPECTS, externalId);
    const swapped = await shownSwapped(lead, batchId, externalId, shownA, shownB);
    seen.add(swapped);
    assert.equal(canonical.swapped, swapped, "the lead is told the orientation the rater saw");
    for (const aspect of aspects) {
      assert.equal(asShown.answers[aspect], shown[aspect], `${aspect} as the rater saw it`);
      assert.equal(canonical.answers[aspect], swapped ? flip[shown[aspect]] : shown[aspect], `${aspect} canonical (swapped: ${swapped})`);
    }
    assert.equal(canonical.answers.rationale, rationale);
  }
  assert.equal(seen.size, 2, "a swapped task and one shown as stored were both rated");
  assert.deepEqual(await page.problems(), []);
  assert.deepEqual(await lead.problems(), []);
});

test("answers that contradict each other are sent only once the rater confirms them, and the rating records it", async () => {
  const page = await signedIn("lead");
  await openNext(page, BLACKHAT);
  const url = page.url();
  for (const side of ["a", "b"]) {
    await page.check(`input[name="${side}.executability"][value="yes_fully"]`);
    await page.check(`input[name="${side}.instruction_following"][value="no_issues"]`);
  }
  await page.check('input[name="a.correctness"][value="major_issues"]');
  await page.fill('textarea[name="a.correctness_explanation"]', "It returns the wrong element for empty input.");
  await page.check('input[name="b.correctness"][value="no_issues"]');
  await page.check('input[name="sxs"][value="2"]');
  await page.fill('textarea[name="sxs_explanation"]', "A reads better, even though it has the bug.");
  // The demo batch's classifications: one language, what is asked.
  await page.locator('input[name="classifications.language"]').first().check();
  await page.locator('input[name="classifications.kind"]').first().check();
  await page.click("#submit");
  const box = page.locator("#warnings-box");
  await box.waitFor({ state: "visible" });
  assert.match(await box.textContent(), /You prefer A, yet A has major correctness issues and B has none/);
  assert.match(await page.textContent("#error-summary.warning"), /tick each warning to confirm/);
  const confirm = page.locator('input[name="confirmed_warnings"][value="prefers-a-despite-major-issues"]');
  assert.equal(await confirm.isChecked(), false);
  // Sending again without ticking it sends nothing: the server's check answers, the
  // warning is shown again with its box focused, and no submission leaves the page.
  const submits = [];
  const watch = (request) => {
    if (request.method() === "POST" && request.url().endsWith("/submit")) submits.push(request.url());
  };
  page.on("request", watch);
  await Promise.all([
    page.waitForResponse((response) => response.url().endsWith("/check") && response.request().method() === "POST"),
    page.click("#submit"),
  ]);
  await page.waitForFunction(() => document.activeElement?.name === "confirmed_warnings");
  page.off("request", watch);
  assert.deepEqual(submits, [], "not sent while the warning is unconfirmed");
  assert.equal(page.url(), url);
  // Ticked, the rating is sent and records the warning.
  await confirm.check();
  await Promise.all([page.waitForNavigation(), page.click("#submit")]);
  assert.notEqual(page.url(), url);
  const list = await (await page.request.get(`${env.server.base}/api/v1/ratings?limit=100`)).json();
  const assignment = new URL(url).pathname.split("/").pop();
  const sent = list.items.find((item) => item.assignment_id === assignment);
  const rating = await (await page.request.get(`${env.server.base}/api/v1/ratings/${sent.id}`)).json();
  assert.deepEqual(rating.confirmed_warnings, ["prefers-a-despite-major-issues"]);
  assert.deepEqual(await page.problems(), []);
});

test("the additive justification counts its words against the 100-word limit, as the server does", async () => {
  const page = await signedIn("lead");
  await openNext(page, ADDITIVE);
  const counter = page.locator('[data-counter-for="justification"]');
  const box = page.locator('textarea[name="justification"]');
  // 101 words, some joined by an invisible space, a dash or a slash: the server counts
  // each, so the page does too.
  const words = Array.from({ length: 95 }, (_, i) => `w${i}`).join(" ");
  const text = `${words} a\u200bb c\u2014d e/f`;
  await box.fill(text);
  assert.match(await counter.textContent(), /^101 \/ 100 words · /);
  assert.equal(await counter.evaluate((el) => el.classList.contains("over")), true);
  // The server agrees: its check names the same count.
  const checked = await page.evaluate(async () => {
    const form = document.getElementById("rating-form");
    const response = await fetch(form.dataset.checkUrl, { method: "POST", body: new URLSearchParams(new FormData(form)), headers: { Accept: "application/json" } });
    return response.json();
  });
  assert.equal(checked.fields.justification, "must be at most 100 words (has 101)");
  // "100 words ." is 100: a stop alone is no word.
  await box.fill(`${Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ")} .`);
  assert.match(await counter.textContent(), /^100 \/ 100 words · /);
  assert.equal(await counter.evaluate((el) => el.classList.contains("over")), false);
  assert.deepEqual(await page.problems(), []);
});
