// Signing in and out in a real browser.
import assert from "node:assert/strict";
import { test } from "node:test";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const env = suite(startVerdict);

test("an anonymous visit is sent to the login page", async () => {
  const page = await watchedPage(env.browser);
  await page.goto(`${env.server.base}/`);
  assert.equal(new URL(page.url()).pathname, "/login");
  assert.equal(await page.textContent("h1"), "Sign in");
  assert.deepEqual(await page.problems(), []);
});

test("a wrong password shows the error and keeps the username", async () => {
  const page = await watchedPage(env.browser);
  await page.goto(`${env.server.base}/login`);
  await page.fill('input[name="username"]', "rater");
  await page.fill('input[name="password"]', "not the password");
  await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
  assert.equal(await page.textContent('[role="alert"]'), "Wrong username or password.");
  assert.equal(await page.inputValue('input[name="username"]'), "rater");
});

test("a rater signs in, lands on the queue and signs out", async () => {
  const page = await watchedPage(env.browser);
  await login(page, env.server.base, "rater");
  assert.equal(new URL(page.url()).pathname, "/");
  assert.equal(await page.textContent("h1"), "Your queue");
  assert.match(await page.textContent(".who"), /rater · rater/);
  assert.equal(await page.locator('a[href="/admin/users"]').count(), 0);
  await Promise.all([page.waitForNavigation(), page.click("text=Sign out")]);
  assert.equal(new URL(page.url()).pathname, "/login");
  await page.goto(`${env.server.base}/`);
  assert.equal(new URL(page.url()).pathname, "/login", "the session is gone");
  assert.deepEqual(await page.problems(), []);
});

test("an admin creates an account from the users page", async () => {
  const page = await watchedPage(env.browser);
  await login(page, env.server.base, "admin");
  await page.click('a[href="/admin/users"]');
  await page.fill('form[action="/admin/users"] input[name="username"]', "newlead");
  await page.selectOption('form[action="/admin/users"] select[name="role"]', "lead");
  await page.fill('form[action="/admin/users"] input[name="password"]', "a good long password");
  await Promise.all([page.waitForNavigation(), page.click('form[action="/admin/users"] button')]);
  const row = page.locator("tr", { hasText: "newlead" });
  assert.equal(await row.locator("select").inputValue(), "lead");
  assert.deepEqual(await page.problems(), []);
});
