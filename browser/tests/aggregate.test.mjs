// The batch page's "One answer per task" section: after two raters rate through the API,
// each question's row shows the figures of the metrics' `aggregation` (tasks, the share
// where majority vote and Dawid-Skene differ, mean confidences, rater accuracies), and
// its links fetch the two aggregated exports, whose rows agree with the tasks counted.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startDemo, suite, watchedPage } from "./harness.mjs";

const env = suite(startDemo);
const BATCH = "Demo: coding answers";

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, env.server.base, username, env.server.passwords[username]);
  return page;
}

/** Has `username` rate `count` tasks of the coding batch, answers picked by `seed`. */
async function rate(username, count, seed) {
  const page = await signedIn(username);
  const done = await page.evaluate(async ({ name, count, seed }) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const headers = { "content-type": "application/json", "x-csrf-token": token };
    const listed = await (await fetch("/api/v1/batches")).json();
    const batch = (listed.items ?? listed).find((b) => b.name === name);
    const rubric = await (await fetch(`/api/v1/rubrics/${batch.rubric}`)).json();
    const results = [];
    for (let i = 0; i < count; i++) {
      const pick = seed + i;
      const next = await (await fetch(`/api/v1/batches/${batch.id}/next`, { method: "POST", headers })).json();
      const answers = {};
      const fill = (into, q) => {
        const a = q.answer;
        let value;
        if (a.type === "choice") value = a.options[(pick * (q.key.length % 3 + 1)) % a.options.length].value;
        else if (a.type === "scale") value = a.min + (pick % (a.max - a.min + 1));
        else if (a.type === "yes_no") value = pick % 2 === 0;
        else if (a.type === "text") value = "The answer handles the case the prompt names and explains each step.";
        if (value === undefined || q.applies_when) return;
        into[q.key] = value;
        if (q.explanation) into[`${q.key}_explanation`] = "The answer handles the case the prompt names and explains each step.";
      };
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
      results.push(`${sent.status} ${sent.ok ? "" : await sent.text()}`);
    }
    return results;
  }, { name: BATCH, count, seed });
  for (const line of done) assert.match(line, /^20[01] $/, line);
  await page.context().close();
}

test("the batch page shows one answer per task as the metrics give it, with both exports", async () => {
  await rate("rater1", 5, 0);
  await rate("rater2", 5, 1);
  const lead = await signedIn("lead");
  await lead.goto(`${env.server.base}/`);
  await Promise.all([lead.waitForNavigation(), lead.locator('a[href^="/batches/"]', { hasText: BATCH }).first().click()]);
  const found = await lead.evaluate(async () => {
    const id = location.pathname.split("/")[2];
    const metrics = await (await fetch(`/api/v1/batches/${id}/metrics`)).json();
    const section = document.getElementById("aggregation");
    const rows = [...section.querySelectorAll("tbody tr")].map((tr) => ({
      cells: [...tr.querySelectorAll("td")].map((td) => td.textContent.trim()),
      raters: [...tr.querySelectorAll(".rater-accuracy")].map((s) => [s.dataset.rater, s.textContent.trim()]),
    }));
    const links = [...section.querySelectorAll("a")].map((a) => a.getAttribute("href"));
    const exports = {};
    for (const href of links) {
      const response = await fetch(href);
      exports[href] = { status: response.status, text: await response.text() };
    }
    const visible = section.getBoundingClientRect().height > 0;
    return { metrics, rows, links, exports, visible };
  });
  const aggregation = found.metrics.aggregation;
  const paths = Object.keys(aggregation);
  assert.ok(paths.length > 0, "the metrics aggregate some questions");
  assert.equal(found.visible, true);
  assert.equal(found.rows.length, paths.length, "a row per aggregated question");
  const fixed = (x) => (x === null ? "—" : x.toFixed(2));
  const percent = (x) => (x === null ? "—" : `${Math.round(x * 100)}%`);
  // Rows are in the form's order; match each to its figures by what it shows.
  const expected = paths.map((p) => {
    const a = aggregation[p];
    return [String(a.tasks), percent(a.differ), String(a.majority_tied), String(a.dawid_skene_tied),
      fixed(a.majority_confidence), fixed(a.dawid_skene_confidence),
      Object.entries(a.raters).map(([r, acc]) => [r, `${r} ${acc.toFixed(2)}`])];
  });
  let withTasks = 0;
  for (const row of found.rows) {
    const shown = [...row.cells.slice(1, 7), row.raters];
    const match = expected.findIndex((e) => JSON.stringify(e) === JSON.stringify(shown));
    assert.ok(match >= 0, `row ${row.cells[0]} shows figures of the metrics: ${JSON.stringify(shown)}`);
    expected.splice(match, 1);
    if (Number(row.cells[1]) > 0) withTasks += 1;
  }
  assert.ok(withTasks > 0, "some question has aggregated tasks");
  const raters = found.rows.flatMap((r) => r.raters.map(([name]) => name));
  assert.ok(raters.includes("rater1") && raters.includes("rater2"), raters.join(", "));
  // The links: both methods, CSV and JSON Lines; a CSV row per task and question.
  const total = paths.reduce((n, p) => n + aggregation[p].tasks, 0);
  for (const method of ["majority", "dawid_skene"]) {
    const csv = found.links.find((l) => l.includes(`aggregate=${method}`) && l.includes("format=csv"));
    assert.ok(csv, `a CSV link for ${method}`);
    const { status, text } = found.exports[csv];
    assert.equal(status, 200);
    const lines = text.trim().split("\n");
    assert.equal(lines[0], "external_id,question,answer,tied,confidence,mean,method,raters");
    assert.equal(lines.length - 1, total, `${method}: a row per task and question`);
    assert.ok(lines.slice(1).every((l) => l.includes(`,${method},`)), method);
    const jsonl = found.links.find((l) => l.includes(`aggregate=${method}`) && l.includes("format=jsonl"));
    assert.equal(found.exports[jsonl].text.trim().split("\n").length, total, `${method}: JSON Lines`);
  }
  assert.deepEqual(await lead.problems(), []);
});
