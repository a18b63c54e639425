// The rating form in a real browser, on `verdict demo`: keyboard-only rating, inline
// errors, skip, out of scope, and drafts that survive a reload.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);

/** A rater signed in and on the form of their next task. */
async function onNextTask(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  await Promise.all([page.waitForNavigation(), page.click('form[action$="/next"] button')]);
  await page.waitForSelector("#rating-form");
  return page;
}

const EXPLANATION = "It returns an expression, not the function the prompt asked for.";

async function press(page, ...keys) {
  for (const key of keys) await page.keyboard.press(key);
}

test("a rater fills and submits the whole form by keyboard", async () => {
  const page = await onNextTask("rater1");
  const first = page.url();
  // Questions in order: A and B executability, A and B instruction following,
  // A and B correctness, then the side-by-side score.
  await press(page, "1", "4", "1", "2");
  assert.equal(await page.evaluate(() => document.activeElement.name), "b.instruction_following_explanation");
  await page.keyboard.type(EXPLANATION);
  await press(page, "Escape", "j", "1", "1", "2");
  assert.equal(await page.evaluate(() => document.activeElement.name), "sxs_explanation");
  await page.keyboard.type("A answers the question; B does not.");
  // Then the demo batch's classifications: the language (one), what is asked (several).
  await press(page, "Escape", "j", "1", "1", "j");
  assert.equal(await page.locator('input[name="classifications.language"][value="python"]').isChecked(), true);
  assert.equal(await page.locator('input[name="classifications.kind"][value="bug fix"]').isChecked(), true);
  await page.keyboard.down("Control");
  await Promise.all([page.waitForNavigation(), page.keyboard.press("Enter")]);
  await page.keyboard.up("Control");
  await page.waitForSelector("#rating-form");
  assert.notEqual(page.url(), first, "straight to the next task");
  // The next task's page says what became of the last, once, with the way back to it.
  assert.match(await page.textContent("#flash"), /^Task \d+ submitted\. See or revise it$/);
  assert.match(await page.getAttribute("#flash a", "href"), /^\/ratings\/[0-9a-f-]{36}$/);
  await page.reload();
  assert.equal(await page.locator("#flash").count(), 0, "shown once");
  await page.goto(`${env.server.base}/ratings`);
  const rows = await page.locator("tbody tr").allTextContents();
  assert.equal(rows.length, 1);
  assert.match(rows[0], /rated\s+submitted/);
  assert.deepEqual(await page.problems(), []);
});

test("a missing required explanation shows an inline error and nothing is submitted", async () => {
  const page = await onNextTask("rater2");
  const url = page.url();
  await page.check('input[name="a.executability"][value="yes_partially"]');
  assert.equal(await page.isVisible('textarea[name="a.executability_explanation"]'), true, "the box appears when needed");
  assert.equal(await page.isVisible('textarea[name="b.executability_explanation"]'), false, "and only then");
  await page.click("#submit");
  // The script asks the server what it would refuse and shows the server's own words.
  const error = page.locator('[data-error-for="a.executability_explanation"]');
  await error.waitFor({ state: "visible" });
  assert.equal(await error.textContent(), "required when executability is yes_partially");
  assert.equal(await page.locator('[data-error-for="sxs"]').textContent(), "is required");
  assert.match(await page.textContent("#error-summary"), /answers need attention/);
  assert.equal(page.url(), url, "still on the form");
  await page.fill('textarea[name="a.executability_explanation"]', "It needs a database I do not have.");
  assert.equal(await error.isVisible(), false, "the error clears as the rater types");
  assert.deepEqual(await page.problems(), []);
});

test("the server's inline errors show when the browser's checks are bypassed", async () => {
  const page = await onNextTask("lead");
  await page.check('input[name="a.correctness"][value="major_issues"]');
  // Submit without the script's checks, as a browser without JavaScript would.
  await Promise.all([page.waitForNavigation(), page.evaluate(() => HTMLFormElement.prototype.submit.call(document.getElementById("rating-form")))]);
  const error = page.locator('[data-error-for="a.correctness_explanation"]');
  assert.equal(await error.textContent(), "required when correctness is major_issues");
  assert.equal(await page.locator('input[name="a.correctness"][value="major_issues"]').isChecked(), true, "what was chosen is kept");
  assert.deepEqual(await page.problems([422]), []);
});

