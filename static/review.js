// The lead's keys. On the review queue, j and k move between rows and Enter opens the
// focused one (it is the row's link). On a rating, a accepts, x rejects (once confirmed:
// a rejection cannot be taken back) and r returns: it picks "return" and puts the cursor
// in the comment box. Ctrl+Enter sends the form from anywhere. Other keys typed into a
// field, or with a modifier, are left alone.
(() => {
  "use strict";

  const typing = (target) => target.closest("input, textarea, select, [contenteditable]");
  const modified = (event) => event.ctrlKey || event.metaKey || event.altKey;

  const rows = [...document.querySelectorAll(".review-queue tbody tr")];
  let counted = () => {};
  if (rows.length) {
    let current = -1;
    const select = (index) => {
      current = Math.max(0, Math.min(rows.length - 1, index));
      rows.forEach((row, i) => row.classList.toggle("current", i === current));
      rows[current].querySelector("a.review-open").focus();
    };
    document.addEventListener("keydown", (event) => {
      if (modified(event) || typing(event.target)) return;
      if (event.key === "j") select(current + 1);
      else if (event.key === "k") select(current - 1);
      else if (event.key === "x" && current >= 0 && rows[current].querySelector(".tick")) {
        const tick = rows[current].querySelector(".tick");
        tick.checked = !tick.checked;
        counted();
      } else return;
      event.preventDefault();
    });
  }

  // Ticked ratings: a count, a box that ticks them all, and a rejection asked first.
  const bulk = document.getElementById("bulk-form");
  if (bulk) {
    const ticks = [...document.querySelectorAll(".review-queue .tick")];
    const all = document.getElementById("tick-all");
    const count = document.getElementById("bulk-count");
    counted = () => {
      const n = ticks.filter((t) => t.checked).length;
      count.textContent = n === 0
        ? "None ticked: tick ratings below (x ticks the current row)."
        : `${n} ticked: decide them together.`;
      all.checked = n === ticks.length;
      all.indeterminate = n > 0 && n < ticks.length;
    };
    ticks.forEach((t) => t.addEventListener("change", counted));
    all.addEventListener("change", () => {
      ticks.forEach((t) => { t.checked = all.checked; });
      counted();
    });
    const confirmBox = document.getElementById("bulk-reject-confirm");
    const yes = document.getElementById("bulk-reject-yes");
    bulk.addEventListener("submit", (event) => {
      const rejecting = event.submitter && event.submitter.id === "bulk-reject";
      if (!rejecting) return;
      event.preventDefault();
      confirmBox.showModal();
      yes.focus();
    });
    document.getElementById("bulk-reject-no").addEventListener("click", () => confirmBox.close());
    counted();
  }

  const form = document.getElementById("decision-form");
  if (form) {
    const comment = form.querySelector('textarea[name="comment"]');
    const choose = (value) => {
      form.querySelector(`input[name="decision"][value="${value}"]`).checked = true;
    };
    const asking = () => document.getElementById("reject-confirm")?.open;
    document.addEventListener("keydown", (event) => {
      if (modified(event) || typing(event.target) || asking()) return;
      if (event.key === "a" || event.key === "x") {
        choose(event.key === "a" ? "accept" : "reject");
        form.requestSubmit();
      } else if (event.key === "r") {
        choose("return");
        comment.focus();
      } else return;
      event.preventDefault();
    });
    // Ctrl+Enter sends the decision from anywhere on the page, the comment boxes beside
    // the answers included; Esc leaves a box.
    document.addEventListener("keydown", (event) => {
      if (asking()) return;
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      } else if (event.key === "Escape" && event.target.matches && event.target.matches("textarea")) {
        event.target.blur();
      }
    });
    // A rejection, by key or button, is sent only from its confirmation; Esc or Cancel
    // leaves the form as it was.
    const confirmBox = document.getElementById("reject-confirm");
    const confirmed = document.getElementById("reject-yes");
    if (confirmBox) {
      form.addEventListener("submit", (event) => {
        const rejecting = form.querySelector('input[name="decision"][value="reject"]').checked;
        if (!rejecting || event.submitter === confirmed) return;
        event.preventDefault();
        event.stopImmediatePropagation();
        confirmBox.showModal();
        confirmed.focus();
      });
      document.getElementById("reject-no").addEventListener("click", () => confirmBox.close());
    }
    // Returning needs a comment: say so beside the box instead of sending the form
    // (the server refuses it too, with the same words).
    const hint = document.getElementById("comment-needed");
    form.addEventListener("submit", (event) => {
      const returning = form.querySelector('input[name="decision"][value="return"]').checked;
      const missing = returning && !comment.value.trim();
      hint.hidden = !missing;
      comment.setAttribute("aria-invalid", String(missing));
      if (missing) {
        event.preventDefault();
        comment.focus();
      }
    });
  }
})();

// The answer filter shows the picked question's answers only (without the script, every
// question's answers are listed, grouped by question).
(() => {
  const answer = document.getElementById("answer-filter");
  const question = document.querySelector('.queue-filters select[name="question"]');
  if (!answer || !question) return;
  const show = () => {
    for (const group of answer.querySelectorAll("optgroup")) {
      const mine = group.dataset.question === question.value;
      group.hidden = !mine;
      group.disabled = !mine;
    }
    const picked = answer.selectedOptions[0];
    if (picked && picked.parentElement.disabled) answer.value = "";
  };
  question.addEventListener("change", show);
  show();
})();
