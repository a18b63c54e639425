// Signing in through the team's identity provider in a real browser: a real OpenID
// provider (oidc-provider, tests/oidc) and verdict started with its --oidc-* settings.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startVerdict, suite, watchedPage } from "./harness.mjs";

const PROVIDER = new URL("../../tests/oidc/provider.mjs", import.meta.url).pathname;

/** A port nothing listens on now. */
async function freePort() {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** The provider on `port`, knowing verdict at `callback`; resolves once it serves. */
async function startProvider(port, callback) {
  const dir = mkdtempSync(join(tmpdir(), "verdict-oidc-"));
  const config = join(dir, "provider.json");
  writeFileSync(config, JSON.stringify({
    port,
    clients: [{ client_id: "verdict", client_secret: "browser-test-client-secret", redirect_uris: [callback] }],
    accounts: { alice: { email: "alice@example.com", email_verified: true } },
  }));
  const child = spawn("node", [PROVIDER, config], { stdio: ["ignore", "pipe", "ignore"] });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the OpenID provider did not start")), 20_000);
    child.stdout.on("data", (chunk) => {
      if (String(chunk).includes("listening on")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on("exit", (code) => reject(new Error(`the OpenID provider exited with ${code}`)));
  });
  return {
    async stop() {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const env = suite(async () => {
  const [providerPort, verdictPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${verdictPort}`;
  const provider = await startProvider(providerPort, `${base}/auth/oidc/callback`);
  const verdict = await startVerdict([["admin", "admin"], ["alice@example.com", "lead"]], {
    bind: `127.0.0.1:${verdictPort}`,
    env: {
      VERDICT_SECRET_KEY: "a browser test secret of more than thirty-two characters",
      VERDICT_OIDC_ISSUER: `http://127.0.0.1:${providerPort}`,
      VERDICT_OIDC_CLIENT_ID: "verdict",
      VERDICT_OIDC_CLIENT_SECRET: "browser-test-client-secret",
      VERDICT_OIDC_REDIRECT_URL: `${base}/auth/oidc/callback`,
      VERDICT_OIDC_LABEL: "Example SSO",
    },
  });
  return {
    base: verdict.base,
    async stop() {
      await verdict.stop();
      await provider.stop();
    },
  };
});

test("a lead signs in through the identity provider and out again", async () => {
  const page = await watchedPage(env.browser);
  await page.goto(`${env.server.base}/ratings`);
  assert.equal(new URL(page.url()).pathname, "/login");
  // Off to the provider: its own sign-in form.
  await Promise.all([page.waitForNavigation(), page.click("#sign-in-provider")]);
  assert.ok(page.url().startsWith("http://127.0.0.1:") && !page.url().startsWith(env.server.base), page.url());
  await page.fill('input[name="login"]', "alice");
  // The provider's development form asks for a password too; it checks none.
  await page.fill('input[name="password"]', "anything");
  await Promise.all([
    page.waitForURL((url) => url.href.startsWith(env.server.base) && !url.pathname.startsWith("/auth/")),
    page.click('button[type="submit"]'),
  ]);
  // Back where the sign-in began, signed in as the account the email names.
  assert.equal(new URL(page.url()).pathname, "/ratings");
  assert.match(await page.textContent(".who"), /alice@example\.com · lead/);
  // The provider's development pages load fonts from the internet, which this machine
  // cannot reach; verdict's own pages must show no problem.
  const atProvider = (await page.problems()).length;
  await page.reload();
  assert.deepEqual((await page.problems()).slice(atProvider), []);

  await Promise.all([page.waitForNavigation(), page.click("form.logout button")]);
  assert.equal(new URL(page.url()).pathname, "/login");
  await page.goto(`${env.server.base}/`);
  assert.equal(new URL(page.url()).pathname, "/login", "the session ended");
});