test("skipping asks for a reason and moves on", async () => {
  const page = await onNextTask("rater1");
  const url = page.url();
  await press(page, "s");
  assert.equal(await page.locator("#skip").getAttribute("open"), "");
  await page.check('input[name="reason"][value="too_long"]');
  await page.fill('#skip-form textarea[name="note"]', "Needs a GPU to run.");
  await Promise.all([page.waitForNavigation(), page.click("#skip-submit")]);
  assert.notEqual(page.url(), url);
  assert.match(await page.textContent("#flash"), /^Task \d+ skipped: it goes to another rater\.$/);
  assert.equal(await page.locator("#flash a").count(), 0, "a skip has nothing to revise");
  await page.goto(`${env.server.base}/ratings`);
  assert.match((await page.locator("tbody tr").allTextContents()).join("\n"), /skipped\s+submitted/);
});

test("out of scope needs an explanation, then moves on", async () => {
  const page = await onNextTask("rater2");
  const url = page.url();
  await press(page, "o");
  assert.equal(await page.evaluate(() => document.activeElement.id), "oos-explanation");
  await page.click("#oos-submit");
  await page.locator('[data-error-for="explanation"]').waitFor({ state: "visible" });
  assert.equal(await page.textContent('[data-error-for="explanation"]'), "is required: say why the prompt is out of scope");
  assert.equal(page.url(), url);
  await page.fill("#oos-explanation", "The prompt asks for travel advice, not code.");
  await Promise.all([page.waitForNavigation(), page.click("#oos-submit")]);
  assert.notEqual(page.url(), url);
  assert.match(await page.textContent("#flash"), /^Task \d+ marked out of scope\. Undo: rate it after all$/);
  // Undo leads to the rating, where it can be turned into a full one.
  await Promise.all([page.waitForNavigation(), page.click("#flash a")]);
  assert.match(new URL(page.url()).pathname, /^\/ratings\/[0-9a-f-]{36}$/);
  assert.equal(await page.locator('input[name="outcome"][value="rated"]').count(), 1);
  await page.goto(`${env.server.base}/ratings`);
  assert.match((await page.locator("tbody tr").allTextContents()).join("\n"), /out of scope\s+submitted/);
});

test("Ctrl+Enter in the out-of-scope box marks the task out of scope, not the rating", async () => {
  const page = await onNextTask("rater1");
  const url = page.url();
  await press(page, "o");
  await page.keyboard.down("Control");
  await page.keyboard.press("Enter");
  await page.keyboard.up("Control");
  const error = page.locator('[data-error-for="explanation"]');
  await error.waitFor({ state: "visible" });
  assert.equal(await error.textContent(), "is required: say why the prompt is out of scope");
  assert.equal(await page.isVisible("#error-summary"), false, "no rating answers were asked for");
  assert.equal(page.url(), url);
  await page.keyboard.type("It asks for a cover letter, not code.");
  await page.keyboard.down("Control");
  await Promise.all([page.waitForNavigation(), page.keyboard.press("Enter")]);
  await page.keyboard.up("Control");
  assert.notEqual(page.url(), url);
  await page.goto(`${env.server.base}/ratings`);
  const rows = (await page.locator("tbody tr").allTextContents()).join("\n");
  assert.match(rows, /out of scope\s+submitted/);
  assert.deepEqual(await page.problems(), []);
});

