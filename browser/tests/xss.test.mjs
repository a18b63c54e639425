// Untrusted content never runs script. The XSS and mutation-XSS payloads of
// xss-payloads.json go in everywhere untrusted text enters verdict (task files by the
// API, the upload page and CSV, batch names, token names, classification questions,
// rater explanations, skip notes, lead comments, form fields that are echoed back),
// and every page that shows them is visited in headless Chromium by the role that sees
// it. On each page: no dialog, no request to /__xss/, no CSP violation, no live markup
// (handlers, script URLs, frames), a strict CSP header, and the payloads are there as
// text. A self-check proves the detectors fire on a page without CSP.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { test } from "node:test";
import { login, startVerdict, suite, watchedPage } from "./harness.mjs";

const env = suite(() => startVerdict([["admin", "admin"], ["lead", "lead"], ["rater1", "rater"], ["rater2", "rater"]]));

const CORPUS = JSON.parse(readFileSync(new URL("./xss-payloads.json", import.meta.url), "utf8")).payloads;

/** Where a payload's own id goes, so each one's presence can be told apart. */
const marker = (id) => `MRK-${id}-MRK`;

/** The corpus for a server at `origin`: placeholders filled in, each with its marker. */
function corpus(origin) {
  return CORPUS.map((p) => {
    const b64 = Buffer.from(`<script>alert('${p.id}')</script>`).toString("base64");
    const text = p.payload.replaceAll("$ORIGIN", origin).replaceAll("$B64", b64).replaceAll("$ID", p.id);
    return { ...p, text, mark: marker(p.id), tagged: `${marker(p.id)} ${text}` };
  });
}

const norm = (s) => s.replace(/\r\n?/g, "\n");
const hasControl = (s) => /[\u0000-\u001f\u007f-\u009f]/.test(s);
const chars = (s) => [...s].length;

/** Payloads packed into strings of at most `max` characters (and at most `per` each). */
function pack(items, max, { sep = " ", per = Infinity } = {}) {
  const out = [];
  let cur = [];
  let len = 0;
  for (const item of items) {
    const n = chars(item.tagged);
    if (n > max) continue;
    if (cur.length && (len + chars(sep) + n > max || cur.length >= per)) {
      out.push(cur);
      cur = [];
      len = 0;
    }
    len += (cur.length ? chars(sep) : 0) + n;
    cur.push(item);
  }
  if (cur.length) out.push(cur);
  return out.map((group) => ({ items: group, text: group.map((i) => i.tagged).join(sep) }));
}

/** A Markdown document holding every payload of `items`, each after its marker paragraph. */
const doc = (items) => items.map((p) => `${p.mark}\n\n${p.text}`).join("\n\n") + "\n";

// ---------------------------------------------------------------------------------------
// Detectors

/**
 * Instruments a page: dialogs, requests to /__xss/ or off the server, CSP violations (as
 * events, reported through a binding so they survive navigation, and as console
 * messages), uncaught exceptions and popups all land in `page.sink`.
 */
async function instrument(page, origin, sink = []) {
  page.sink = sink;
  page.on("dialog", (dialog) => {
    sink.push(`dialog ${dialog.type()}(${JSON.stringify(dialog.message())})`);
    dialog.dismiss().catch(() => {});
  });
  page.on("request", (request) => {
    const url = request.url();
    if (url.includes("/__xss/")) sink.push(`request (${request.resourceType()}) ${url}`);
    else if (!url.startsWith(origin) && !/^(data|blob|about|chrome-error):/.test(url)) sink.push(`request off the server (${request.resourceType()}) ${url}`);
  });
  page.on("console", (message) => {
    if (/content.security.policy/i.test(message.text())) sink.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => sink.push(`exception: ${error.message}`));
  page.on("popup", (popup) => {
    sink.push(`popup ${popup.url()}`);
    instrument(popup, origin, sink).catch(() => {});
  });
  await page.exposeBinding("__xssReport", (_source, what) => sink.push(what));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__xssReport?.(`csp violation: ${e.violatedDirective} blocked ${e.blockedURI} in ${e.sourceFile}:${e.lineNumber} ${e.sample}`);
    }, true);
  });
  return page;
}

/** What is wrong with a Content-Security-Policy header value. */
function cspProblems(header) {
  if (!header) return ["no Content-Security-Policy header"];
  const directives = new Map();
  for (const part of header.split(";")) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) directives.set(name.toLowerCase(), values.map((v) => v.toLowerCase()));
  }
  const problems = [];
  const scriptish = ["script-src", "script-src-elem", "script-src-attr"].filter((d) => directives.has(d));
  if (!scriptish.includes("script-src")) scriptish.push("default-src");
  for (const name of scriptish) {
    const values = directives.get(name);
    if (!values) problems.push(`no ${name}`);
    else for (const bad of ["'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*", "data:", "http:", "https:"]) {
      if (values.includes(bad)) problems.push(`${name} allows ${bad}`);
    }
  }
  for (const name of ["object-src", "base-uri", "frame-ancestors"]) {
    if ((directives.get(name) ?? []).join(" ") !== "'none'") problems.push(`${name} is not 'none'`);
  }
  return problems;
}

/**
 * In the page: markup that could run script or load something the content chose. Our own
 * templates carry none of it; in rendered Markdown (`.rendered`) far less is allowed.
 */
