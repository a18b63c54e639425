// The rating form: explanation boxes that follow the rubric, drafts saved as you go,
// an active-time timer, keyboard shortcuts and copy buttons on code. The rules come
// from the same rubric definition the server checks with; the server decides.
(() => {
  "use strict";

  for (const block of document.querySelectorAll(".rendered .code")) {
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
    block.prepend(button);
  }

  const form = document.getElementById("rating-form");
  const rulesEl = document.getElementById("form-rules");
  if (!form || !rulesEl) return;
  document.documentElement.classList.add("js");
  const rules = JSON.parse(rulesEl.textContent);
  const minLength = rules.min_explanation;
  const readOnly = form.classList.contains("readonly");
  const draftUrl = form.dataset.draftUrl;

  const fields = new Map();
  for (const field of rules.rubric.per_response) {
    for (const side of ["a", "b"]) fields.set(`${side}.${field.key}`, field);
  }
  for (const field of rules.rubric.pair) fields.set(field.key, field);

  // Rubric questions and the batch's classification questions, in page order.
  const questions = [...form.querySelectorAll("[data-question]")];
  const summary = document.getElementById("error-summary");
  const status = document.getElementById("save-status");

  const valueOf = (name) => {
    const checked = form.querySelector(`input[name="${CSS.escape(name)}"]:checked`);
    return checked ? checked.value : null;
  };
  const isClassification = (question) => question.classList.contains("classification");
  const needsExplanation = (field, value) =>
    value !== null && (field.explain.when === "always" || field.explain.values.includes(value));
  const explanationOf = (question) => form.elements[question.dataset.explanation];

  function sync(question) {
    if (isClassification(question)) return;
    const field = fields.get(question.dataset.question);
    const needed = Boolean(field) && needsExplanation(field, valueOf(question.dataset.question));
    question.querySelector(".explanation").classList.toggle("optional", !needed);
    explanationOf(question).setAttribute("aria-required", String(needed));
  }
  questions.forEach(sync);

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

  // The same rules as rubric::validate, in the same words.
  function problems() {
    const found = [];
    for (const question of questions) {
      const name = question.dataset.question;
      const field = fields.get(name);
      const value = valueOf(name);
      if (isClassification(question)) {
        if (value === null && question.dataset.required === "true") found.push([name, "is required", question]);
        continue;
      }
      if (value === null) {
        found.push([name, "is required", question]);
        continue;
      }
      if (!needsExplanation(field, value)) continue;
      const text = explanationOf(question).value.trim();
      const length = [...text].length;
      const explanation = question.dataset.explanation;
      if (length === 0) {
        const why = field.explain.when === "always" ? "is always required" : `required when ${field.key} is ${value}`;
        found.push([explanation, why, question]);
      } else if (length < minLength) {
        found.push([explanation, `must be at least ${minLength} characters (has ${length})`, question]);
      }
    }
    return found;
  }

  form.addEventListener("submit", (event) => {
    const action = event.submitter ? event.submitter.getAttribute("formaction") || "" : "";
    if (action.endsWith("/out-of-scope")) {
      if (form.elements.explanation.value.trim() === "") {
        event.preventDefault();
        showError("explanation", "is required: say why the prompt is out of scope");
        form.elements.explanation.focus();
        return;
      }
      submitting = true;
      return;
    }
    const found = problems();
    if (found.length > 0) {
      event.preventDefault();
      for (const [name, message] of found) showError(name, message);
      summary.textContent = `${found.length} answer${found.length === 1 ? " needs" : "s need"} attention before this can be submitted.`;
      summary.hidden = false;
      const first = found[0];
      select(questions.indexOf(first[2]));
      const target = first[0] === first[2].dataset.question ? first[2].querySelector("input") : explanationOf(first[2]);
      target.focus();
      return;
    }
    updateTime();
    submitting = true;
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
    if (question) {
      sync(question);
      clearError(event.target.name);
    } else {
      clearError(event.target.name);
    }
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

  // Active time: counts only while the tab is visible.
  const timer = document.getElementById("timer");
  const timeInput = document.getElementById("time-spent");
  let seconds = timer ? Number(timer.dataset.start) || 0 : 0;
  let last = Date.now();
  let savedMinute = Math.floor(seconds / 60);
  function updateTime() {
    const now = Date.now();
    if (document.visibilityState === "visible") seconds += (now - last) / 1000;
    last = now;
    if (timeInput) timeInput.value = String(Math.round(seconds));
  }
  if (timer && !readOnly) {
    const value = document.getElementById("timer-value");
    const guidance = Number(timer.dataset.guidance);
    setInterval(() => {
      updateTime();
      const whole = Math.floor(seconds);
      value.textContent = `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
      timer.classList.toggle("over", whole > guidance);
      if (Math.floor(whole / 60) > savedMinute) {
        savedMinute = Math.floor(whole / 60);
        schedule();
      }
    }, 1000);
    document.addEventListener("visibilitychange", () => { last = Date.now(); });
  }

  // Keyboard: j/k move between questions, digits choose, e explains, Esc leaves a box.
  let current = Math.max(0, questions.findIndex((q) => valueOf(q.dataset.question) === null));
  function select(index, scroll = true) {
    if (questions.length === 0) return;
    current = Math.max(0, Math.min(questions.length - 1, index));
    questions.forEach((q, i) => q.classList.toggle("current", i === current));
    if (scroll) questions[current].scrollIntoView({ block: "nearest" });
  }
  if (!readOnly) select(current, false);
  form.addEventListener("focusin", (event) => {
    const question = event.target.closest(".question");
    if (question) select(questions.indexOf(question), false);
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
  if (helpToggle) helpToggle.addEventListener("click", () => { help.hidden = !help.hidden; });

  document.addEventListener("keydown", (event) => {
    if (readOnly) return;
    const target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit(document.getElementById("submit") || undefined);
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
      question.querySelector(".explanation").classList.remove("optional");
      explanationOf(question).focus();
    } else if (event.key === "s") openPanel("skip", "input[name=reason]:checked");
    else if (event.key === "o") openPanel("out-of-scope", "textarea");
    else if (event.key === "?" && help) help.hidden = !help.hidden;
    else if (/^[1-9]$/.test(event.key) && question) {
      const option = question.querySelectorAll("input[type=radio], input[type=checkbox]")[Number(event.key) - 1];
      if (!option) return;
      option.checked = option.type === "checkbox" ? !option.checked : true;
      option.dispatchEvent(new Event("change", { bubbles: true }));
      const field = fields.get(question.dataset.question);
      if (field && needsExplanation(field, option.value)) explanationOf(question).focus();
      else if (option.type !== "checkbox") select(current + 1);
    } else return;
    event.preventDefault();
  });
})();
