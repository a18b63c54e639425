// The rating form: explanation boxes that follow the rubric, derived answers worked out
// as you go, drafts saved as you go, an active-time timer, keyboard shortcuts and copy
// buttons on code. The rubric document is the one the server checks with; before the
// form is sent, the server is asked what it would refuse, and its own messages are
// shown, so no rule or message is written twice.
(() => {
  "use strict";

  // Code blocks: Copy and "Wrap lines" in a strip above each block, never over its text.
  // Wrapping is one choice for every block, remembered for this user in this browser; a
  // user who never chose gets wrapping where the block is too narrow for its code.
  const codeBlocks = [...document.querySelectorAll(".rendered .code")];
  const logout = document.querySelector("form.logout");
  const wrapKey = `verdict.wrap.${logout ? logout.dataset.user || "" : ""}`;
  const storedWrap = () => {
    try { return localStorage.getItem(wrapKey); } catch { return null; }
  };
  // Lines that wrap get a mark at their second row (the CSS draws it).
  const markWrapped = (block) => {
    const rowHeight = parseFloat(getComputedStyle(block.querySelector("pre") || block).lineHeight) || 20;
    for (const line of block.querySelectorAll(".line")) {
      line.classList.toggle("wrapped", block.classList.contains("wrap") && line.offsetHeight > rowHeight * 1.5);
    }
  };
  function setWrap(block, on) {
    block.classList.toggle("wrap", on);
    const button = block.closest(".code-box").querySelector(".wrap-toggle");
    button.setAttribute("aria-pressed", String(on));
    markWrapped(block);
  }
  function chooseWrap(on) {
    try { localStorage.setItem(wrapKey, on ? "on" : "off"); } catch { /* private mode: this page only */ }
    for (const block of codeBlocks) setWrap(block, on);
  }
  for (const block of codeBlocks) {
    // The block scrolls; the box around it does not, so its buttons stay in sight however
    // far the code is scrolled. The block takes focus, so the arrow keys scroll it.
    const box = document.createElement("div");
    box.className = "code-box";
    block.before(box);
    const tools = document.createElement("div");
    tools.className = "code-tools";
    box.append(tools, block);
    block.tabIndex = 0;
    const wrap = document.createElement("button");
    wrap.type = "button";
    wrap.className = "wrap-toggle";
    wrap.textContent = "Wrap lines";
    wrap.title = "Wrap long lines in every code block (w)";
    wrap.addEventListener("click", () => chooseWrap(!block.classList.contains("wrap")));
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.addEventListener("click", async () => {
      const code = block.querySelector(".src code");
      try {
        await navigator.clipboard.writeText(code ? code.textContent : "");
        button.textContent = "Copied";
      } catch {
        button.textContent = "Copy failed";
      }
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    });
    tools.append(wrap, button);
    const stored = storedWrap();
    setWrap(block, stored ? stored === "on" : block.scrollWidth > block.clientWidth + 1);
  }
  if (codeBlocks.length) {
    // Wrapped rows change with the width: mark them again when a pane resizes.
    let pending = false;
    new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; for (const block of codeBlocks) markWrapped(block); });
    }).observe(codeBlocks[0].closest(".rendered") || document.body);
  }

  // One response at the full width of its pane (a / b, or its button), and back.
  const pairBox = document.querySelector(".responses");
  const focusButtons = [];
  // A focus button's words, and its name: the words first, as seen, then its response.
  function label(button, pressed) {
    button.setAttribute("aria-pressed", String(pressed));
    button.textContent = pressed ? "Show both" : "Full width";
    button.setAttribute("aria-label", `${button.textContent}: Response ${button.dataset.side.toUpperCase()}`);
  }
  function focusSide(side) {
    if (!pairBox) return;
    const now = pairBox.dataset.focus === side ? "" : side;
    if (now) pairBox.dataset.focus = now; else delete pairBox.dataset.focus;
    for (const button of focusButtons) label(button, button.dataset.side === now);
    for (const block of codeBlocks) markWrapped(block);
  }
  if (pairBox) {
    for (const [index, section] of [...pairBox.querySelectorAll(":scope > .response")].entries()) {
      const side = index === 0 ? "a" : "b";
      section.dataset.side = side;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "focus-toggle link";
      button.dataset.side = side;
      button.title = `Response ${side.toUpperCase()} at the full width of the pane (${side})`;
      label(button, false);
      button.addEventListener("click", () => focusSide(side));
      focusButtons.push(button);
      const heading = section.querySelector("h2");
      if (heading) heading.append(" ", button);
    }
  }
  // On a narrow screen the answers pane shows one part at a time (Prompt, A, B), picked by
  // tabs; the question being answered picks its response. The CSS shows the tabs only
  // where the pane is too short for all of them.
  const partsPane = document.getElementById("answers-pane");
  const parts = partsPane ? [...partsPane.querySelectorAll(".prompt-card[id], .response[id]")] : [];
  const partTabs = [];
  let tabList = null;
  function showPart(part) {
    parts.forEach((p, i) => {
      p.classList.toggle("tab-shown", p === part);
      partTabs[i].setAttribute("aria-selected", String(p === part));
      partTabs[i].tabIndex = p === part ? 0 : -1;
    });
  }
  const tabsInUse = () => tabList !== null && tabList.offsetParent !== null;
  if (parts.length > 1) {
    tabList = document.createElement("div");
    tabList.className = "part-tabs";
    tabList.setAttribute("role", "tablist");
    tabList.setAttribute("aria-label", "Part of the task shown");
    for (const part of parts) {
      const tab = document.createElement("button");
      tab.type = "button";
      tab.setAttribute("role", "tab");
      tab.id = `tab-${part.id}`;
      tab.setAttribute("aria-controls", part.id);
      tab.textContent = part.getAttribute("aria-label");
      tab.addEventListener("click", () => showPart(part));
      partTabs.push(tab);
    }
    // The arrow keys move between the tabs, as in any tab list.
    tabList.addEventListener("keydown", (event) => {
      const at = partTabs.indexOf(document.activeElement);
      if (at < 0 || !["ArrowLeft", "ArrowRight"].includes(event.key)) return;
      const next = partTabs[(at + (event.key === "ArrowRight" ? 1 : partTabs.length - 1)) % partTabs.length];
      next.click();
      next.focus();
      event.preventDefault();
    });
    tabList.append(...partTabs);
    partsPane.prepend(tabList);
    showPart(parts[0]);
  }

  // The keys that work on any page with the task's answers (w, a, b), unless typing or
  // on a page that takes a and b for itself (the review page's one-key decisions).
  const ownKeys = document.getElementById("decision-form");
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
    if (target.closest && target.closest("textarea, select, input:not([type=radio]):not([type=checkbox]), [contenteditable]")) return;
    // Where some blocks wrap (the ones too narrow, until the user chooses), w unwraps all.
    if (event.key === "w" && codeBlocks.length) chooseWrap(!codeBlocks.some((b) => b.classList.contains("wrap")));
    else if (!ownKeys && (event.key === "a" || event.key === "b") && pairBox) focusSide(event.key);
    else return;
    event.preventDefault();
  });

  const form = document.getElementById("rating-form");
  const rulesEl = document.getElementById("form-rules");
  if (!form || !rulesEl) return;
  document.documentElement.classList.add("js");
  const rules = JSON.parse(rulesEl.textContent);
  const rubric = rules.rubric;
  const readOnly = form.classList.contains("readonly");
  const draftUrl = form.dataset.draftUrl;
  const checkUrl = form.dataset.checkUrl;

  // Each form field's question: asked of each response (a. and b.), or once.
  const fields = new Map();
  for (const field of rubric.questions) {
    if (field.each_response) {
      for (const side of ["a", "b"]) fields.set(`${side}.${field.key}`, field);
    } else {
      fields.set(field.key, field);
    }
  }

  // Rubric questions and the batch's classification questions, in page order.
  const questions = [...form.querySelectorAll("[data-question]")];
  const summary = document.getElementById("error-summary");
  const status = document.getElementById("save-status");

  const valueOf = (name) => {
    const checked = form.querySelector(`input[name="${CSS.escape(name)}"]:checked`);
    return checked ? checked.value : null;
  };
  const isClassification = (question) => question.classList.contains("classification");
  // Whether an answer (as the form carries it, a string) calls for an explanation.
  const needsExplanation = (field, value) => {
    const required = field.explanation ? field.explanation.required : "optional";
    if (value === null || required === "optional") return false;
    return required === "always" || required.when.some((v) => String(v) === value);
  };
  const explanationOf = (question) => form.elements[question.dataset.explanation];

  function sync(question) {
    if (isClassification(question) || !question.dataset.explanation) return;
    const field = fields.get(question.dataset.question);
    const needed = Boolean(field) && needsExplanation(field, valueOf(question.dataset.question));
    question.querySelector(".explanation").classList.toggle("optional", !needed);
    const box = explanationOf(question);
    box.setAttribute("aria-required", String(needed));
    if (box.counter) count(box);
  }
  questions.forEach(sync);

  // A live count under each box with limits: words (as the server counts them, at
  // Unicode's word boundaries: the pieces with a letter or digit) and characters (after
  // trimming), against the rubric's limits and, for a required explanation, the batch's
  // minimum. The server still decides; the count only says where the text stands.
  const segmenter = typeof Intl.Segmenter === "function" ? new Intl.Segmenter(undefined, { granularity: "word" }) : null;
  const wordsIn = (text) => segmenter
    ? [...segmenter.segment(text)].filter((s) => s.isWordLike && /[\p{L}\p{N}]/u.test(s.segment)).length
    : text.split(/[^\p{L}\p{N}'.]+/u).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
  const limitsOf = (box) => {
    const question = box.closest("[data-question]");
    const field = question && fields.get(question.dataset.question);
    if (!field) return null;
    if (box.name === question.dataset.explanation) {
      const e = field.explanation || {};
      return { words: e.max_words, chars: e.max_chars, explains: true, question };
    }
    const answer = field.answer || {};
    return answer.type === "text" ? { words: answer.max_words, chars: answer.max_chars, explains: false, question } : null;
  };
  function count(box) {
    const counter = box.counter;
    const text = box.value.trim();
    const words = wordsIn(text);
    const chars = [...text].length;
    const parts = [];
    let over = false;
    if (counter.limits.words) {
      parts.push(`${words} / ${counter.limits.words} words`);
      over = over || words > counter.limits.words;
    } else {
      parts.push(`${words} ${words === 1 ? "word" : "words"}`);
    }
    if (counter.limits.chars) {
      parts.push(`${chars} / ${counter.limits.chars} characters`);
      over = over || chars > counter.limits.chars;
    } else {
      parts.push(`${chars} ${chars === 1 ? "character" : "characters"}`);
    }
    const needed = counter.limits.explains
      ? !counter.limits.question.querySelector(".explanation").classList.contains("optional")
      : false;
    const short = needed && chars < (rules.min_explanation || 0);
    if (short) parts.push(`at least ${rules.min_explanation} characters`);
    counter.textContent = parts.join(" · ");
    counter.classList.toggle("over", over);
    counter.classList.toggle("short", short && chars > 0);
  }
  for (const box of form.querySelectorAll("textarea")) {
    const limits = limitsOf(box);
    if (!limits || readOnly) continue;
    // Inside an explanation's label, so that it hides with its box.
    const counter = document.createElement("span");
    counter.className = "counter";
    counter.dataset.counterFor = box.name;
    counter.setAttribute("aria-live", "polite");
    counter.limits = limits;
    box.counter = counter;
    box.after(counter);
    count(box);
    box.addEventListener("input", () => count(box));
  }

  // A question asked only when other answers allow it (issue categories, when the
  // response has issues): shown when they do, otherwise hidden with its boxes cleared, as
  // the server refuses an answer to a question that was not asked.
  function applies(question) {
    const field = fields.get(question.dataset.question);
    if (!field || !field.applies_when || isClassification(question)) return;
    const side = /^([ab])\./.exec(question.dataset.question);
    const prefix = side ? `${side[1]}.` : "";
    const holds = Object.entries(field.applies_when).every(([key, wanted]) => {
      const value = valueOf(prefix + key);
      return value !== null && [wanted].flat().some((v) => String(v) === value);
    });
    question.hidden = !holds;
    if (!holds) {
      for (const box of question.querySelectorAll("input:checked")) box.checked = false;
      clearError(question.dataset.question);
    }
  }
  questions.forEach(applies);

  // Derived answers, worked out as the document says: the yes answers (or scale values)
  // of `sum_of` added up, or 0 when any of `zero_when` is yes; shown once all are given.
  // A ladder's criteria are answered by its one question: each holds when the level
  // picked is at least its own.
  const rungs = new Map();
  for (const derived of rubric.derived || []) {
    if (!derived.ladder) continue;
    derived.sum_of.forEach((key, i) => rungs.set(key, { field: `ladder.${derived.key}`, level: i + 1 }));
  }
  const numberOf = (key) => {
    const rung = rungs.get(key);
    if (rung) {
      const level = valueOf(rung.field);
      return level === null ? null : Number(Number(level) >= rung.level);
    }
    const value = valueOf(key);
    if (value === null) return null;
    if (value === "true" || value === "false") return value === "true" ? 1 : 0;
    return Number(value);
  };
  function derive() {
    for (const derived of rubric.derived || []) {
      const out = form.querySelector(`[data-derived-value="${CSS.escape(derived.key)}"]`);
      if (!out) continue;
      const terms = derived.sum_of.map(numberOf);
      const zeros = (derived.zero_when || []).map(numberOf);
      const complete = [...terms, ...zeros].every((n) => n !== null);
      out.textContent = !complete ? "–" : String(zeros.some((n) => n !== 0) ? 0 : terms.reduce((a, b) => a + b, 0));
    }
  }
  derive();

  function showError(name, message) {
    const slot = form.querySelector(`[data-error-for="${CSS.escape(name)}"]`);
    if (slot) {
      slot.textContent = message;
      slot.hidden = false;
    }
  }
  function clearError(name) {
    const slot = form.querySelector(`[data-error-for="${CSS.escape(name)}"]`);
    if (slot) slot.hidden = true;
  }

  // Asks the server what it would refuse; null when it cannot be asked (the form is then
  // sent as it is, and the server's page shows what it refuses).
  async function serverCheck(extra) {
    const body = draftBody();
    for (const [key, value] of Object.entries(extra)) body.set(key, value);
    try {
      const response = await fetch(checkUrl, { method: "POST", body, headers: { Accept: "application/json" } });
      return response.ok ? await response.json() : null;
    } catch {
      return null;
    }
  }

  // The fields a refusal names, in the order the form shows them (the server lists them
  // by name), each with where its error shows.
  function inPageOrder(fields) {
    const found = Object.entries(fields).map(([name, message]) => ({
      name, message, slot: form.querySelector(`[data-error-for="${CSS.escape(name)}"]`),
    }));
    const shown = found.filter((f) => f.slot);
    shown.sort((x, y) => (x.slot.compareDocumentPosition(y.slot) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
    return [...shown, ...found.filter((f) => !f.slot)];
  }
  // Where a field is on the form, in words: its section, and the response it is about.
  function placeOf(field) {
    const question = field.slot && field.slot.closest("[data-question]");
    const section = question && question.closest("fieldset.section");
    const title = section ? section.querySelector(":scope > legend").textContent.trim() : field.name;
    const side = question && question.querySelector(".q-side");
    const explains = question && question.dataset.explanation === field.name;
    return [title, side ? side.textContent.trim() : null, explains ? "explanation" : null].filter(Boolean).join(" · ");
  }
  // Takes the rater to a field: its question comes into view and its first input has focus.
  function goTo(field) {
    const question = field.slot ? field.slot.closest("[data-question]") : null;
    if (question) select(questions.indexOf(question));
    const target = form.elements[field.name];
    const input = target instanceof RadioNodeList ? target[0] : target;
    (input || (question && question.querySelector("input, textarea")) || summary).focus();
  }
  function showRefusal(result) {
    summary.classList.remove("warning");
    const found = inPageOrder(result.fields);
    for (const { name, message } of found) showError(name, message);
    const list = document.createElement("ol");
    list.className = "error-list";
    for (const field of found) {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = `#${field.slot ? field.slot.closest("[data-question]")?.querySelector("legend")?.id || "" : ""}`;
      link.textContent = placeOf(field);
      link.addEventListener("click", (event) => { event.preventDefault(); goTo(field); });
      item.append(link, `: ${field.message}`);
      list.append(item);
    }
    summary.replaceChildren(result.summary, list);
    summary.hidden = false;
    if (found.length > 0) goTo(found[0]);
  }

  // The rubric's warnings: answers it takes only once the rater confirms them. Each is
  // listed with a box to tick; the form is sent when every warning the answers meet is
  // ticked (or the answers are changed so that it no longer applies).
  const warningsBox = document.getElementById("warnings-box");
  const warningsList = document.getElementById("warnings-list");
  const ticked = () => new Set(
    [...form.querySelectorAll('input[name="confirmed_warnings"]:checked')].map((box) => box.value),
  );
  function showWarnings(result) {
    const kept = ticked();
    warningsList.replaceChildren();
    for (const warning of result.warnings) {
      const item = document.createElement("li");
      const label = document.createElement("label");
      label.className = "option";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.name = "confirmed_warnings";
      box.value = warning.id;
      box.checked = kept.has(warning.id);
      const text = document.createElement("span");
      const mean = document.createElement("strong");
      mean.textContent = "I mean these answers.";
      text.append(`${warning.message} `, mean);
      label.append(box, text);
      item.append(label);
      warningsList.append(item);
    }
    warningsBox.hidden = false;
    summary.textContent = result.summary;
    summary.classList.add("warning");
    summary.hidden = false;
    const first = warningsList.querySelector("input:not(:checked)");
    (first || summary).focus();
  }

  let checked = false;
  form.addEventListener("submit", async (event) => {
    if (checked || !checkUrl) {
      updateTime();
      submitting = true;
      return;
    }
    event.preventDefault();
    const submitter = event.submitter;
    const action = submitter ? submitter.getAttribute("formaction") || "" : "";
    const outOfScope = action.endsWith("/out-of-scope");
    updateTime();
    const result = await serverCheck(outOfScope ? { check: "out_of_scope" } : {});
    if (result !== null && Object.keys(result.fields).length > 0) {
      if (outOfScope) {
        const why = result.fields.explanation;
        if (why !== undefined) {
          showError("explanation", why);
          form.elements.explanation.focus();
          return;
        }
      }
      showRefusal(result);
      return;
    }
    const warnings = result !== null && !outOfScope ? result.warnings || [] : [];
    const confirmed = ticked();
    if (warnings.some((warning) => !confirmed.has(warning.id))) {
      showWarnings(result);
      return;
    }
    checked = true;
    form.requestSubmit(submitter || undefined);
  });

  // Drafts: saved a moment after each change, when the tab is hidden, and as the page goes.
  let dirty = false;
  let submitting = false;
  let saveTimer = null;
  const draftBody = () => new URLSearchParams(new FormData(form));
  function schedule() {
    if (readOnly || !draftUrl) return;
    dirty = true;
    clearTimeout(saveTimer);
    saveTimer = setTimeout(save, 1000);
  }
  async function save() {
    if (!dirty || submitting || !draftUrl) return;
    dirty = false;
    updateTime();
    status.textContent = "Saving…";
    try {
      const response = await fetch(draftUrl, { method: "POST", body: draftBody(), headers: { Accept: "application/json" } });
      if (response.ok) {
        const saved = await response.json();
        status.textContent = `Draft saved at ${new Date(saved.saved_at).toLocaleTimeString()}`;
        status.dataset.saved = saved.saved_at;
      } else if (response.status === 409) {
        status.textContent = "This task is already finished.";
      } else {
        dirty = true;
        status.textContent = "The draft could not be saved; it will be tried again.";
      }
    } catch {
      dirty = true;
      status.textContent = "Offline: the draft will be saved when the connection is back.";
    }
  }
  form.addEventListener("change", (event) => {
    const question = event.target.closest(".question");
    if (question) sync(question);
    questions.forEach(applies);
    clearError(event.target.name);
    derive();
    schedule();
  });
  form.addEventListener("input", (event) => {
    if (event.target.tagName === "TEXTAREA") {
      clearError(event.target.name);
      schedule();
    }
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") save();
  });
  window.addEventListener("pagehide", () => {
    if (dirty && !submitting && draftUrl) {
      updateTime();
      navigator.sendBeacon(draftUrl, draftBody());
    }
  });

  // Durations read as everywhere in the app (web::clock): m:ss, or h:mm:ss past an hour.
  const clock = (whole) => {
    const two = (n) => String(n).padStart(2, "0");
    const [h, m, sec] = [Math.floor(whole / 3600), Math.floor(whole / 60) % 60, whole % 60];
    return h > 0 ? `${h}:${two(m)}:${two(sec)}` : `${m}:${two(sec)}`;
  };
  // Active time: counts only while the tab is visible.
  const timer = document.getElementById("timer");
  const timeInputs = document.querySelectorAll(".time-spent");
  let seconds = timer ? Number(timer.dataset.start) || 0 : 0;
  let last = Date.now();
  let savedMinute = Math.floor(seconds / 60);
  function updateTime() {
    const now = Date.now();
    if (document.visibilityState === "visible") seconds += (now - last) / 1000;
    last = now;
    for (const input of timeInputs) input.value = String(Math.round(seconds));
  }
  // Past the guidance, the page suggests skipping for the "too long to verify" reason.
  const overGuidance = document.getElementById("over-guidance");
  const suggestSkip = document.getElementById("suggest-skip");
  const skipForm = document.getElementById("skip-form");
  if (skipForm) skipForm.addEventListener("submit", () => { updateTime(); submitting = true; });
  if (suggestSkip) {
    suggestSkip.addEventListener("click", () => {
      const tooLong = document.querySelector('#skip-form input[name="reason"][value="too_long"]');
      if (tooLong) tooLong.checked = true;
      openPanel("skip", 'input[name="reason"]:checked');
    });
  }
  if (timer && !readOnly) {
    const value = document.getElementById("timer-value");
    const guidance = Number(timer.dataset.guidance);
    setInterval(() => {
      updateTime();
      const whole = Math.floor(seconds);
      value.textContent = clock(whole);
      timer.classList.toggle("over", whole > guidance);
      if (overGuidance) overGuidance.hidden = whole <= guidance;
      if (Math.floor(whole / 60) > savedMinute) {
        savedMinute = Math.floor(whole / 60);
        schedule();
      }
    }, 1000);
    document.addEventListener("visibilitychange", () => { last = Date.now(); });
  }

  // Keyboard: j/k move between questions, digits choose, e explains, Esc leaves a box.
  let current = Math.max(0, questions.findIndex((q) => !q.hidden && valueOf(q.dataset.question) === null));
  // Brings a question into view in whatever scrolls it (the form's pane, or the page),
  // clear of the sticky bar of buttons at the bottom, whose height changes as the
  // out-of-scope box opens: the scroll padding keeps that much room free.
  const bar = form.querySelector(".actions");
  function reveal(element) {
    const room = bar ? `${bar.offsetHeight + 8}px` : "0px";
    const pane = form.closest(".form-pane");
    for (const scroller of [pane, document.documentElement]) {
      if (scroller) scroller.style.scrollPaddingBottom = room;
    }
    element.scrollIntoView({ block: "nearest" });
    // Taller than the room above the bar (a long scale on a phone): its start shows.
    const scroller = pane || document.documentElement;
    const top = pane ? pane.getBoundingClientRect().top : 0;
    const bottom = bar ? bar.getBoundingClientRect().top : window.innerHeight;
    const box = element.getBoundingClientRect();
    if (box.bottom > bottom && box.height > bottom - top) scroller.scrollTop += box.top - top;
  }
  // The answers' pane follows the form: a question about response A or B brings that
  // response into view if none of it shows (on a phone they are one above the other),
  // back where the rater last read it; any other question, the first response when
  // neither shows.
  const answersPane = document.getElementById("answers-pane");
  const responses = answersPane ? [...answersPane.querySelectorAll(".response")] : [];
  const readAt = {};
  let followed = null;
  const showing = (el) => {
    const r = el.getBoundingClientRect();
    const p = answersPane.getBoundingClientRect();
    return Math.min(r.bottom, p.bottom) - Math.max(r.top, p.top) > 60;
  };
  function follow(question) {
    if (responses.length === 0) return;
    const side = /^([ab])\./.exec(question.dataset.question);
    const target = side ? responses[side[1] === "b" ? responses.length - 1 : 0] : responses[0];
    // With tabs, the question's response is the one shown (a question of both keeps the
    // part the rater chose).
    if (tabsInUse()) {
      if (side) showPart(target);
      followed = target;
      return;
    }
    if (followed !== null && followed !== target) readAt[responses.indexOf(followed)] = answersPane.scrollTop;
    if (side ? !showing(target) : !responses.some(showing)) {
      const kept = readAt[responses.indexOf(target)];
      answersPane.scrollTop = kept ?? answersPane.scrollTop + target.getBoundingClientRect().top - answersPane.getBoundingClientRect().top;
      if (!showing(target)) answersPane.scrollTop += target.getBoundingClientRect().top - answersPane.getBoundingClientRect().top;
    }
    followed = target;
  }
  function select(index, scroll = true) {
    if (questions.length === 0) return;
    // A hidden question (not asked) is passed over, in the direction of the move.
    const step = index < current ? -1 : 1;
    while (questions[index] && questions[index].hidden) index += step;
    if (!questions[index]) return;
    current = Math.max(0, Math.min(questions.length - 1, index));
    questions.forEach((q, i) => q.classList.toggle("current", i === current));
    if (scroll) reveal(questions[current]);
    follow(questions[current]);
  }
  // A rater coming back to a draft finds the first question still to answer in view.
  if (!readOnly) select(current, current > 0);
  // "Skip to the form": straight to the first question still to answer.
  const skipLink = document.querySelector(".skip-link");
  if (skipLink && !readOnly) {
    skipLink.addEventListener("click", (event) => {
      event.preventDefault();
      select(current);
      const first = questions[current] && questions[current].querySelector("input, textarea");
      if (first) first.focus();
    });
  }
  // A refusal the server's page shows (sent without the script's check): the same list in
  // page order, and the first field in need has focus.
  const served = [...form.querySelectorAll("[data-error-for]:not([hidden])")];
  if (!readOnly && served.length > 0 && !summary.hidden && !summary.classList.contains("warning")) {
    showRefusal({
      summary: summary.textContent.trim(),
      fields: Object.fromEntries(served.map((slot) => [slot.dataset.errorFor, slot.textContent.trim()])),
    });
  }
  form.addEventListener("focusin", (event) => {
    const question = event.target.closest(".question");
    if (question) select(questions.indexOf(question), false);
    // Tabbing into the form must not leave the field behind the bar either.
    if (question && !(bar && bar.contains(event.target))) reveal(event.target.closest(".question, label") || event.target);
  });
  function openPanel(id, focusSelector) {
    const panel = document.getElementById(id);
    if (!panel) return;
    panel.open = true;
    const target = panel.querySelector(focusSelector);
    if (target) target.focus();
    panel.scrollIntoView({ block: "nearest" });
  }
  const help = document.getElementById("shortcuts");
  const helpToggle = document.getElementById("shortcuts-toggle");
  const toggleHelp = () => {
    help.hidden = !help.hidden;
    if (helpToggle) helpToggle.setAttribute("aria-expanded", String(!help.hidden));
  };
  if (helpToggle) helpToggle.addEventListener("click", toggleHelp);
  // The guidelines open over the page (g), with the focus in them so the keys scroll
  // them; g or Esc closes them, wherever the focus is, and the focus goes back.
  const guidelines = document.getElementById("guidelines");
  let focusBefore = null;
  const toggleGuidelines = (open) => {
    if (!guidelines || guidelines.open === open) return;
    if (open) focusBefore = document.activeElement;
    guidelines.open = open;
    if (open) guidelines.querySelector(".guidelines-text").focus({ preventScroll: true });
    else if (focusBefore && focusBefore.isConnected && guidelines.contains(document.activeElement)) focusBefore.focus({ preventScroll: true });
  };
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && guidelines && guidelines.open) toggleGuidelines(false);
  });

  document.addEventListener("keydown", (event) => {
    if (readOnly) return;
    const target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      // In the out-of-scope box, it sends the out-of-scope mark; anywhere else, the rating.
      const outOfScope = target.closest && target.closest("#out-of-scope");
      const button = document.getElementById(outOfScope ? "oos-submit" : "submit");
      form.requestSubmit(button || undefined);
      return;
    }
    const typing = target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && !["radio", "checkbox"].includes(target.type));
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const question = questions[current];
    if (event.key === "j") select(current + 1);
    else if (event.key === "k") select(current - 1);
    else if (event.key === "e" && question && !isClassification(question)) {
      // The explanation box, or the text box of a question answered in words.
      if (question.dataset.explanation) {
        question.querySelector(".explanation").classList.remove("optional");
        explanationOf(question).focus();
      } else {
        const box = question.querySelector("textarea");
        if (!box) return;
        box.focus();
      }
    } else if (event.key === "s") openPanel("skip", "input[name=reason]:checked");
    else if (event.key === "o") openPanel("out-of-scope", "textarea");
    else if (event.key === "?" && help) toggleHelp();
    else if (event.key === "g" && guidelines) toggleGuidelines(!guidelines.open);
    else if (/^Digit[0-9]$/.test(event.code) && question) {
      // 1-9 and 0 pick the first ten options; with Shift, the next ten (as their keys say).
      // A ladder's levels are picked by their own number, 0 first.
      const digit = Number(event.code.slice(5));
      const index = question.dataset.ladder
        ? digit + 1 + (event.shiftKey ? 10 : 0)
        : (digit === 0 ? 10 : digit) + (event.shiftKey ? 10 : 0);
      const option = question.querySelectorAll("input[type=radio], input[type=checkbox]")[index - 1];
      if (!option) return;
      // Never answer out of sight: the question comes into view first.
      reveal(question);
      option.checked = option.type === "checkbox" ? !option.checked : true;
      option.dispatchEvent(new Event("change", { bubbles: true }));
      const field = fields.get(question.dataset.question);
      if (field && needsExplanation(field, option.value)) explanationOf(question).focus();
      else if (option.type !== "checkbox") select(current + 1);
    } else return;
    event.preventDefault();
  });
})();
