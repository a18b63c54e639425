// API tokens on the /tokens page, and an admin resetting a password on the users page.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PASSWORD, login, startVerdict, suite, watchedPage } from "./harness.mjs";

const env = suite(() => startVerdict([["admin", "admin"], ["rater", "rater"], ["forgetful", "rater"]]));

/** `GET /api/v1/me` with a bearer token, from outside the browser. */
async function me(token) {
  return fetch(`${env.server.base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
}

test("a user makes a token, sees it once, uses it and revokes it", async () => {
  const page = await watchedPage(env.browser);
  await login(page, env.server.base, "rater");
  await Promise.all([page.waitForNavigation(), page.click('nav a[href="/tokens"]')]);
  assert.equal(await page.textContent("h1"), "API tokens");
  await page.fill('form[action="/tokens"] input[name="name"]', "nightly export");
  await Promise.all([page.waitForNavigation(), page.click('form[action="/tokens"] button')]);
  assert.match(await page.textContent("#new-token"), /Copy it now: it is shown only this once/);
  const secret = await page.inputValue("#new-token input.secret");
  assert.match(secret, /^vdt_/);

  const used = await me(secret);
  assert.equal(used.status, 200);
  assert.equal((await used.json()).username, "rater");

  // Shown once: the list has the token by name, never its secret.
  await page.goto(`${env.server.base}/tokens`);
  assert.equal(await page.locator("#new-token").count(), 0);
  assert.ok(!(await page.content()).includes(secret));
  const row = page.locator("table.tokens tr", { hasText: "nightly export" });
  await Promise.all([page.waitForNavigation(), row.locator("button", { hasText: "Revoke" }).click()]);
  assert.equal(await page.locator("table.tokens tr", { hasText: "nightly export" }).count(), 0);
  assert.equal((await me(secret)).status, 401);
  assert.deepEqual(await page.problems(), []);
});

test("an admin resets a password: the new one signs in, the old one does not", async () => {
  const page = await watchedPage(env.browser);
  await login(page, env.server.base, "admin");
  await page.goto(`${env.server.base}/admin/users`);
  assert.match(await page.textContent("main"), /Resetting a password signs the account out everywhere and revokes all its API tokens/);
  const row = page.locator("tr", { hasText: "forgetful" });
  const newPassword = "amber walrus tuning pianos";
  await row.locator('input[name="password"]').fill(newPassword);
  await Promise.all([page.waitForNavigation(), row.locator("button", { hasText: "Reset password" }).click()]);
  assert.match(await page.textContent('[role="status"]'), /The password of forgetful was reset/);
  assert.deepEqual(await page.problems(), []);

  const user = await watchedPage(env.browser);
  await login(user, env.server.base, "forgetful", PASSWORD);
  assert.equal(new URL(user.url()).pathname, "/login");
  assert.equal(await user.textContent('[role="alert"]'), "Wrong username or password.");
  await login(user, env.server.base, "forgetful", newPassword);
  assert.equal(new URL(user.url()).pathname, "/");
  assert.match(await user.textContent(".who"), /forgetful · rater/);
});