test("every option has a key: 0 is the tenth, Shift and a digit the ones after", async () => {
  const page = await onNextTask("lead");
  const language = page.locator('[data-question="classifications.language"]');
  const current = () => page.evaluate(() => document.querySelector("#rating-form .current")?.dataset.question);
  for (let i = 0; i < 12 && (await current()) !== "classifications.language"; i++) await press(page, "j");
  assert.equal(await current(), "classifications.language");
  assert.equal(await language.locator("kbd").nth(9).textContent(), "0");
  assert.equal(await language.locator("kbd").nth(10).textContent(), "⇧1");
  await press(page, "0");
  assert.equal(await page.locator('input[name="classifications.language"][value="dockerfile"]').isChecked(), true);
  await press(page, "k", "Shift+Digit1");
  assert.equal(await page.locator('input[name="classifications.language"][value="none"]').isChecked(), true, "the eleventh");
  assert.deepEqual(await page.problems(), []);
});

test("Copy and Wrap stay in their strip above each block, and the keyboard scrolls a block", async () => {
  const page = await onNextTask("rater2");
  for (const [width, height] of [[1366, 900], [390, 844]]) {
    await page.setViewportSize({ width, height });
    const boxes = await page.evaluate(() =>
      [...document.querySelectorAll(".rendered .code-box")].map((box) => {
        const outer = box.getBoundingClientRect();
        const code = box.querySelector(":scope > .code");
        const buttons = [...box.querySelectorAll(":scope > .code-tools > button")];
        return {
          inside: buttons.every((b) => {
            const r = b.getBoundingClientRect();
            return r.left >= outer.left && r.right <= outer.right && r.top >= outer.top && r.bottom <= code.getBoundingClientRect().top;
          }),
          oneLine: buttons.every((b) => b.getBoundingClientRect().height < 2.2 * parseFloat(getComputedStyle(b).fontSize)),
          focusable: code.tabIndex === 0,
        };
      }),
    );
    assert.ok(boxes.length > 0, "the demo task has code");
    for (const box of boxes) assert.deepEqual(box, { inside: true, oneLine: true, focusable: true }, `at ${width}px`);
  }
  // With wrapping off, some block is wider than a phone: the arrow keys scroll it.
  if (await page.locator(".rendered .code.wrap").count()) await press(page, "w");
  const wide = page.locator(".rendered .code").filter({ has: page.locator(".src") });
  const index = await wide.evaluateAll((blocks) => blocks.findIndex((b) => b.scrollWidth > b.clientWidth));
  assert.ok(index >= 0, "the task's code is wider than a phone");
  const block = wide.nth(index);
  await block.focus();
  await press(page, "ArrowRight", "ArrowRight", "ArrowRight");
  // Keyboard scrolling is animated: wait for it to move.
  await page.waitForFunction((b) => b.scrollLeft > 0, await block.elementHandle(), { timeout: 5000 });
  assert.deepEqual(await page.problems(), []);
});

/** Each code block of the page: whether it wraps, scrolls sideways, and its lines. */
const codeBlocks = (page) =>
  page.evaluate(() =>
    [...document.querySelectorAll(".rendered .code")].map((code) => ({
      wrap: code.classList.contains("wrap"),
      pressed: code.closest(".code-box").querySelector(".wrap-toggle").getAttribute("aria-pressed"),
      scrolls: code.scrollWidth > code.clientWidth + 1,
      lines: code.querySelectorAll(".line").length,
      sourceLines: code.querySelector(".src code").textContent.split("\n").length,
      wrapped: code.querySelectorAll(".line.wrapped").length,
      // Each line's number sits on the line's first row, at the block's left edge.
      numbered: [...code.querySelectorAll(".line")].every((line) => {
        const number = getComputedStyle(line, "::before");
        return number.content === "counter(line)" && number.display === "inline-block";
      }),
    })));

