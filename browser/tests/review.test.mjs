// A lead's review in a real browser, on `verdict demo`: the batch page, returning a
// rating with a comment, the rater seeing it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);

async function signedIn(username, viewport = { width: 1400, height: 1000 }) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize(viewport);
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

/**
 * Has `username` take and submit `count` tasks of the demo blackhat batch through the
 * API, from their signed-in page (the session cookie and its CSRF token).
 */
async function submitThroughApi(username, count, sxs) {
  const page = await signedIn(username);
  const done = await page.evaluate(async ({ count, sxs }) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const headers = { "content-type": "application/json", "x-csrf-token": token };
    const batches = await (await fetch("/api/v1/batches")).json();
    const batch = (batches.items ?? batches).find((b) => b.name === "Demo: coding answers");
    const ids = [];
    for (let i = 0; i < count; i++) {
      const next = await (await fetch(`/api/v1/batches/${batch.id}/next`, { method: "POST", headers })).json();
      const answers = {
        a: { executability: "yes_fully", instruction_following: "no_issues", correctness: "no_issues" },
        b: { executability: "no_code", instruction_following: "not_applicable", correctness: "not_applicable" },
        sxs, sxs_explanation: "A answers the prompt with working code; B has none.",
        classifications: { language: "python", kind: ["bug fix"] },
      };
      const submitted = await fetch(`/api/v1/assignments/${next.assignment_id}/submit`,
        { method: "POST", headers, body: JSON.stringify(answers) });
      const body = await submitted.json();
      ids.push(body.rating_id ?? JSON.stringify(body));
    }
    return ids;
  }, { count, sxs });
  assert.ok(done.every((id) => /^[0-9a-f-]{36}$/.test(id)), `${username} submitted: ${done}`);
  await page.context().close();
  return done;
}

// On a laptop and on a phone: each run filters to one rater, who has three ratings
// waiting (the phone's run counts the one the laptop's left), and leaves the other's one.
for (const [screen, viewport, rater, other, before] of [
  ["laptop", { width: 1366, height: 900 }, "rater1", "rater2", 0],
  ["phone", { width: 390, height: 844 }, "rater2", "rater1", 1],
]) {
test(`${screen}: a lead filters the queue and works it with the keyboard alone`, async () => {
  await submitThroughApi(rater, 3 - before, 2);
  await submitThroughApi(other, 1, 3);
  const lead = await signedIn("lead", viewport);
  await lead.goto(`${env.server.base}/review`);
  // Filter to the rater's ratings: type the name and press Enter. No clicks from here on.
  await lead.focus('input[name="rater"]');
  await lead.keyboard.type(rater);
  await Promise.all([lead.waitForNavigation(), lead.keyboard.press("Enter")]);
  assert.equal(new URL(lead.url()).searchParams.get("rater"), rater);
  assert.match(await lead.textContent(".range"), /1–3 of 3/);
  // The batch shows A and B in a random order and stores the score canonically, so a
  // shown "A better" (2) reads "B better" (6) where the rater saw them swapped.
  for (const preview of await lead.locator(".review-queue tbody td.preview").allTextContents()) {
    assert.match(preview, /(A|B) (slightly )?better/, "the score's label in each row");
  }

  // j moves to the first row (its link takes focus), Enter opens it.
  await lead.keyboard.press("j");
  assert.equal(await lead.locator(".review-queue tbody tr.current").count(), 1);
  await Promise.all([lead.waitForNavigation(), lead.keyboard.press("Enter")]);
  const visited = [new URL(lead.url()).pathname];
  assert.match(visited[0], /^\/review\/[0-9a-f-]{36}$/);
  assert.match(await lead.textContent(".keys-help"), /accept/);

  // a accepts and lands on the next rating of the same filtered queue, which says what
  // was done, once.
  await Promise.all([lead.waitForNavigation(), lead.keyboard.press("a")]);
  let at = new URL(lead.url());
  assert.match(await lead.textContent("#flash"), new RegExp(`^Accepted ${rater}'s rating of task \\S+\\. Open it$`));
  assert.equal(new URL(await lead.getAttribute("#flash a", "href"), env.server.base).pathname, visited[0]);
  assert.match(at.pathname, /^\/review\/[0-9a-f-]{36}$/);
  assert.equal(at.searchParams.get("rater"), rater, "the filters travel along");
  assert.ok(!visited.includes(at.pathname));
  visited.push(at.pathname);

  // r picks "return" and puts the cursor in the comment; Ctrl+Enter sends it, but not
  // before there is a comment.
  await lead.keyboard.press("r");
  assert.equal(await lead.evaluate(() => document.activeElement?.name), "comment");
  await lead.keyboard.press("Control+Enter");
  assert.ok(await lead.isVisible("#comment-needed"), "returning without a comment is stopped");
  assert.equal(new URL(lead.url()).pathname, visited[1]);
  await lead.keyboard.type("Say which line of B fails.");
  await Promise.all([lead.waitForNavigation(), lead.keyboard.press("Control+Enter")]);
  at = new URL(lead.url());
  assert.match(at.pathname, /^\/review\/[0-9a-f-]{36}$/);
  assert.ok(!visited.includes(at.pathname));
  visited.push(at.pathname);

  // x asks before it rejects: Esc leaves the rating as it was, x and Enter reject it.
  await lead.keyboard.press("x");
  const asked = lead.locator("#reject-confirm");
  assert.equal(await asked.isVisible(), true, "a rejection is confirmed first");
  assert.equal(await lead.evaluate(() => document.activeElement.id), "reject-yes");
  await lead.keyboard.press("a"); // no other decision while it asks
  await lead.keyboard.press("Escape");
  assert.equal(await asked.isVisible(), false);
  assert.equal(new URL(lead.url()).pathname, visited[2], "nothing was sent");
  await lead.keyboard.press("x");
  // The filtered queue is then empty and says so.
  await Promise.all([lead.waitForNavigation(), lead.keyboard.press("Enter")]);
  at = new URL(lead.url());
  assert.equal(at.pathname, "/review");
  assert.equal(at.searchParams.get("rater"), rater);
  assert.match(await lead.textContent("main"), /Queue empty/);
  assert.match(await lead.textContent("#flash"), /^Rejected .*: the task goes to another rater\. Open it$/);
  await lead.reload();
  assert.equal(await lead.locator("#flash").count(), 0, "shown once");

  const statuses = await lead.evaluate(async (ids) => Promise.all(ids.map(async (path) => {
    const id = path.split("/").pop();
    return (await (await fetch(`/api/v1/ratings/${id}`)).json()).status;
  })), visited);
  assert.deepEqual(statuses, ["accepted", "returned", "rejected"]);
  const waiting = await lead.evaluate(async () => (await (await fetch("/api/v1/review")).json()).total);
  assert.equal(waiting, 1, `${other}'s rating still waits`);
  assert.deepEqual(await lead.problems(), []);
});
}

