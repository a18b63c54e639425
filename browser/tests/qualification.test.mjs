// Qualification in a real browser: a lead asks for it in the batch page's gold settings;
// the rater finds it from the queue, rates the gold tasks, and reads their result with
// the expected answers and their explanations; the lead sees who passed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const env = suite(() => startVerdict([["admin", "admin"], ["lead", "lead"], ["rater", "rater"]]));

const task = (id, gold) => JSON.stringify({
  external_id: id,
  prompt: `Write a function that returns ${id} squared.`,
  response_a: "def f(): return 4",
  response_b: "f = 4",
  ...(gold ? {
    gold: { sxs: { value: 2, within: 1 }, "b.executability": "no_code" },
    gold_explanation: `A gives the function for ${id}; B gives no code.`,
  } : {}),
});

// Blackhat answers that meet the gold tasks' expectations (A as uploaded is better).
const RIGHT = {
  a: { executability: "yes_fully", instruction_following: "no_issues", correctness: "no_issues" },
  b: { executability: "no_code", instruction_following: "minor_issues",
       instruction_following_explanation: "gives an expression, not the function asked for",
       correctness: "no_issues" },
  sxs: 2, sxs_explanation: "A delivers the function that was asked for; B does not.",
  time_spent_s: 95,
};

async function signedIn(username) {
  const page = await watchedPage(env.browser);
  await login(page, env.server.base, username);
  return page;
}

test("a lead asks for a qualification; the rater passes it and reads the answers", async () => {
  const admin = await signedIn("admin");
  const batch = await admin.evaluate(async (body) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const made = await fetch("/api/v1/batches?name=qualified&randomize=false&raters_see_external_ids=true", {
      method: "POST", headers: { "content-type": "application/x-ndjson", "x-csrf-token": token }, body,
    });
    return (await made.json()).id;
  }, [task("t1"), task("t2"), task("g1", true), task("g2", true)].join("\n") + "\n");
  assert.ok(batch);
  await admin.context().close();

  const lead = await signedIn("lead");
  await lead.goto(`${env.server.base}/batches/${batch}`);
  await lead.fill('input[name="qualify_tasks"]', "two");
  await lead.click('form.gold-form button[type="submit"]');
  assert.match(await lead.locator("p.error", { hasText: "Gold tasks a try" }).innerText(), /whole number/);
  await lead.fill('input[name="qualify_tasks"]', "2");
  await lead.fill('input[name="qualify_pass_percent"]', "100");
  await lead.check('input[name="qualify_reveal"]');
  await Promise.all([lead.waitForNavigation(), lead.click('form.gold-form button[type="submit"]')]);
  assert.equal(await lead.inputValue('input[name="qualify_tasks"]'), "2");
  assert.match(await lead.locator("#qualification").innerText(), /2 gold tasks a try, 100% to pass, 1 try[\s\S]*Nobody has started it yet/);

  const rater = await signedIn("rater");
  await Promise.all([rater.waitForNavigation(), rater.click('a.qualification-link')]);
  assert.match(await rater.locator("#my-qualification").innerText(), /You: not started/);
  const offered = await rater.evaluate(async ({ batch, right }) => {
    const token = document.querySelector('input[name="csrf_token"]').value;
    const headers = { "content-type": "application/json", "x-csrf-token": token };
    const out = [];
    for (let i = 0; i < 3; i++) {
      const next = await (await fetch(`/api/v1/batches/${batch}/next`, { method: "POST", headers })).json();
      out.push(next.task.external_id);
      if (i < 2) {
        await fetch(`/api/v1/assignments/${next.assignment_id}/submit`, { method: "POST", headers, body: JSON.stringify(right) });
      }
    }
    return out;
  }, { batch, right: RIGHT });
  assert.deepEqual(offered.slice(0, 2).sort(), ["g1", "g2"], "gold only while qualifying");
  assert.match(offered[2], /^t/, "then the batch's tasks");
  await rater.reload();
  const mine = await rater.locator("#my-qualification").innerText();
  assert.match(mine, /You: passed/);
  assert.match(mine, /A gives the function for g1; B gives no code\./);
  assert.match(mine, /A gives the function for g2; B gives no code\./);
  assert.deepEqual(await rater.problems(), []);

  await lead.reload();
  assert.match(await lead.locator('#qualification tr[data-rater="rater"]').innerText(), /passed\s+2 of 2/);
  // The one refused form answered 422, as it should; nothing else went wrong.
  const problems = (await lead.problems()).filter((p) => !p.includes("status of 422"));
  assert.deepEqual(problems, []);
});