test("at 1366x900 long code lines wrap under their numbers, w scrolls them instead, and the choice is remembered", async () => {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, "rater2", env.server.passwords.rater2);
  await Promise.all([page.waitForNavigation(), page.click('form[action$="/next"] button')]);
  await page.waitForSelector("#rating-form");
  // Never chosen: the blocks too narrow for their code wrap, and none scrolls sideways.
  let blocks = await codeBlocks(page);
  assert.ok(blocks.some((b) => b.wrap), "some block of the demo task needs wrapping at this width");
  for (const b of blocks) {
    assert.equal(b.scrolls, false, "no sideways scrolling");
    assert.equal(b.lines, b.sourceLines, "one numbered line per line of code");
    assert.equal(b.numbered, true);
    assert.equal(b.pressed, String(b.wrap));
  }
  assert.ok(blocks.some((b) => b.wrapped > 0), "the lines that wrap are marked");
  // The mark of a wrapped line is on its second row, in the gutter.
  const mark = await page.evaluate(() => {
    const line = document.querySelector(".rendered .code .line.wrapped");
    const after = getComputedStyle(line, "::after");
    return { content: after.content, top: parseFloat(after.top), row: parseFloat(getComputedStyle(line).lineHeight) };
  });
  assert.equal(mark.content, '"\u21aa"');
  assert.ok(Math.abs(mark.top - mark.row) < 1, `on the second row (${mark.top} vs ${mark.row})`);
  // w: every block scrolls instead; the same again after a reload, and w turns it back.
  await press(page, "w");
  blocks = await codeBlocks(page);
  assert.ok(blocks.every((b) => !b.wrap && b.pressed === "false" && b.wrapped === 0));
  assert.ok(blocks.some((b) => b.scrolls), "unwrapped, some line is wider than its pane");
  await page.reload();
  await page.waitForSelector("#rating-form");
  assert.ok((await codeBlocks(page)).every((b) => !b.wrap), "remembered");
  await page.locator(".rendered .wrap-toggle").first().click();
  blocks = await codeBlocks(page);
  assert.ok(blocks.every((b) => b.wrap && !b.scrolls), "the button wraps every block");
  // Copying takes the code only: no line numbers, no marks, no button labels.
  const copied = await page.evaluate(() => {
    const code = document.querySelector(".rendered .code");
    const selection = getSelection();
    selection.selectAllChildren(code);
    const text = selection.toString();
    selection.removeAllRanges();
    return { text, source: code.querySelector(".src code").textContent };
  });
  assert.equal(copied.text.trim(), copied.source.trim());
  assert.deepEqual(await page.problems(), []);
});

test("a and b give one response the full width of the pane, and the same key brings both back", async () => {
  const page = await onNextTask("rater2");
  await page.setViewportSize({ width: 1366, height: 900 });
  const widths = () =>
    page.evaluate(() =>
      [...document.querySelectorAll(".responses > .response")].map((r) => (r.checkVisibility() ? Math.round(r.getBoundingClientRect().width) : 0)));
  const [a, b] = await widths();
  assert.ok(a > 0 && b > 0 && Math.abs(a - b) < 4, `side by side (${a}, ${b})`);
  await press(page, "a");
  const [focusedA, hiddenB] = await widths();
  assert.ok(focusedA > 1.8 * a, `A takes the pane (${focusedA} against ${a})`);
  assert.equal(hiddenB, 0, "B is out of the way");
  assert.equal(await page.locator('.focus-toggle[data-side="a"]').getAttribute("aria-pressed"), "true");
  await press(page, "b");
  const [hiddenA, focusedB] = await widths();
  assert.ok(hiddenA === 0 && focusedB > 1.8 * b, "b switches to B");
  await press(page, "b");
  assert.deepEqual((await widths()).map((w) => w > 0), [true, true], "the same key shows both");
  await page.locator('.focus-toggle[data-side="a"]').click();
  assert.equal((await widths())[1], 0, "the button does the same");
  await page.locator('.focus-toggle[data-side="a"]').click();
  // Typing a or b in a text box is text, not a focus change.
  await press(page, "e");
  await page.keyboard.type("ab");
  assert.deepEqual((await widths()).map((w) => w > 0), [true, true]);
  assert.equal(await page.evaluate(() => document.activeElement.value), "ab");
  assert.deepEqual(await page.problems(), []);
});