test("the review page is built like the form: responses beside the rating, a comment box by each answer, the decision in sight, Ctrl+Enter from any box", async () => {
  const [id] = await submitThroughApi("rater1", 1, 3);
  const lead = await signedIn("lead", { width: 1366, height: 900 });
  await lead.goto(`${env.server.base}/review/${id}`);
  const seen = await lead.evaluate(() => {
    const inView = (el) => {
      const r = el.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth && r.height > 0;
    };
    const responses = document.querySelector("#answers-pane .responses").getBoundingClientRect();
    const table = document.getElementById("rating-answers").getBoundingClientRect();
    return {
      // The responses are on the left and start on the first screen; the rating is on the right.
      responsesFirst: responses.top < window.innerHeight * 0.6,
      side: responses.right <= table.left,
      decision: inView(document.querySelector("#decision-form button[type=submit]")) && inView(document.querySelector('input[name="decision"][value="reject"]')),
      pageScrolls: document.documentElement.scrollHeight > window.innerHeight + 1,
    };
  });
  assert.deepEqual(seen, { responsesFirst: true, side: true, decision: true, pageScrolls: false });
  // Each answer's comment boxes sit in its row, A's before B's as the table reads.
  const rows = await lead.evaluate(() =>
    [...document.querySelectorAll("#rating-answers tbody tr")].map((tr) => [
      tr.querySelector("th").textContent.trim(),
      [...tr.querySelectorAll("textarea")].map((t) => t.name),
    ]));
  const correctness = rows.find(([label]) => /^A · Correctness$|^Correctness \(A\)$|A.*Correctness/.test(label));
  assert.ok(correctness, JSON.stringify(rows));
  assert.deepEqual(correctness[1].map((n) => n.replace(/^field_comment\.[ab]\./, "")), ["correctness", "correctness_explanation"]);
  const order = rows.filter(([, names]) => names.length).map(([label]) => label);
  assert.ok(order.findIndex((l) => /A/.test(l)) <= order.findIndex((l) => /B ·|\(B\)/.test(l)), order.join(" | "));
  // A comment by an answer, then Ctrl+Enter from that box: accepted, the comment kept.
  const box = lead.locator(`#rating-answers textarea[name="${correctness[1][0]}"]`);
  await box.fill("Say which input fails.");
  await Promise.all([lead.waitForNavigation(), box.press("Control+Enter")]);
  const stored = await lead.evaluate(async (rating) => (await (await fetch(`/api/v1/ratings/${rating}`)).json()), id);
  assert.equal(stored.status, "accepted");
  assert.deepEqual(Object.values(stored.review_fields ?? stored.review?.fields ?? {}), ["Say which input fails."], JSON.stringify(stored));
  assert.deepEqual(await lead.problems(), []);
});