function liveMarkup() {
  const found = [];
  const urlAttrs = ["href", "src", "action", "formaction", "data", "xlink:href", "poster", "background", "ping", "srcset", "codebase", "cite", "dynsrc", "lowsrc"];
  const describe = (el) => `<${el.tagName.toLowerCase()}>${el.closest(".rendered") ? " in rendered content" : ""}`;
  for (const el of document.querySelectorAll("*")) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      if (name.startsWith("on")) found.push(`${describe(el)} has ${name}`);
      if (name === "srcdoc") found.push(`${describe(el)} has srcdoc`);
      if (urlAttrs.includes(name)) {
        // Browsers drop whitespace and control characters inside a scheme.
        const squeezed = attr.value.replace(/[\u0000-\u0020\u007f-\u00a0]/g, "");
        if (/^(javascript|vbscript|data|livescript|mocha):/i.test(squeezed)) found.push(`${describe(el)} ${name}=${attr.value.slice(0, 60)}`);
      }
    }
  }
  for (const a of document.querySelectorAll("a[href], area[href]")) {
    if (!["http:", "https:", "mailto:"].includes(a.protocol)) found.push(`${describe(a)} to ${a.protocol}`);
  }
  for (const el of document.querySelectorAll("iframe, frame, frameset, object, embed, applet, portal, base, meta[http-equiv], body link")) {
    found.push(describe(el));
  }
  for (const s of document.scripts) {
    const own = s.src ? new URL(s.src).origin === location.origin && new URL(s.src).pathname.startsWith("/static/") : s.type === "application/json";
    if (!own) found.push(`<script> ${s.src || s.textContent.slice(0, 60)}`);
  }
  const unwelcome = "script, style, link, img, svg, math, form, button, textarea, select, video, audio, source, picture, template, noscript, dialog, details, marquee, xmp, plaintext, listing, isindex, [style], [id], [name], [form], [autofocus], [tabindex], [contenteditable]";
  // form.js puts a strip of buttons (Wrap lines, Copy) above each code block, and makes
  // the block focusable so the arrow keys scroll it. runner.js puts the code runner's controls and output under
  // each block of a response (a `.runner` after the block's box; the sanitiser lets no
  // content class "runner" through), with attributes of its own only.
  const runnerAttributes = ["type", "class", "hidden", "tabindex", "spellcheck", "rows", "autocomplete", "role"];
  const ours = (el) =>
    (el.matches(".code-box > .code-tools:first-child > :is(button.copy, button.wrap-toggle)") && el.getAttribute("type") === "button" &&
      [...el.attributes].every((a) => ["type", "class", "title", "aria-pressed"].includes(a.name))) ||
    (el.matches(".code-box > .code") && el.getAttribute("tabindex") === "0" &&
      [...el.attributes].every((a) => ["class", "data-lang", "tabindex"].includes(a.name))) ||
    (el.closest(".code-box + .runner") !== null &&
      [...el.attributes].every((a) => runnerAttributes.includes(a.name) || a.name.startsWith("aria-")));
  for (const el of document.querySelectorAll(`.rendered :is(${unwelcome})`)) if (!ours(el)) found.push(`${describe(el)} ${el.outerHTML.slice(0, 80)}`);
  return found;
}

