// The two README commands give a working Python runner: `verdict demo` started in a
// checkout with no Pyodide installs the pinned one with npm itself, saying so on one
// line, and its Python blocks run; with no npm to do it, it says exactly what to run and
// the runner says it is not installed. Each demo runs in a folder of its own holding only
// the checkout's vendor/package.json and package-lock.json, so nothing here touches the
// checkout's own vendor/node_modules.
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { launchBrowser, login, startDemo, watchedPage } from "./harness.mjs";

const VENDOR = fileURLToPath(new URL("../../vendor/", import.meta.url));
const LOADING = { timeout: 120_000 };
const browser = {};
const folders = [];

before(async () => { browser.it = await launchBrowser(); });
after(async () => {
  await browser.it?.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A folder laid out like a checkout's root with only the vendor lock files in it. */
function checkoutWithoutPyodide() {
  const root = mkdtempSync(join(tmpdir(), "verdict-setup-"));
  folders.push(root);
  mkdirSync(join(root, "vendor"));
  for (const file of ["package.json", "package-lock.json"]) copyFileSync(join(VENDOR, file), join(root, "vendor", file));
  return root;
}

/** The environment of a newcomer's shell: no test switches, no Pyodide folder named. */
function newcomer(path = process.env.PATH) {
  const env = { ...process.env, PATH: path, RUST_LOG: "warn" };
  delete env.VERDICT_NO_PYODIDE_INSTALL;
  delete env.VERDICT_PYODIDE_DIR;
  return env;
}

/** rater1 on the demo's first task, and the first Python block of its responses. */
async function firstPythonBlock(demo) {
  const page = await watchedPage(browser.it);
  await page.setViewportSize({ width: 1366, height: 900 });
  await login(page, demo.base, "rater1", demo.passwords.rater1);
  await Promise.all([page.waitForNavigation(), page.click('form[action$="/next"] button')]);
  await page.waitForSelector(".runner");
  const block = page.locator('.runner[data-language="python"]').first();
  assert.equal(await block.count(), 1, "the demo's first task has Python blocks");
  return { page, block };
}

test("started without Pyodide, the demo installs the pinned one with npm and Python runs", async () => {
  const root = checkoutWithoutPyodide();
  const demo = await startDemo({ cwd: root, env: newcomer(), wait: 600_000 });
  try {
    const said = demo.stderr();
    assert.match(said, /Installed Pyodide \d+\.\d+\.\d+ for the Python code runner in vendor\/node_modules\/pyodide/);
    assert.ok(existsSync(join(root, "vendor/node_modules/pyodide/pyodide.asm.wasm")), "into the checkout's vendor folder");
    const { page, block } = await firstPythonBlock(demo);
    await block.locator(".runner-run").click();
    await page.waitForFunction(
      (el) => !["running", undefined].includes(el.querySelector(".runner-status").dataset.status),
      await block.elementHandle(),
      LOADING,
    );
    const status = await block.locator(".runner-status").getAttribute("data-status");
    assert.ok(["passed", "failed"].includes(status), `the block ran (${status}: ${await block.locator(".runner-status").textContent()})`);
    assert.deepEqual(await page.problems(), []);
    await page.context().close();
  } finally {
    await demo.stop();
  }
  // Started again, it finds it there and installs nothing.
  const again = await startDemo({ cwd: root, env: newcomer() });
  try {
    assert.doesNotMatch(again.stderr(), /Install|Python code runner is off/);
  } finally {
    await again.stop();
  }
});

test("with no npm to install it, the demo says what to run and the runner says it is not installed", async () => {
  const root = checkoutWithoutPyodide();
  const demo = await startDemo({ cwd: root, env: newcomer(join(root, "no-such-bin")) });
  try {
    assert.match(
      demo.stderr(),
      /The Python code runner is off: Pyodide is not installed and npm is not there to install it; install Node\.js with npm \(e\.g\. apt-get install npm\), then run scripts\/vendor-pyodide or start verdict again\. JavaScript blocks still run\./,
    );
    assert.equal(existsSync(join(root, "vendor/node_modules")), false, "nothing installed");
    const { page, block } = await firstPythonBlock(demo);
    await block.locator(".runner-run").click();
    await page.waitForFunction((el) => el.querySelector(".runner-status").dataset.status === "unavailable", await block.elementHandle());
    assert.match(await block.locator(".runner-status").textContent(), /^The Python runner is not installed on this server/);
    assert.equal(await block.locator(".runner-run").textContent(), "Python runner not installed on this server");
    assert.deepEqual(await page.problems(), []);
    await page.context().close();
  } finally {
    await demo.stop();
  }
});
