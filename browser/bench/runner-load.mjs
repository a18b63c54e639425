// What the code runner costs, measured in Chromium: the rating form's load for a rater
// who never presses Run, with runner.js and with it blocked (requests, bytes, time to
// DOMContentLoaded and to load), and the time of a first Python run (Pyodide loads, from
// a cold cache and from the browser's cache) and of a second one. Rewrites its section of
// BENCHMARKS.md between `<!-- begin runner -->` and `<!-- end runner -->`, as the
// benches/*.rs do theirs.
//
//   scripts/vendor-pyodide
//   cd browser && npm ci && VERDICT_BIN=/var/tmp/verdict-ci-target/debug/verdict node bench/runner-load.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import { launchBrowser, login, startVerdict } from "../tests/harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
process.env.VERDICT_PYODIDE_DIR ??= `${ROOT}vendor/node_modules/pyodide`;
const LOADS = Number(process.env.LOADS ?? 21); // page loads measured per variant
const FIRST_RUNS = Number(process.env.FIRST_RUNS ?? 3); // cold first Python runs

const fence = (language, code) => `\`\`\`${language}\n${code}\n\`\`\``;
// A task like the demo's: a prompt and two answers with a few code blocks each.
const TASK = {
  external_id: "bench-1",
  prompt: "Write `mean(xs)` that returns the average of a list of numbers, and 0 for an empty list.",
  response_a: [
    "Here is a version that handles the empty list:",
    fence("python", "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0\n\nprint(mean([1, 2, 3]))"),
    "And with its tests:",
    fence("python", "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0\n\nassert mean([]) == 0\nassert mean([2, 4]) == 3\nprint('ok')"),
  ].join("\n\n"),
  response_b: [
    "In JavaScript:",
    fence("js", "const mean = (xs) => xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;\nconsole.log(mean([1, 2, 3]));"),
    fence("rust", "fn mean(xs: &[f64]) -> f64 { if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 } }"),
  ].join("\n\n"),
};

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
/** The interquartile range: how far apart the middle half of the values lie. */
const spread = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return at(0.75) - at(0.25);
};
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
const ms = (value) => `${Math.round(value)} ms`;
const secs = (value) => `${(value / 1000).toFixed(2)} s`;

function machine() {
  const cpu = cpus()[0]?.model?.trim() ?? "unknown CPU";
  return `${cpu}, ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB`;
}

/** Same contract as benches/common's `write_section`: replace this section, or append it. */
function writeSection(path, name, content) {
  const begin = `<!-- begin ${name} -->`;
  const end = `<!-- end ${name} -->`;
  const section = `${begin}\n${content.trimEnd()}\n${end}`;
  let report = "";
  try {
    report = readFileSync(path, "utf8");
  } catch {
    // No report yet: this section starts it.
  }
  const b = report.indexOf(begin);
  const e = report.indexOf(end);
  if (b !== -1 && e > b) report = report.slice(0, b) + section + report.slice(e + end.length);
  else if (report.trim() === "") report = `${section}\n`;
  else report = `${report.trimEnd()}\n\n${section}\n`;
  writeFileSync(path, report);
}

/** A page in a fresh context (empty cache) holding the rater's session, counting traffic. */
async function freshPage(browser, storageState, { blockRunner = false } = {}) {
  const context = await browser.newContext({ storageState });
  const page = await context.newPage();
  page.traffic = [];
  const pending = [];
  page.on("requestfinished", (request) => {
    pending.push(request.sizes().catch(() => null).then((sizes) => {
      page.traffic.push({ url: request.url(), bytes: sizes ? sizes.responseBodySize + sizes.responseHeadersSize : 0 });
    }));
  });
  // Sizes arrive after the requests end: wait for them before reading the traffic.
  page.settled = () => Promise.all(pending);
  if (blockRunner) await page.route("**/static/runner.js", (route) => route.abort());
  // Chromium's own count of main-thread time spent running script: steadier than the
  // clock on a busy machine, and what a script adds to the page.
  page.cdp = await context.newCDPSession(page);
  await page.cdp.send("Performance.enable");
  return page;
}