test("past the 30 minutes, the form suggests skipping because it takes too long", async () => {
  const page = await onNextTask("lead");
  assert.equal(await page.isVisible("#over-guidance"), false, "not before");
  // 29:57 of active time saved with the draft, as if the rater had worked that long.
  const saved = await page.evaluate(async () => {
    const form = document.getElementById("rating-form");
    const body = new URLSearchParams(new FormData(form));
    body.set("time_spent_s", "1797");
    return (await fetch(form.dataset.draftUrl, { method: "POST", body, headers: { Accept: "application/json" } })).status;
  });
  assert.equal(saved, 200);
  await page.reload();
  await page.locator("#over-guidance").waitFor({ state: "visible", timeout: 10000 });
  await page.click("#suggest-skip");
  assert.equal(await page.locator("#skip").getAttribute("open"), "");
  assert.equal(await page.locator('#skip-form input[name="reason"][value="too_long"]').isChecked(), true);
  const url = page.url();
  await Promise.all([page.waitForNavigation(), page.click("#skip-submit")]);
  assert.notEqual(page.url(), url);
  assert.deepEqual(await page.problems(), []);
});

test("a draft is saved as the rater works and is there after a reload", async () => {
  const page = await onNextTask("rater1");
  await page.check('input[name="a.executability"][value="no"]');
  await page.fill('textarea[name="a.executability_explanation"]', "It reads from a file only the user has.");
  await page.check('input[name="sxs"][value="5"]');
  await page.waitForFunction(() => document.getElementById("save-status").textContent.startsWith("Draft saved"));
  await page.reload();
  await page.waitForSelector("#rating-form");
  assert.equal(await page.locator('input[name="a.executability"][value="no"]').isChecked(), true);
  assert.equal(await page.inputValue('textarea[name="a.executability_explanation"]'), "It reads from a file only the user has.");
  assert.equal(await page.locator('input[name="sxs"][value="5"]').isChecked(), true);
  assert.equal(await page.isVisible('textarea[name="a.executability_explanation"]'), true);
  assert.deepEqual(await page.problems(), []);
});

test("the timer counts active time against the 30 minutes", async () => {
  const page = await onNextTask("rater2");
  const before = await page.textContent("#timer-value");
  await page.waitForTimeout(2200);
  const later = await page.textContent("#timer-value");
  assert.notEqual(later, before);
  assert.match(await page.textContent("#timer"), /\/ 30:00/);
});

test("issue categories show for a response with issues, clear when it has none, and are sent", async () => {
  const page = await onNextTask("lead");
  const first = page.url();
  const kinds = page.locator('[data-question="a.issue_categories"]');
  const box = (value) => page.locator(`input[name="a.issue_categories"][value="${value}"]`);
  assert.equal(await kinds.isVisible(), false, "not asked before correctness has issues");
  assert.match(await page.textContent(".applies-note"), /Asked when Correctness is Minor issue\(s\) or Major issue\(s\)/);
  await page.check('input[name="a.correctness"][value="minor_issues"]');
  assert.equal(await kinds.isVisible(), true);
  await box("safety").check();
  // By keyboard: the question's own digits tick and untick its boxes.
  await box("performance").focus();
  await press(page, "4");
  assert.equal(await box("documentation").isChecked(), true);
  await page.check('input[name="a.correctness"][value="no_issues"]');
  assert.equal(await kinds.isVisible(), false, "hidden again");
  assert.equal(await box("safety").isChecked(), false, "and cleared, as the server takes no categories then");
  await page.check('input[name="a.correctness"][value="major_issues"]');
  await page.fill('textarea[name="a.correctness_explanation"]', "The query is built by pasting the user's input into it.");
  await box("safety").check();
  await box("functionality").check();
  await page.waitForFunction(() => document.getElementById("save-status").textContent.startsWith("Draft saved"));
  await page.reload();
  await page.waitForSelector("#rating-form");
  assert.equal(await kinds.isVisible(), true, "the draft's answers show it on a reload");
  assert.equal(await box("safety").isChecked(), true);
  assert.equal(await box("functionality").isChecked(), true);
  assert.equal(await page.locator('[data-question="b.issue_categories"]').isVisible(), false);
  // The rest of the form, then send it.
  for (const [name, value] of [
    ["a.executability", "yes_fully"], ["b.executability", "yes_fully"],
    ["a.instruction_following", "no_issues"], ["b.instruction_following", "no_issues"],
    ["b.correctness", "no_issues"], ["sxs", "6"],
  ]) await page.check(`input[name="${name}"][value="${value}"]`);
  await page.fill('textarea[name="sxs_explanation"]', "B is safe to use; A opens the database to injection.");
  await page.locator('input[name="classifications.language"]').first().check();
  await page.locator('input[name="classifications.kind"]').first().check();
  await Promise.all([page.waitForNavigation(), page.click("#submit")]);
  await page.waitForSelector("#rating-form");
  assert.notEqual(page.url(), first, "taken, and on to the next task");
  assert.deepEqual(await page.problems(), []);
});