test("the queue filters by the form's labelled answers, and ticked ratings are returned or rejected together", async () => {
  await submitThroughApi("rater2", 2, 5);
  const lead = await signedIn("lead", { width: 1366, height: 900 });
  await lead.goto(`${env.server.base}/review`);
  await lead.selectOption('select[name="batch"]', { label: "Demo: coding answers" });
  await Promise.all([lead.waitForNavigation(), lead.click('.queue-filters button[type="submit"]')]);
  // The answer filter lists the picked question's answers, as the form words them.
  const answer = lead.locator("#answer-filter");
  await lead.selectOption('select[name="question"]', "a.correctness");
  const offered = await answer.evaluate((select) =>
    [...select.querySelectorAll("optgroup:not([disabled]) option")].map((o) => o.textContent));
  assert.deepEqual(offered.slice(0, 3), ["No issues", "Minor issue(s)", "Major issue(s)"]);
  // The one "No issues" on offer is the picked question's (the others are hidden).
  await answer.evaluate((select) => {
    [...select.querySelectorAll("optgroup:not([disabled]) option")].find((o) => o.textContent === "No issues").selected = true;
  });
  await lead.fill('input[name="rater"]', "rater2");
  await Promise.all([lead.waitForNavigation(), lead.click('.queue-filters button[type="submit"]')]);
  const url = new URL(lead.url());
  assert.equal(url.searchParams.get("answer"), "no_issues", "the stored value goes in the address");
  assert.equal(await lead.locator("#answer-filter option:checked").textContent(), "No issues", "and the label shows");
  // (The batch shows A and B in a random order, so only some of rater2's ratings store
  // "no issues" under A.) Then every waiting rating of rater2's in the batch, to tick.
  const api = await lead.evaluate(async (query) => (await (await fetch(`/api/v1/review?${query}`)).json()).total, url.searchParams.toString());
  assert.equal(await lead.locator(".review-queue tbody tr").count(), api, "the rows the API gives for the stored value");
  url.searchParams.delete("question");
  url.searchParams.delete("answer");
  await lead.goto(url.toString());
  const shown = await lead.locator(".review-queue tbody tr").count();
  assert.ok(shown >= 2, `rater2's waiting ratings (${shown})`);
  // j and x tick the first two by keyboard.
  await lead.keyboard.press("j");
  await lead.keyboard.press("x");
  await lead.keyboard.press("j");
  await lead.keyboard.press("x");
  assert.equal(await lead.textContent("#bulk-count"), "2 ticked: decide them together.");
  const ticked = await lead.$$eval(".review-queue .tick:checked", (ticks) => ticks.map((t) => t.value.split(":")[0]));
  // Returning needs a comment: without one, nothing changes and the queue says why.
  await Promise.all([lead.waitForNavigation(), lead.click('button[name="decision"][value="return"]')]);
  assert.match(await lead.textContent("#flash"), /^Nothing was changed: the comment is required to return ratings/);
  await lead.keyboard.press("j");
  await lead.keyboard.press("x");
  await lead.keyboard.press("j");
  await lead.keyboard.press("x");
  await lead.fill('#bulk-form textarea[name="comment"]', "Explain the B side too.");
  await Promise.all([lead.waitForNavigation(), lead.click('button[name="decision"][value="return"]')]);
  assert.equal(await lead.textContent("#flash"), "Returned 2 ratings to their raters, with your comment.");
  assert.equal(new URL(lead.url()).searchParams.get("rater"), "rater2", "back under the same filters");
  const statuses = await lead.evaluate(async (ids) => Promise.all(ids.map(async (id) =>
    (await (await fetch(`/api/v1/ratings/${id}`)).json()).status)), ticked);
  assert.deepEqual(statuses, ["returned", "returned"]);
  // Rejecting ticked ratings asks first; Cancel leaves them.
  if (await lead.locator(".review-queue .tick").count()) {
    await lead.locator("#tick-all").check();
    await lead.click("#bulk-reject");
    assert.equal(await lead.locator("#bulk-reject-confirm").isVisible(), true);
    await lead.click("#bulk-reject-no");
    assert.equal(await lead.locator("#bulk-reject-confirm").isVisible(), false);
  }
  assert.deepEqual(await lead.problems(), []);
});