/**
 * runner.js's own work as the page loads (finding the blocks, adding their controls), in
 * the page's clock: the script served with a timestamp before and after it. A separate
 * set of loads, since the interception slows the request itself.
 */
async function runnerOwnTime(browser, storageState, url) {
  const page = await freshPage(browser, storageState);
  await page.route("**/static/runner.js", async (route) => {
    const response = await route.fetch();
    const body = `self.benchStart = performance.now();\n${await response.text()}\nself.benchTime = performance.now() - self.benchStart;\n`;
    await route.fulfill({ response, body });
  });
  await page.goto(url, { waitUntil: "load" });
  const time = await page.evaluate(() => self.benchTime);
  await page.context().close();
  return time;
}

/** One cold load of the form: what it fetched and how long it took. */
async function loadForm(browser, storageState, url, blockRunner) {
  const page = await freshPage(browser, storageState, { blockRunner });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForLoadState("networkidle");
  const timing = await page.evaluate(() => {
    const [nav] = performance.getEntriesByType("navigation");
    return { dcl: nav.domContentLoadedEventEnd - nav.startTime, load: nav.loadEventEnd - nav.startTime };
  });
  const { metrics } = await page.cdp.send("Performance.getMetrics");
  const script = 1000 * metrics.find((m) => m.name === "ScriptDuration").value;
  const runnerUi = await page.locator(".runner").count();
  await page.settled();
  const traffic = page.traffic;
  await page.context().close();
  return {
    ...timing,
    script,
    requests: traffic.length,
    bytes: traffic.reduce((sum, t) => sum + t.bytes, 0),
    runnerRequests: traffic.filter((t) => t.url.includes("/runner/")).length,
    runnerUi,
  };
}

/** Presses Run on the first Python block; the time from the press to its result. */
async function timeRun(page, index = 0) {
  const status = page.locator(".runner-status").nth(index);
  const started = performance.now();
  await page.locator('.runner[data-language="python"] .runner-run').nth(index).click();
  await page.waitForFunction(
    (el) => el.dataset.status && el.dataset.status !== "running",
    await status.elementHandle(),
    { timeout: 180_000 },
  );
  const elapsed = performance.now() - started;
  const result = await status.getAttribute("data-status");
  if (result !== "passed") throw new Error(`the Python block ${result}: ${await page.locator(".runner").nth(index).innerText()}`);
  return elapsed;
}

