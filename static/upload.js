// The admin's batch upload: sends the file to the API with a progress bar, then shows
// what was stored or every bad line.
(() => {
  "use strict";
  const form = document.getElementById("upload-form");
  if (!form) return;
  const bar = document.getElementById("upload-progress");
  const status = document.getElementById("upload-status");
  const errors = document.getElementById("upload-errors");
  const types = { jsonl: "application/x-ndjson", ndjson: "application/x-ndjson", json: "application/json", csv: "text/csv" };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const file = form.elements.file.files[0];
    if (!file) return;
    const type = types[file.name.split(".").pop().toLowerCase()];
    if (!type) {
      status.textContent = "Choose a .jsonl, .json or .csv file.";
      return;
    }
    // Settings left empty are not sent: a new batch takes the defaults, and tasks added
    // to an existing batch keep its own.
    const params = new URLSearchParams({ name: form.elements.name.value });
    for (const setting of ["rubric", "overlap", "max_overlap", "escalate", "randomize", "raters_see_external_ids"]) {
      const value = form.elements[setting].value.trim();
      if (value !== "") params.set(setting, value);
    }
    const request = new XMLHttpRequest();
    request.open("POST", `/api/v1/batches?${params}`);
    request.setRequestHeader("Content-Type", type);
    request.setRequestHeader("X-CSRF-Token", form.dataset.csrf);
    bar.hidden = false;
    bar.value = 0;
    errors.hidden = true;
    status.textContent = "Uploading…";
    request.upload.addEventListener("progress", (e) => {
      if (!e.lengthComputable) return;
      bar.value = (100 * e.loaded) / e.total;
      status.textContent = `Uploading… ${Math.round(bar.value)}%`;
    });
    request.upload.addEventListener("load", () => {
      bar.removeAttribute("value");
      status.textContent = "Checking every record…";
    });
    request.addEventListener("load", () => {
      bar.hidden = true;
      let body = {};
      try { body = JSON.parse(request.responseText); } catch { body = { error: request.statusText }; }
      if (request.status === 201) {
        status.textContent = `${body.name}: ${body.created} tasks added, ${body.unchanged} unchanged.`;
        setTimeout(() => window.location.reload(), 1500);
        return;
      }
      const fields = Object.entries(body.fields || {}).map(([f, why]) => `${f} ${why}`);
      status.textContent = [body.error, ...fields].join(". ");
      const rows = errors.querySelector("tbody");
      rows.replaceChildren();
      for (const problem of body.errors || []) {
        const row = rows.insertRow();
        row.insertCell().textContent = String(problem.line);
        row.insertCell().textContent = problem.message;
      }
      errors.hidden = rows.rows.length === 0;
    });
    request.addEventListener("error", () => {
      bar.hidden = true;
      status.textContent = "The upload failed: the server could not be reached.";
    });
    request.send(file);
  });
})();