test("a refused form lists its errors in page order and the first field in need has focus", async () => {
  const page = await onNextTask("rater2");
  const url = page.url();
  await page.click("#submit");
  await page.locator(".error-list li").first().waitFor();
  const items = await page.locator(".error-list li").allTextContents();
  // The form's own order: running the code (A, then B), then instructions, correctness and
  // the score; the server lists the fields by name, which would put A's correctness first.
  assert.deepEqual(items.slice(0, 6), [
    "1. Could you run the code? · Response A: is required",
    "1. Could you run the code? · Response B: is required",
    "2. Instruction following · Response A: is required",
    "2. Instruction following · Response B: is required",
    "3. Correctness · Response A: is required",
    "3. Correctness · Response B: is required",
  ]);
  assert.equal(items[6], "5. Side by side: is required");
  assert.equal(await page.evaluate(() => document.activeElement.name), "a.executability", "the first field in need has focus");
  // A link in the list takes the rater to its field.
  await page.locator(".error-list li a").nth(4).click();
  assert.equal(await page.evaluate(() => document.activeElement.name), "a.correctness");
  assert.equal(page.url(), url, "still on the form");

  // The server's own page, sent without the script's check, lists them the same way.
  await Promise.all([page.waitForNavigation(), page.evaluate(() => HTMLFormElement.prototype.submit.call(document.getElementById("rating-form")))]);
  await page.locator(".error-list li").first().waitFor();
  assert.deepEqual(await page.locator(".error-list li").allTextContents(), items);
  assert.equal(await page.evaluate(() => document.activeElement.name), "a.executability");
  assert.deepEqual(await page.problems([422]), []);
});

test("text boxes count words and characters as the server does, live", async () => {
  const page = await onNextTask("rater1");
  const counter = page.locator('[data-counter-for="a.correctness_explanation"]');
  assert.equal(await counter.isVisible(), false, "no count for a box that is not shown");
  await page.check('input[name="a.correctness"][value="minor_issues"]');
  assert.equal(await counter.textContent(), "0 words · 0 characters · at least 20 characters");
  await page.fill('textarea[name="a.correctness_explanation"]', "Too short.");
  assert.equal(await counter.textContent(), "2 words · 10 characters · at least 20 characters");
  assert.equal(await counter.evaluate((el) => el.classList.contains("short")), true);
  // Words joined by an invisible space, a dash or a slash are separate words; a stop
  // standing alone is none: as the server counts them.
  const joined = ["one\u200btwo", "three\u2014four", "five/six", "seven ."].join(" ");
  await page.fill('textarea[name="a.correctness_explanation"]', joined);
  assert.equal(await counter.textContent(), `7 words · ${[...joined].length} characters`);
  assert.equal(await counter.evaluate((el) => el.classList.contains("short")), false);
  assert.deepEqual(await page.problems(), []);
});

