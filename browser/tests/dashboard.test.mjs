// The batch dashboard of each built-in rubric, with ratings in it, on a laptop screen:
// the charts speak the form's words (no stored values such as `major_issues`), ordered
// options are drawn in an ordered colour scale, a summary table comes before the charts,
// and no words of any chart overlap each other or leave their chart.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);
const BATCHES = ["Demo: coding answers", "Demo: one answer scored 0-5", "Demo: answers compared on six aspects"];
const SENTENCE = "The answer handles the case the prompt names and explains each step it takes clearly.";

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

/**
 * Has `username` rate `count` tasks of each demo batch through the API, answers made
 * from the rubric's own document (each task's answers differ, so the charts have spread).
 */
async function rateThroughApi(username, count, seed) {
  const page = await signedIn(username);
  const done = await page.evaluate(async ({ batches, count, seed, sentence }) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const headers = { "content-type": "application/json", "x-csrf-token": token };
    const listed = await (await fetch("/api/v1/batches")).json();
    const results = [];
    for (const name of batches) {
      const batch = (listed.items ?? listed).find((b) => b.name === name);
      const rubric = await (await fetch(`/api/v1/rubrics/${batch.rubric}`)).json();
      const ladder = (rubric.derived ?? []).find((d) => d.ladder);
      for (let i = 0; i < count; i++) {
        const pick = seed + i;
        const next = await (await fetch(`/api/v1/batches/${batch.id}/next`, { method: "POST", headers })).json();
        const answer = (q) => {
          const a = q.answer;
          if (ladder && ladder.sum_of.includes(q.key)) return ladder.sum_of.indexOf(q.key) < pick % (ladder.sum_of.length + 1);
          if (ladder && (ladder.zero_when ?? []).includes(q.key)) return false;
          if (a.type === "choice") return a.options[pick % a.options.length].value;
          if (a.type === "scale") return a.min + (pick % (a.max - a.min + 1));
          if (a.type === "yes_no") return pick % 2 === 0;
          if (a.type === "text") return sentence;
          return undefined; // several choices are optional
        };
        const fill = (into, q) => {
          const value = answer(q);
          if (value === undefined || q.applies_when) return;
          into[q.key] = value;
          if (q.explanation) into[`${q.key}_explanation`] = sentence;
        };
        const answers = {};
        for (const q of rubric.questions) {
          if (q.each_response) for (const side of ["a", "b"]) fill((answers[side] ??= {}), q);
          else fill(answers, q);
        }
        if (batch.classifications?.length) {
          answers.classifications = Object.fromEntries(batch.classifications.map((c) => [c.key, c.multiple ? [c.options[0]] : c.options[pick % c.options.length]]));
        }
        const send = (body) => fetch(`/api/v1/assignments/${next.assignment_id}/submit`, { method: "POST", headers, body: JSON.stringify(body) });
        let sent = await send(answers);
        if (sent.status === 409) {
          const { warnings } = await sent.json();
          sent = await send({ ...answers, confirmed_warnings: warnings.map((w) => w.id) });
        }
        results.push(`${name} ${sent.status} ${sent.ok ? "" : await sent.text()}`);
      }
    }
    return results;
  }, { batches: BATCHES, count, seed, sentence: SENTENCE });
  for (const line of done) assert.match(line, / 201 $| 200 $/, line);
  await page.context().close();
}

test("each rubric's dashboard: the form's words, ordered colours, a summary first, no overlapping words", async () => {
  await rateThroughApi("rater1", 4, 0);
  await rateThroughApi("rater2", 4, 1);
  const lead = await signedIn("lead");
  for (const name of BATCHES) {
    await lead.goto(`${env.server.base}/`);
    await Promise.all([lead.waitForNavigation(), lead.locator('a[href^="/batches/"]', { hasText: name }).first().click()]);
    const found = await lead.evaluate(() => {
      const overlaps = [];
      const outside = [];
      const words = [];
      for (const svg of document.querySelectorAll("svg.chart")) {
        const frame = svg.getBoundingClientRect();
        const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() !== "");
        const boxes = texts.map((t) => t.getBoundingClientRect());
        texts.forEach((t, i) => {
          words.push(t.textContent);
          const b = boxes[i];
          if (b.left < frame.left - 1 || b.right > frame.right + 1 || b.top < frame.top - 1 || b.bottom > frame.bottom + 1) {
            outside.push(`${svg.getAttribute("aria-label").slice(0, 40)}: ${t.textContent}`);
          }
          for (let j = i + 1; j < texts.length; j++) {
            const c = boxes[j];
            const w = Math.min(b.right, c.right) - Math.max(b.left, c.left);
            const h = Math.min(b.bottom, c.bottom) - Math.max(b.top, c.top);
            if (w > 1 && h > 1) overlaps.push(`${t.textContent} / ${texts[j].textContent}`);
          }
        });
      }
      const summary = document.getElementById("summary");
      const firstChart = document.querySelector("svg.chart");
      return {
        charts: document.querySelectorAll("svg.chart").length,
        overlaps,
        outside,
        stored: words.filter((w) => /\b[a-z]+_[a-z_]+\b|^[ab]\.[a-z]/.test(w)),
        summaryFirst: summary !== null && firstChart !== null &&
          summary.getBoundingClientRect().top < firstChart.getBoundingClientRect().top,
        summaryRows: summary ? summary.querySelectorAll("tbody tr").length : 0,
        height: document.documentElement.scrollHeight,
        ramp: [...document.querySelectorAll("svg.chart g.legend-key")]
          .map((g) => [g.textContent, g.querySelector("rect, circle")?.getAttribute("fill")]),
      };
    });
    assert.ok(found.charts > 0, `${name}: charts drawn`);
    assert.deepEqual(found.overlaps, [], `${name}: words overlap`);
    assert.deepEqual(found.outside, [], `${name}: words leave their chart`);
    assert.deepEqual(found.stored, [], `${name}: stored values shown instead of the form's words`);
    assert.equal(found.summaryFirst, true, `${name}: the summary comes before the charts`);
    assert.ok(found.summaryRows > 0, `${name}: the summary has a row per question`);
    console.log(`${name}: ${found.charts} charts, page ${found.height} px high`);
    if (name === "Demo: coding answers") {
      // No issues, minor and major issues: one blue from dark to light.
      const fill = (label) => found.ramp.find(([words]) => words.startsWith(`${label} `))?.[1];
      assert.deepEqual([fill("No issues"), fill("Minor issue(s)"), fill("Major issue(s)")], ["#08306b", "#3182bd", "#c6dbef"]);
    }
  }
  assert.deepEqual(await lead.problems(), []);
});