async function main() {
  const server = await startVerdict([["admin", "admin"], ["rater", "rater"]]);
  const browser = await launchBrowser();
  try {
    const setup = await browser.newContext();
    const admin = await setup.newPage();
    await login(admin, server.base, "admin");
    const csrf = await admin.getAttribute('input[name="csrf_token"]', "value");
    const made = await admin.request.post(`${server.base}/api/v1/batches?name=bench&rubric=blackhat&randomize=false`, {
      headers: { "x-csrf-token": csrf, "content-type": "application/x-ndjson" },
      data: `${JSON.stringify(TASK)}\n`,
    });
    if (made.status() !== 201) throw new Error(`batch: ${made.status()} ${await made.text()}`);
    await setup.close();

    const raterContext = await browser.newContext();
    const rater = await raterContext.newPage();
    await login(rater, server.base, "rater");
    await Promise.all([rater.waitForNavigation(), rater.click('form[action$="/next"] button')]);
    const formUrl = rater.url();
    const storageState = await raterContext.storageState();
    await raterContext.close();

    // Page loads, the two variants taken in turn so that drift hits both alike.
    const loads = { with: [], without: [] };
    await loadForm(browser, storageState, formUrl, false); // warm-up: the server's first answers
    for (let i = 0; i < LOADS; i++) {
      loads.with.push(await loadForm(browser, storageState, formUrl, false));
      loads.without.push(await loadForm(browser, storageState, formUrl, true));
    }
    const own = [];
    for (let i = 0; i < LOADS; i++) own.push(await runnerOwnTime(browser, storageState, formUrl));
    for (const load of loads.with) {
      if (load.runnerRequests !== 0 || load.runnerUi === 0) throw new Error(`unexpected load: ${JSON.stringify(load)}`);
    }

    // First Python run from a cold cache (Pyodide downloaded and started), a second run on
    // the same page (in a fresh worker of its own, as every run), and a first run on a new
    // page with Pyodide in the browser's cache.
    const cold = [];
    const second = [];
    const cached = [];
    let pyodideBytes = 0;
    for (let i = 0; i < FIRST_RUNS; i++) {
      const page = await freshPage(browser, storageState);
      await page.goto(formUrl, { waitUntil: "networkidle" });
      const before = page.traffic.length;
      cold.push(await timeRun(page, 0));
      await page.settled();
      pyodideBytes = page.traffic.slice(before).filter((t) => t.url.includes("/runner/")).reduce((sum, t) => sum + t.bytes, 0);
      second.push(await timeRun(page, 1));
      const again = await page.context().newPage();
      await again.goto(formUrl, { waitUntil: "networkidle" });
      cached.push(await timeRun(again, 0));
      await page.context().close();
    }

    const row = (name, list) => {
      const requests = median(list.map((l) => l.requests));
      const bytes = median(list.map((l) => l.bytes));
      const times = ["dcl", "load"].map((key) => ms(median(list.map((l) => l[key])))).join(" | ");
      return `| ${name} | ${requests} | ${kib(bytes)} | ${times} | ${median(list.map((l) => l.script)).toFixed(1)} ms |`;
    };
    const binary = process.env.VERDICT_BIN ?? "target/debug/verdict";
    const build = binary.includes("/release/") ? "a release build" : "a debug build (its dependencies optimised, as Cargo.toml sets)";
    const content = `## Code runner: page load and first run

Measured by \`node bench/runner-load.mjs\` in \`browser/\` (after \`scripts/vendor-pyodide\`) on ${machine()}, headless Chromium against ${build} of verdict on the same machine (loopback, no throttling). The rating form of a task with four code blocks (two Python, one JavaScript, one Rust), each load from an empty cache in a fresh browser context; medians of ${LOADS} loads per variant, taken in turn. "without" blocks \`/static/runner.js\`, as the page was before the runner.

| task page, never pressing Run | requests | transferred | DOMContentLoaded | load | script on the main thread |
|---|---|---|---|---|---|
${row("with runner.js", loads.with)}
${row("without runner.js", loads.without)}

Nothing of the runner is fetched until Run is pressed: 0 requests to \`/runner/\` in each of the ${LOADS} loads with runner.js (runner.js itself is ${kib(median(loads.with.map((l) => l.bytes)) - median(loads.without.map((l) => l.bytes)))} more, compressed). Its own work as the page loads (finding the four blocks and adding their controls) takes ${median(own).toFixed(1)} ms (median; the page's clock around the script). DOMContentLoaded differs by ${ms(median(loads.with.map((l) => l.dcl)) - median(loads.without.map((l) => l.dcl)))} between the two medians, while the loads of one variant spread over ${ms(spread(loads.without.map((l) => l.dcl)))} (interquartile range, without runner.js) on this machine, which other work shares.

| Python run (\`print\` of a small function) | median of ${FIRST_RUNS} | runs |
|---|---|---|
| first run, empty cache (worker and Pyodide fetched, ${mib(pyodideBytes)} transferred, compressed; started) | ${secs(median(cold))} | ${cold.map(secs).join(", ")} |
| second run on the same page (each run has a fresh worker, which starts Pyodide again from the browser's cache) | ${ms(median(second))} | ${second.map(ms).join(", ")} |
| first run on a new page, Pyodide in the browser's cache (\`immutable\`) | ${secs(median(cached))} | ${cached.map(secs).join(", ")} |
`;
    writeSection(`${ROOT}BENCHMARKS.md`, "runner", content);
    process.stdout.write(`${content}\n`);
  } finally {
    await browser.close();
    await server.stop();
  }
}

await main();