test("the shortcuts and the out-of-scope box open over the page and move nothing", async () => {
  const page = await onNextTask("rater2");
  const where = () => page.evaluate(() => {
    const box = (selector) => document.querySelector(selector).getBoundingClientRect();
    return {
      answers: box("#answers-pane").top,
      form: box(".form-pane").top,
      question: box("#rating-form .question").top,
      bar: box("#rating-form .actions").top,
      barHeight: box("#rating-form .actions").height,
    };
  });
  const still = (moved, what) => {
    for (const [part, at] of Object.entries(before)) {
      assert.ok(Math.abs(moved[part] - at) <= 3, `${what}: ${part} moved from ${at} to ${moved[part]}`);
    }
  };
  const before = await where();
  await press(page, "?");
  assert.equal(await page.isVisible("#shortcuts"), true);
  still(await where(), "the shortcuts");
  await press(page, "?");
  await page.click("#out-of-scope summary");
  assert.equal(await page.isVisible("#oos-explanation"), true);
  still(await where(), "the out-of-scope box");
  // Its box sits above the bar, in sight.
  const panel = await page.locator(".oos-panel").boundingBox();
  assert.ok(panel.y >= 0 && panel.y + panel.height <= before.bar + 3, `${JSON.stringify(panel)} above ${before.bar}`);
  assert.deepEqual(await page.problems(), []);
});

test("the 1-7 score is one row of tiles on a 1366-pixel screen", async () => {
  const page = await onNextTask("rater1");
  await page.setViewportSize({ width: 1366, height: 900 });
  const tops = await page.locator('input[name="sxs"]').evaluateAll((inputs) =>
    inputs.map((input) => Math.round(input.closest(".option").getBoundingClientRect().top)));
  assert.equal(tops.length, 7);
  assert.deepEqual(new Set(tops).size, 1, `one row: ${tops}`);
  const lefts = await page.locator('input[name="sxs"]').evaluateAll((inputs) =>
    inputs.map((input) => input.closest(".option").getBoundingClientRect().left));
  assert.deepEqual([...lefts].sort((x, y) => x - y), lefts, "lowest to highest, left to right");
});

test("the first Tab offers a way past the menu and the code blocks, straight to the form", async () => {
  const page = await onNextTask("rater2");
  await page.evaluate(() => document.activeElement.blur());
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Skip to the form");
  assert.equal(await page.locator(".skip-link").isVisible(), true, "seen when it has focus");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.name), "a.executability", "the first question");
  assert.deepEqual(await page.problems(), []);
});

test("the guidelines open over the page with g, and each option's definition shows on hover and focus", async () => {
  const page = await onNextTask("rater2");
  await page.setViewportSize({ width: 1366, height: 900 });
  const where = () => page.evaluate(() => {
    const q = document.querySelector(".question.current").getBoundingClientRect();
    return { top: Math.round(q.top), left: Math.round(q.left) };
  });
  const before = await where();
  await press(page, "g");
  const text = page.locator("#guidelines .guidelines-text");
  assert.equal(await text.isVisible(), true, "g opens them");
  assert.ok((await text.textContent()).length > 200, "the rubric's whole guidelines");
  assert.deepEqual(await where(), before, "the form does not move");
  const box = await text.boundingBox();
  assert.ok(box.y + box.height <= 900 && box.x + box.width <= 1366, "on the screen");
  await press(page, "Escape");
  assert.equal(await text.isVisible(), false, "Esc closes them");
  await press(page, "g", "g");
  assert.equal(await text.isVisible(), false, "g again closes them too");
  // An option's definition: not shown until pointed at, then beside it, as the rubric words it.
  const option = page.locator('input[name="a.correctness"][value="minor_issues"]');
  const definition = page.locator(`[id="${await option.getAttribute("aria-describedby")}"]`);
  assert.equal(await definition.isVisible(), false);
  await page.locator('label.option:has(input[name="a.correctness"][value="minor_issues"])').hover();
  assert.equal(await definition.isVisible(), true, "on hover");
  const rubric = await page.evaluate(async () => (await (await fetch("/api/v1/rubrics/blackhat")).json()));
  const words = rubric.questions.find((q) => q.key === "correctness").answer.options.find((o) => o.value === "minor_issues").definition;
  assert.equal((await definition.textContent()).replace(/\s+/g, " ").trim().slice(0, 40), words.replace(/`/g, "").replace(/\s+/g, " ").slice(0, 40));
  await page.mouse.move(0, 0);
  assert.equal(await definition.isVisible(), false);
  await option.focus();
  assert.equal(await definition.isVisible(), true, "on focus, and named as the option's description");
  assert.deepEqual(await page.problems(), []);
});