/** In the page: all text a reader can get at, with form field values and the title. */
function pageText() {
  const parts = [document.title];
  const walker = document.createTreeWalker(document.body ?? document.documentElement, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("script, style, template") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  let text = "";
  for (let n = walker.nextNode(); n; n = walker.nextNode()) text += n.data;
  parts.push(text);
  for (const field of document.querySelectorAll("input, textarea, option")) parts.push(field.value);
  return parts.join("\n\u0000\n");
}

/** In the page: fires at every element of the content what a reader's pointer and focus would. */
function poke(selector) {
  const elements = [...document.querySelectorAll(selector)].slice(0, 5000);
  const types = ["pointerover", "pointerenter", "mouseover", "mouseenter", "mousemove", "focusin", "animationstart", "animationend", "transitionend", "toggle", "begin"];
  for (const el of elements) {
    for (const type of types) el.dispatchEvent(new Event(type, { bubbles: true }));
  }
  // Focus only moves to what can take it (autofocus payloads wait for exactly that).
  for (const el of document.querySelectorAll(`${selector}:is(a, input, textarea, select, button, [tabindex], [contenteditable])`)) {
    el.focus({ preventScroll: true });
  }
  document.activeElement?.blur?.();
  return elements.length;
}

/**
 * Opens `path` and reports every problem: the response's status and CSP, anything the
 * detectors saw while the page loaded and was hovered, focused and clicked, live markup,
 * leaving the page, and every string of `expect` missing from the page's text.
 */
async function visit(page, origin, path, { expect = [], status = 200, json = false, real = true, settle = 40 } = {}) {
  page.sink.length = 0;
  const url = new URL(path, origin).href;
  const response = await page.goto(url);
  return inspect(page, path, response, { expect, status, json, real, settle });
}

async function inspect(page, label, response, { expect = [], status = 200, json = false, real = true, settle = 40 } = {}) {
  const problems = [];
  if (response) {
    if (response.status() !== status) problems.push(`status ${response.status()}, not ${status}`);
    for (const p of cspProblems(response.headers()["content-security-policy"])) problems.push(`CSP: ${p}`);
    const type = response.headers()["content-type"] ?? "";
    if (json && !type.startsWith("application/json")) problems.push(`served as ${type}`);
  }
  await page.waitForLoadState("load");
  const landed = page.url();
  try {
    await interact(page, { json, real, settle });
    if (page.url() !== landed) problems.push(`left the page for ${page.url()}`);
    else if (!json) for (const m of await page.evaluate(liveMarkup)) problems.push(`live markup: ${m}`);
  } catch (error) {
    // Only a navigation (a refresh, a script, a link) pulls the page away mid-check.
    problems.push(`left the page for ${page.url()} (${error.message.split("\n")[0]})`);
  }
  problems.push(...page.sink.splice(0));
  if (expect.length && page.url() === landed) {
    const text = norm(await page.evaluate(pageText));
    const missing = [...new Set(expect)].filter((e) => !text.includes(norm(e)));
    if (missing.length) problems.push(`${missing.length} expected texts missing, e.g. ${missing.slice(0, 4).map((m) => JSON.stringify(m.slice(0, 90))).join(", ")}`);
  }
  return problems.map((p) => `${label}: ${p}`);
}

/**
 * Like `visit`, for a paged list: each page is checked as it is, following its "Next page"
 * link, and every expected text must be on one of the pages.
 */
async function visitPages(page, origin, path, { expect = [] } = {}) {
  const problems = [];
  let text = "";
  for (let next = path, n = 0; next; n += 1) {
    problems.push(...(await visit(page, origin, next)));
    text += `${norm(await page.evaluate(pageText))}\n`;
    next = await page.locator('a[rel="next"]').getAttribute("href", { timeout: 1000 }).catch(() => null);
    if (n > 100) throw new Error(`${path}: paging does not end`);
  }
  const missing = [...new Set(expect)].filter((e) => !text.includes(norm(e)));
  if (missing.length) problems.push(`${path}: ${missing.length} expected texts missing from every page, e.g. ${missing.slice(0, 4).map((m) => JSON.stringify(m.slice(0, 90))).join(", ")}`);
  return problems;
}

/** A reader's pointer, focus and clicks over the page's content, then a moment for late effects. */
async function interact(page, { json, real, settle }) {
  if (!json) {
    await page.evaluate(poke, "main *");
    if (real) {
      // A real pointer over the links and marked-up text of the content, and a click on
      // every link whose scheme is not the web's (those are where script would hide).
      const links = page.locator(".rendered a, main td a, main h1 a");
      const count = Math.min(await links.count(), 3);
      for (let i = 0; i < count; i++) await links.nth(i).hover({ force: true, timeout: 1000 }).catch(() => {});
      const odd = await page.evaluate(() => [...document.querySelectorAll(".rendered a")].flatMap((a, i) =>
        (!a.hasAttribute("href") || !["http:", "https:", "mailto:"].includes(a.protocol) ? [i] : [])));
      for (const i of odd.slice(0, 3)) {
        await page.locator(".rendered a").nth(i).click({ force: true, timeout: 1000, noWaitAfter: true }).catch(() => {});
      }
      // The rest get a synthetic click, which follows a link just the same.
      await page.evaluate((indices) => {
        const all = document.querySelectorAll(".rendered a");
        for (const i of indices) all[i].click();
      }, odd.slice(3));
      for (let i = 0; i < 2; i++) await page.keyboard.press("Tab");
    }
  }
  await page.waitForTimeout(settle);
}

// ---------------------------------------------------------------------------------------
// The self-check: the same detectors on pages that are vulnerable on purpose.

test("the detectors fire on a page without a CSP, and on a CSP that blocks script", async () => {
  const pages = {
    "/open": `<!doctype html><title>open</title><main><div class="rendered"><p>MRK-self-MRK</p>
      <img src=x onerror="alert('self-img')"><script>fetch('/__xss/self-script')</script><img src="/__xss/self-load">
      <div onmouseover="confirm('self-hover')">hover</div><a href="javascript:prompt('self-link')">link</a></div></main>`,
    "/blocked": `<!doctype html><title>blocked</title><main><div class="rendered"><script>alert('self-blocked')</script>
      <a href="javascript:alert('self-blocked-link')">link</a></div></main>`,
    "/refresh": `<!doctype html><meta http-equiv="refresh" content="0;url=/__xss/self-refresh"><main>bye</main>`,
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    const headers = { "content-type": "text/html; charset=utf-8" };
    if (path === "/blocked") headers["content-security-policy"] = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";
    res.writeHead(pages[path] ? 200 : 404, headers).end(pages[path] ?? "no");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  try {
    const page = await instrument(await watchedPage(env.browser), origin);
    const open = (await visit(page, origin, "/open", { expect: ["MRK-self-MRK", "MRK-not-there-MRK"] })).join("\n");
    assert.match(open, /CSP: no Content-Security-Policy header/);
    assert.match(open, /dialog alert\("self-img"\)/, "an onerror handler is caught");
    assert.match(open, /request \(fetch\) http:\/\/127\.0\.0\.1:\d+\/__xss\/self-script/, "a request to /__xss/ is caught");
    assert.match(open, /request \(image\) http:\/\/127\.0\.0\.1:\d+\/__xss\/self-load/, "and so is a resource the content loads");
    assert.match(open, /dialog confirm\("self-hover"\)/, "a handler that needs the pointer is caught");
    assert.match(open, /dialog prompt\("self-link"\)/, "a javascript: link is clicked and caught");
    assert.match(open, /live markup: <img> in rendered content has onerror/);
    assert.match(open, /live markup: <a> in rendered content to javascript:/);
    assert.match(open, /expected texts missing, e\.g\. "MRK-not-there-MRK"/, "a missing marker is caught");
    assert.doesNotMatch(open, /"MRK-self-MRK"/, "a present marker is found");

    const blocked = (await visit(page, origin, "/blocked")).join("\n");
    assert.doesNotMatch(blocked, /dialog/, "the CSP stops the script");
    assert.match(blocked, /csp violation: script-src(-elem)? blocked inline/, "and the violation is caught as an event");
    assert.match(blocked, /console: .*Content Security Policy/, "and as a console message");

    const refreshed = (await visit(page, origin, "/refresh", { settle: 500 })).join("\n");
    assert.match(refreshed, /request \(document\) .*\/__xss\/self-refresh/);
    assert.match(refreshed, /left the page/);

    assert.deepEqual(cspProblems("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'"), [
      "script-src allows 'unsafe-inline'", "script-src allows 'unsafe-eval'",
      "object-src is not 'none'", "base-uri is not 'none'", "frame-ancestors is not 'none'"]);
    assert.deepEqual(cspProblems("default-src *; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"), ["default-src allows *"]);
    await page.context().close();
  } finally {
    server.close();
  }
});

// ---------------------------------------------------------------------------------------
// Seeding: every way in, with payloads.

const S = {}; // what the seeding made, for the page tests

async function session(username, origin) {
  const page = await instrument(await watchedPage(env.browser), origin);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await login(page, origin, username);
  return page;
}

/** A JSON API client with a bearer token. */
function client(origin, token) {
  return async (method, path, body, type = "application/json") => {
    const response = await fetch(new URL(path, origin), {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": type } : {}) },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let data = text;
    try { data = JSON.parse(text); } catch { /* not JSON */ }
    return { status: response.status, data, type: response.headers.get("content-type"), headers: response.headers };
  };
}

async function ok(promise, status = 200) {
  const res = await promise;
  assert.equal(res.status, status, JSON.stringify(res.data).slice(0, 500));
  return res.data;
}

/** Blackhat answers with every explanation used: `texts` fills the seven boxes. */
function answers(texts, classifications) {
  const e = (i) => texts[i % texts.length];
  const side = (o) => ({
    executability: "yes_partially", executability_explanation: e(o),
    instruction_following: "minor_issues", instruction_following_explanation: e(o + 1),
    correctness: "major_issues", correctness_explanation: e(o + 2),
  });
  return { a: side(0), b: side(3), sxs: 3, sxs_explanation: e(6), classifications, time_spent_s: 95 };
}

/** `items` spread over `n` texts, one payload a line. */
function spread(items, n, prefix = "") {
  const out = Array.from({ length: n }, (_, i) => `${prefix}explanation ${i + 1}:`);
  items.forEach((p, i) => { out[i % n] += `\n${p.tagged}`; });
  return out;
}

test("payloads go in through the API, the upload page, CSV and the forms", async () => {
  const origin = env.server.base;
  const P = corpus(origin);
  S.P = P;
  const byId = Object.fromEntries(P.map((p) => [p.id, p]));
  const plain = P.filter((p) => !hasControl(p.text));

  // Tokens, made by the admin's session; their names are payloads (and land in the audit log).
  const admin = await session("admin", origin);
  S.adminPage = admin;
  const csrf = await admin.getAttribute('input[name="csrf_token"]', "value");
  const tokenNames = pack(plain, 100, { per: 1 }).slice(0, 24);
  // Tokens an admin makes for someone else are audited, with their names.
  S.auditedTokenNames = tokenNames.filter((_, i) => i % 4 !== 0).map((t) => t.text.trim());
  const api = {};
  const owners = ["admin", "lead", "rater1", "rater2"];
  for (const [i, t] of tokenNames.entries()) {
    const username = owners[i % owners.length];
    const res = await admin.request.post(`${origin}/api/v1/tokens`, { headers: { "x-csrf-token": csrf }, data: { name: t.text, username } });
    assert.equal(res.status(), 201, await res.text());
    const made = await res.json();
    assert.equal(made.name, t.text.trim());
    api[username] ??= client(origin, made.token);
  }
  S.api = api;

  // Usernames are strict: a payload is refused, never stored.
  for (const p of [byId.at01, byId.sc01, byId.ev01, byId.at03, byId.tp01, byId.mi22]) {
    const res = await api.admin("POST", "/api/v1/users", { username: p.text, role: "rater", password: "a long enough password" });
    assert.ok(res.status >= 400 && res.status < 500, `username ${p.text}: ${res.status}`);
    assert.ok(res.type.startsWith("application/json"));
  }
  const users = await ok(api.admin("GET", "/api/v1/users"));
  assert.deepEqual(users.map((u) => u.username).sort(), owners.slice().sort());

  // Batches named with payloads (one small task each), packed into 200-character names.
  const simple = (id) => JSON.stringify({ external_id: id, prompt: "Reverse a string.", response_a: "Use a rune slice.", response_b: "Use bytes." }) + "\n";
  S.names = pack(plain, 200).map((g) => g.text);
  for (const name of S.names) {
    await ok(api.admin("POST", `/api/v1/batches?${new URLSearchParams({ name })}`, simple("only"), "application/x-ndjson"), 201);
  }

  // The kitchen batch: every payload in the prompt (a string, a conversation, inline),
  // in both answers, models, metadata; rated by both raters.
  const short = P.filter((p) => !hasControl(p.text) && chars(p.tagged) <= 90);
  const kitchenName = `kitchen ${pack(short.slice(0, 12), 180).map((g) => g.text)[0]}`;
  const eids = pack(short.slice(12), 190).map((g) => g.text);
  const models = pack(short.slice(40), 190, { per: 1 }).map((g) => g.text);
  const swallowLast = (list) => [...list.filter((p) => p.id !== "cd12"), ...list.filter((p) => p.id === "cd12")];
  const all = swallowLast(P);
  const meta = (i) => ({ note: P[i].text, [P[i + 1].text]: P[i + 2].text, nested: { list: [P[i + 3].text, { deep: P[i + 4].text }] } });
  const chunks = (list, n) => Array.from({ length: n }, (_, i) => list.filter((_, j) => j % n === i));
  const roles = ["system", "user", "assistant"];
  const kitchen = [
    { external_id: `k1 ${eids[0]}`, prompt: doc(all), response_a: doc(all), response_b: doc([...all].reverse().filter((p) => p.id !== "cd12").concat(byId.cd12)), model_a: models[0], model_b: models[1], metadata: meta(0) },
    // Each message is rendered on its own: every payload alone, unaffected by the others.
    { external_id: `k2 ${eids[1]}`, prompt: P.flatMap((p, i) => [{ role: roles[i % 3], content: p.mark }, { role: roles[(i + 1) % 3], content: p.text }]),
      response_a: doc(all), response_b: doc(all), model_a: models[1], model_b: models[2], metadata: meta(5) },
    { external_id: `k3 ${eids[2]}`, prompt: `Compare these: ${all.filter((p) => p.id !== "cd12").map((p) => p.tagged).join(" ")}`, response_a: all.map((p) => p.tagged).join(" "), response_b: doc(all), model_a: models[2], model_b: models[0], metadata: meta(10) },
  ].map((t) => ({ ...t, external_id: [...t.external_id].slice(0, 200).join("").trim() }));
  // Raters are shown the external ids (they are not by default), so the payloads in them
  // reach the rater's pages too.
  const made = await ok(api.admin("POST", `/api/v1/batches?${new URLSearchParams({ name: kitchenName, overlap: "2", raters_see_external_ids: "true" })}`,
    kitchen.map((t) => JSON.stringify(t)).join("\n") + "\n", "application/x-ndjson"), 201);
  S.kitchen = { id: made.id, name: kitchenName, tasks: kitchen, models: models.slice(0, 3) };

  // Classification questions with payload labels and options.
  const q = pack(short.slice(60), 120, { per: 1 }).map((g) => g.text);
  S.questions = [
    { key: "kind", label: q[0], multiple: true, required: true, options: q.slice(1, 6) },
    { key: "lang", label: q[6], options: q.slice(7, 11) },
  ];
  await ok(api.admin("PATCH", `/api/v1/batches/${made.id}`, { classifications: S.questions }));
  const choice = { kind: [q[1], q[3], q[5]], lang: q[8] };

  // A JSON-array upload: conversations and metadata.
  const jsonTasks = chunks(all, 3).map((c, i) => ({
    external_id: [...`json-${i} ${c[0].tagged}`].slice(0, 200).join("").trim(),
    prompt: c.map((p, j) => ({ role: roles[j % 3], content: `${p.mark}\n\n${p.text}` })),
    response_a: doc(c), response_b: c.map((p) => p.tagged).join(" "), metadata: meta(i),
  }));
  const jsonName = `json ${pack(short.slice(20, 30), 180).map((g) => g.text)[0]}`;
  const jsonBatch = await ok(api.admin("POST", `/api/v1/batches?${new URLSearchParams({ name: jsonName })}`, JSON.stringify(jsonTasks), "application/json"), 201);
  S.json = { id: jsonBatch.id, name: jsonName, tasks: jsonTasks };

  // The upload page: a CSV with payloads in every column, a payload batch name.
  await admin.goto(`${origin}/admin/batches`);
  const csvField = (s) => `"${s.replaceAll('"', '""')}"`;
  const header = ["external_id", "prompt", "response_a", "response_b", "model_a", "model_b", "meta.note", `meta.${byId.ev01.text}`];
  const csvRows = chunks(all, 4).map((c, i) => [`csv-${i} ${c[0].tagged}`.slice(0, 200), doc(c), c.map((p) => p.tagged).join("\n"),
    doc([...c].reverse()), c[1].tagged.slice(0, 200), c[2].tagged.slice(0, 200), c[3].text, c[4].text]);
  const csv = [header, ...csvRows].map((row) => row.map(csvField).join(",")).join("\r\n") + "\r\n";
  const csvName = `csv ${pack(short.slice(30, 45), 190).map((g) => g.text)[0]}`.slice(0, 200).trim();
  await admin.fill('#upload-form input[name="name"]', csvName);
  await admin.setInputFiles('#upload-form input[name="file"]', { name: "tasks.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
  admin.sink.length = 0;
  await Promise.all([admin.waitForNavigation({ timeout: 10_000 }), admin.click('#upload-form button[type="submit"]')]);
  const batches = await ok(api.admin("GET", "/api/v1/batches"));
  const csvBatch = batches.find((b) => b.name === csvName);
  assert.ok(csvBatch, "the CSV batch is listed");
  assert.equal(csvBatch.progress.tasks, csvRows.length);
  S.csv = { id: csvBatch.id, name: csvName, eids: csvRows.map((r) => r[0].trim()), chunks: chunks(all, 4) };
  S.uploadProblems = await inspect(admin, "/admin/batches after the CSV upload", null, { expect: [csvName, ...S.names] });

  // A bad upload: the errors name the payload ids, and the page lists them.
  await admin.fill('#upload-form input[name="name"]', "refused");
  const dupes = short.slice(0, 30).flatMap((p) => [simple(p.tagged.slice(0, 200)), simple(p.tagged.slice(0, 200))]).join("");
  await admin.setInputFiles('#upload-form input[name="file"]', { name: "bad.jsonl", mimeType: "application/x-ndjson", buffer: Buffer.from(dupes) });
  await admin.click('#upload-form button[type="submit"]');
  await admin.waitForSelector("#upload-errors:not([hidden])");
  S.badUploadProblems = await inspect(admin, "/admin/batches after a bad upload", null, { expect: short.slice(0, 30).map((p) => p.mark) });

  // Ratings. Each rater sees each kitchen task with a draft of payload explanations,
  // then submits, skips or marks it out of scope.
  S.ratings = {};
  S.formProblems = [];
  const expl = (prefix) => spread(P, 7, prefix);
  for (const rater of ["rater1", "rater2"]) {
    const page = await session(rater, origin);
    S[`${rater}Page`] = page;
    for (;;) {
      const res = await api[rater]("POST", `/api/v1/batches/${made.id}/next`);
      if (res.status === 204) break;
      assert.equal(res.status, 200, JSON.stringify(res.data));
      const { assignment_id: assignment, task } = res.data;
      const k = task.external_id.slice(0, 2);
      const texts = expl(`${rater} ${k} `);
      await ok(api[rater]("PUT", `/api/v1/assignments/${assignment}/draft`, answers(texts, choice)));
      const expect = [...P.map((p) => p.mark), ...P.filter((p) => p.verbatim).map((p) => p.text), kitchenName, task.external_id,
        ...texts.map((t) => t.trim()), ...S.questions.flatMap((x) => [x.label, ...x.options])];
      S.formProblems.push(...(await visit(page, origin, `/assignments/${assignment}`, { expect })));
      let done;
      if (k === "k2" && rater === "rater1") {
        done = await ok(api[rater]("POST", `/api/v1/assignments/${assignment}/skip`, { reason: "other", note: pack(P, 4900, { sep: "\n" })[0].text }));
      } else if (k === "k2") {
        done = await ok(api[rater]("POST", `/api/v1/assignments/${assignment}/out-of-scope`, { explanation: pack(P.slice(40), 4900, { sep: "\n" })[0].text }));
      } else if (!(rater === "rater2" && k === "k3")) {
        done = await ok(api[rater]("POST", `/api/v1/assignments/${assignment}/submit`, answers(texts, choice)));
      } else {
        // Through the page itself: the draft (payload explanations, payload classifications)
        // is in the form; submitting it moves on to the next task or the end.
        page.sink.length = 0;
        const [next] = await Promise.all([page.waitForNavigation(), page.click("#submit")]);
        S.formProblems.push(...(await inspect(page, `after submitting ${k} on the page`, next, {})));
        await page.goto(`${origin}/ratings`);
        const href = await page.locator("tbody tr", { hasText: task.external_id }).locator('a[href^="/ratings/"]').getAttribute("href");
        done = { rating_id: href.split("/").pop() };
      }
      S.ratings[`${rater}-${k}`] = { id: done.rating_id, texts, assignment };
    }
  }
  assert.deepEqual(Object.keys(S.ratings).sort(), ["rater1-k1", "rater1-k2", "rater1-k3", "rater2-k1", "rater2-k2", "rater2-k3"]);

  // The lead returns, accepts and rejects with payload comments; rater1 revises.
  S.comments = pack(P, 4900, { sep: "\n" }).map((g) => g.text);
  assert.ok(S.comments.length >= 3);
  const decide = async (key, decision, comment) => {
    const { version } = await ok(api.lead("GET", `/api/v1/ratings/${S.ratings[key].id}`));
    await ok(api.lead("POST", `/api/v1/ratings/${S.ratings[key].id}/review`, { decision, comment, version }));
  };
  await decide("rater1-k1", "return", S.comments[0]);
  // One decision through the review page's form.
  const lead = await session("lead", origin);
  await lead.goto(`${origin}/review/${S.ratings["rater2-k1"].id}`);
  await lead.check('input[name="decision"][value="accept"]');
  await lead.fill('textarea[name="comment"]', S.comments[1]);
  lead.sink.length = 0;
  const [decided] = await Promise.all([lead.waitForNavigation(), lead.click('button:has-text("Record the decision")')]);
  S.formProblems.push(...(await inspect(lead, "after a decision on the review page", decided, { expect: [kitchenName] })));
  // A decision goes on to the next waiting rating, or back to the queue when none is left.
  assert.match(new URL(lead.url()).pathname, /^\/review(\/[0-9a-f-]{36})?$/);
  await lead.context().close();
  await decide("rater2-k3", "reject", S.comments[2]);
  S.revised = expl("revised ").reverse();
  await ok(api.rater1("PUT", `/api/v1/ratings/${S.ratings["rater1-k1"].id}`, answers(S.revised, choice)));
});

// ---------------------------------------------------------------------------------------
// The pages, by role.

function report(problems) {
  if (problems.length) assert.fail(`${problems.length} problems:\n${problems.slice(0, 60).map((p) => p.slice(0, 400)).join("\n")}`);
}
const marks = () => S.P.map((p) => p.mark);
const verbatim = () => S.P.filter((p) => p.verbatim).map((p) => p.text);
const texts = (k) => S.ratings[k].texts.map((t) => t.trim());
const taskPath = (batch, eid) => `/batches/${batch}/tasks/${encodeURIComponent(eid)}`;

test("the rater's pages: the form with A and B, the queue, history and each rating", async () => {
  const origin = env.server.base;
  const problems = [...S.formProblems];
  const { kitchen } = S;
  for (const rater of ["rater1", "rater2"]) {
    const page = S[`${rater}Page`];
    const k = (t) => `${rater}-${t}`;
    problems.push(...(await visit(page, origin, "/", { expect: [...S.names, kitchen.name, S.json.name, S.csv.name] })));
    problems.push(...(await visit(page, origin, "/ratings", {
      expect: [kitchen.name, ...kitchen.tasks.map((t) => t.external_id), ...(rater === "rater1" ? [S.comments[0]] : [S.comments[1], S.comments[2]])],
    })));
    for (const t of ["k1", "k2", "k3"]) {
      const expect = [...marks(), kitchen.name];
      const key = k(t);
      if (key === "rater1-k1") expect.push(...S.revised.map((x) => x.trim()), S.comments[0]);
      else if (key === "rater1-k2") expect.push(pack(S.P, 4900, { sep: "\n" })[0].text);
      else if (key === "rater2-k2") expect.push(pack(S.P.slice(40), 4900, { sep: "\n" })[0].text);
      else expect.push(...texts(key));
      if (key === "rater2-k1") expect.push(S.comments[1]);
      if (key === "rater2-k3") expect.push(S.comments[2]);
      problems.push(...(await visit(page, origin, `/ratings/${S.ratings[key].id}`, { expect })));
    }
    // The form's own address once the task is done.
    problems.push(...(await visit(page, origin, `/assignments/${S.ratings[k("k1")].assignment}`, { expect: [kitchen.name] })));
    problems.push(...(await visit(page, origin, `/batches/${kitchen.id}/next`, { expect: [kitchen.name] })));
  }
  report(problems);
});

test("the lead's pages: review queue, each rating, the disagreement view, the dashboard", async () => {
  const origin = env.server.base;
  const { kitchen } = S;
  const page = await session("lead", origin);
  const problems = [];
  problems.push(...(await visit(page, origin, "/", { expect: [...S.names, kitchen.name, S.csv.name, S.json.name] })));
  problems.push(...(await visit(page, origin, "/review", { expect: [kitchen.name, kitchen.tasks[0].external_id, kitchen.tasks[2].external_id] })));
  // Links to a task work whatever its id holds (a "/" included).
  const taskLinks = async () => page.locator('main a[href*="/tasks/"]').evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  const linked = await taskLinks();
  assert.ok(linked.length >= 2);
  for (const [key, { id }] of Object.entries(S.ratings)) {
    const expect = [...marks(), kitchen.name];
    if (key === "rater1-k1") expect.push(...S.revised.map((x) => x.trim()), S.comments[0]);
    else if (key.endsWith("k2")) expect.push(key === "rater1-k2" ? pack(S.P, 4900, { sep: "\n" })[0].text : pack(S.P.slice(40), 4900, { sep: "\n" })[0].text);
    else expect.push(...texts(key));
    problems.push(...(await visit(page, origin, `/review/${id}`, { expect })));
    linked.push(...(await taskLinks()));
  }
  for (const href of new Set(linked)) {
    const res = await page.request.get(origin + href);
    if (res.status() !== 200) problems.push(`${href}: the link to the task answers ${res.status()}`);
  }
  for (const [i, task] of kitchen.tasks.entries()) {
    const expect = [...marks(), ...verbatim(), kitchen.name, task.external_id];
    if (i === 0) expect.push(...S.revised.map((x) => x.trim()), ...texts("rater2-k1"), S.questions[0].options[0], S.questions[1].options[1]);
    problems.push(...(await visit(page, origin, taskPath(kitchen.id, task.external_id), { expect })));
  }
  problems.push(...(await visit(page, origin, `/batches/${kitchen.id}`, { expect: [kitchen.name, ...kitchen.models, "rater1", "rater2"] })));
  problems.push(...(await visit(page, origin, `/api/v1/batches/${kitchen.id}/metrics`, { json: true, expect: [JSON.stringify(kitchen.models[0]).slice(1, -1)] })));
  // The exports carry every payload; a browser must never take them for HTML.
  for (const format of ["csv", "jsonl"]) {
    const res = await S.api.lead("GET", `/api/v1/batches/${kitchen.id}/export?format=${format}`);
    assert.equal(res.status, 200);
    assert.doesNotMatch(res.type, /html/, `the ${format} export is not HTML`);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  }
  for (const task of S.json.tasks) {
    problems.push(...(await visit(page, origin, taskPath(S.json.id, task.external_id), { expect: [S.json.name, task.external_id, ...task.prompt.map((m) => m.content.split("\n")[0])] })));
  }
  for (const [i, eid] of S.csv.eids.entries()) {
    const items = S.csv.chunks[i];
    const expect = [S.csv.name, eid, ...items.map((p) => p.mark), ...items.filter((p) => p.verbatim).map((p) => p.text)];
    problems.push(...(await visit(page, origin, taskPath(S.csv.id, eid), { expect })));
  }
  // A payload in the address: the not-found page shows nothing live.
  for (const p of [S.P[0], S.P.find((x) => x.id === "at01"), S.P.find((x) => x.id === "mx19")]) {
    problems.push(...(await visit(page, origin, taskPath(kitchen.id, p.text), { status: 404 })));
  }
  report(problems);
});

test("the admin's pages: batches, settings, users, audit log, and forms that echo input", async () => {
  const origin = env.server.base;
  const page = S.adminPage;
  const { kitchen } = S;
  const problems = [...S.uploadProblems, ...S.badUploadProblems];
  problems.push(...(await visit(page, origin, "/", { expect: [...S.names, kitchen.name, S.csv.name, S.json.name] })));
  problems.push(...(await visit(page, origin, "/admin/batches", { expect: [...S.names, kitchen.name, S.csv.name, S.json.name] })));
  // The questions are shown as JSON in a text box.
  problems.push(...(await visit(page, origin, `/admin/batches/${kitchen.id}`, {
    expect: [kitchen.name, ...S.questions.flatMap((q) => [q.label, ...q.options]).map((t) => JSON.stringify(t).slice(1, -1))],
  })));
  const named = (await (await page.request.get(`${origin}/api/v1/batches`)).json()).find((b) => b.name === S.names[0]);
  problems.push(...(await visit(page, origin, `/admin/batches/${named.id}`, { expect: [S.names[0]] })));
  problems.push(...(await visit(page, origin, "/admin/users", { expect: ["rater1", "rater2", "lead"] })));
  problems.push(...(await visitPages(page, origin, "/admin/audit", {
    // The log reads each entry in words: token names as they are, not as JSON.
    expect: [...S.names, kitchen.name, ...S.auditedTokenNames],
  })));
  problems.push(...(await visit(page, origin, "/review", { expect: [kitchen.name] })));
  problems.push(...(await visit(page, origin, `/batches/${kitchen.id}`, { expect: [kitchen.name, ...kitchen.models] })));

  // The settings form echoes what was typed in a new classification question (a key
  // that is no key, a label, too many options) beside the errors it gets.
  const lines = S.P.filter((p) => !hasControl(p.text)).slice(0, 25).map((p) => p.tagged);
  await page.goto(`${origin}/admin/batches/${kitchen.id}`);
  const fresh = page.locator(".question-row").last();
  await fresh.locator('input[name$=".key"]').fill(lines[0]);
  await fresh.locator('input[name$=".label"]').fill(lines[1]);
  await fresh.locator('textarea[name$=".options"]').fill(lines.join("\n"));
  page.sink.length = 0;
  const [saved] = await Promise.all([page.waitForNavigation(), page.click('button:has-text("Review changes")')]);
  problems.push(...(await inspect(page, "settings saved with a payload question", saved, { status: 422, expect: [lines[0], lines[1], lines.join("\n")] })));

  // The new-account form echoes a refused username.
  for (const p of ["at01", "at04", "ev08"].map((id) => S.P.find((x) => x.id === id))) {
    await page.goto(`${origin}/admin/users`);
    await page.fill('form[action="/admin/users"] input[name="username"]', p.text);
    await page.fill('form[action="/admin/users"] input[name="password"]', "a good long password");
    page.sink.length = 0;
    const [made] = await Promise.all([page.waitForNavigation(), page.click('form[action="/admin/users"] button')]);
    problems.push(...(await inspect(page, `new account named ${p.id}`, made, { status: 422, expect: [p.text] })));
  }
  report(problems);
});

test("the sign-in page with a payload in the address and in the username", async () => {
  const origin = env.server.base;
  const page = await instrument(await watchedPage(env.browser), origin);
  const problems = [];
  const at01 = S.P.find((x) => x.id === "at01");
  const next = `/${at01.text}`;
  // A `next` that is not a plain path on this site (this one has quotes and angle
  // brackets) is replaced by `/`, so the payload never reaches the page at all.
  problems.push(...(await visit(page, origin, `/login?next=${encodeURIComponent(next)}`)));
  const kept = await page.inputValue('input[name="next"]');
  if (kept !== "/") problems.push(`next kept as ${JSON.stringify(kept)}, not replaced by /`);
  const at04 = S.P.find((x) => x.id === "at04");
  await page.fill('input[name="username"]', at04.text);
  await page.fill('input[name="password"]', "not the password at all");
  page.sink.length = 0;
  const [failed] = await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
  problems.push(...(await inspect(page, "sign-in refused", failed, { status: 401, expect: [at04.text.trim()] })));
  report(problems);
});
