// Starts verdict on a fresh SQLite database and drives it with Debian's Chromium.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { chromium } from "playwright-core";

const BIN = process.env.VERDICT_BIN ?? new URL("../../target/debug/verdict", import.meta.url).pathname;
export const PASSWORD = "browser test password";

/**
 * A running verdict server with its own database, and the accounts it was given.
 * `options` may give more environment (`env`) and the address to listen on (`bind`,
 * default a free port).
 */
export async function startVerdict(users = [["admin", "admin"], ["rater", "rater"]], options = {}) {
  const dir = mkdtempSync(join(tmpdir(), "verdict-browser-"));
  // A test never installs Pyodide into the checkout it runs in (runner tests vendor it).
  const env = { VERDICT_NO_PYODIDE_INSTALL: "1", ...process.env, ...options.env, DATABASE_URL: `sqlite://${join(dir, "verdict.db")}`, RUST_LOG: "info" };
  for (const [username, role] of users) {
    const made = spawnSync(BIN, ["user", "add", "--username", username, "--role", role, "--password-stdin"], {
      env,
      input: `${PASSWORD}\n`,
    });
    if (made.status !== 0) throw new Error(`user add ${username}: ${made.stderr}`);
  }
  const server = spawn(BIN, ["serve", "--bind", options.bind ?? "127.0.0.1:0"], { env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`verdict did not start:\n${log}`)), 30_000);
    server.stderr.on("data", (chunk) => {
      log += chunk;
      const found = /listening on (http:\/\/[\d.:]+)/.exec(log);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    server.on("exit", (code) => reject(new Error(`verdict exited with ${code}:\n${log}`)));
  });
  return {
    base,
    async stop() {
      server.kill("SIGTERM");
      await new Promise((resolve) => server.once("exit", resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `verdict demo` on a random port: demo accounts and a demo batch on a fresh database.
 * Resolves with the address, each account's password, as the demo prints them, and what
 * it wrote to stderr before it was ready. `options` may give the working folder (`cwd`),
 * the whole environment (`env`) and how long to wait for it (`wait`, in ms).
 */
export async function startDemo(options = {}) {
  const server = spawn(BIN, ["demo", "--bind", "127.0.0.1:0"], {
    cwd: options.cwd,
    env: options.env ?? { VERDICT_NO_PYODIDE_INSTALL: "1", ...process.env, RUST_LOG: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  server.stderr.on("data", (chunk) => { err += chunk; });
  const started = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`verdict demo did not start:\n${out}\n${err}`)), options.wait ?? 30_000);
    server.stdout.on("data", (chunk) => {
      out += chunk;
      const base = /running at (http:\/\/[\d.:]+)/.exec(out);
      const dir = /database lives in (\S+) and/.exec(out);
      if (base && dir) {
        clearTimeout(timer);
        const passwords = {};
        for (const [, name, password] of out.matchAll(/^\s+(\w+)\s+(?:admin|lead|rater)\s+(\S+)$/gm)) passwords[name] = password;
        resolve({ base: base[1], dir: dir[1], passwords, stderr: () => err });
      }
    });
    server.on("exit", (code) => reject(new Error(`verdict demo exited with ${code}:\n${out}\n${err}`)));
  });
  return {
    ...started,
    async stop() {
      server.kill("SIGTERM");
      await new Promise((resolve) => server.once("exit", resolve));
      rmSync(started.dir, { recursive: true, force: true });
    },
  };
}

/** Headless Chromium, as this machine allows it (no sandbox, no background traffic). */
export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
  });
}

/**
 * Registers hooks that start a server with `start` (`startVerdict` or `startDemo`) and a
 * browser before a file's tests and stop both after them. The returned object holds
 * `server` and `browser` once the tests run.
 */
export function suite(start) {
  const env = {};
  before(async () => {
    env.server = await start();
    env.browser = await launchBrowser();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.stop();
  });
  return env;
}

/**
 * A fresh page that records every CSP violation, console error and uncaught exception,
 * so a test can assert that none happened.
 */
export async function watchedPage(browser) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations = (window.__cspViolations ?? []).concat(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`exception: ${err.message}`));
  // `expected` lists HTTP statuses a test provoked on purpose (e.g. a 422 page).
  page.problems = async (expected = []) => {
    const csp = await page.evaluate(() => window.__cspViolations ?? []).catch(() => []);
    const provoked = (p) => expected.some((status) => p.includes(`status of ${status} `));
    return problems.filter((p) => !provoked(p)).concat(csp.map((v) => `csp: ${v}`));
  };
  return page;
}

/** Signs in through the login form. */
export async function login(page, base, username, password = PASSWORD) {
  await page.goto(`${base}/login`);
  await page.fill('input[name="username"]', username);
  await page.fill('input[name="password"]', password);
  await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
}
