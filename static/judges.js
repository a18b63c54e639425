// Live progress of the batch page's judge runs: while a run on the page is running,
// asks the API for it every 2 seconds (with the session cookie) and writes its numbers,
// status and buttons into its row; a change of status is said in the polite live
// region under the table. Polling stops once no run on the page is running. Without
// JavaScript the table is the snapshot the page was served with.
(function () {
  const table = document.getElementById('judge-runs');
  if (!table) return;
  const live = document.getElementById('judge-runs-live');
  const EVERY_MS = 2000;

  const running = () => Array.from(table.querySelectorAll('tr[data-run][data-status="running"]'));

  function put(row, field, text) {
    const cell = row.querySelector(`[data-field="${field}"]`);
    if (cell) cell.textContent = text;
  }

  // "2026-03-01T12:34:56.789Z" as the page writes times: "2026-03-01 12:34" (UTC).
  const minute = (iso) => (iso ? iso.slice(0, 16).replace('T', ' ') : '—');

  function update(row, run) {
    const done = run.answered + run.unparsed;
    put(row, 'done', String(done));
    put(row, 'answered', String(run.answered));
    put(row, 'unparsed', String(run.unparsed));
    put(row, 'failed', String(run.failed));
    put(row, 'tokens', `${run.tokens.prompt} + ${run.tokens.completion}`);
    put(row, 'finished', minute(run.finished_at));
    const bar = row.querySelector('progress');
    if (bar) bar.value = done;
    // The buttons the new status allows, as the server draws them.
    const allowed = {
      pause: run.status === 'running',
      resume: run.status === 'paused' || (run.status === 'finished' && run.failed > 0),
      cancel: run.status === 'running' || run.status === 'paused',
    };
    row.querySelectorAll('button[data-action]').forEach((button) => {
      button.hidden = !allowed[button.dataset.action];
      if (button.dataset.action === 'resume' && run.status === 'finished') {
        button.textContent = 'Ask failed calls again';
      }
    });
    if (run.status !== row.dataset.status) {
      row.dataset.status = run.status;
      put(row, 'status', run.status);
      if (live) {
        const figures = run.status === 'finished' ? ' Reload the page to see its figures.' : '';
        live.textContent = `The run of ${run.judge} is ${run.status}: ${done} of ${run.calls} calls over, ${run.failed} failed.${figures}`;
      }
    }
  }

  async function follow(row) {
    const response = await fetch(`/api/v1/judge-runs/${encodeURIComponent(row.dataset.run)}`, {
      headers: { Accept: 'application/json' },
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (!response.ok) throw new Error(`status ${response.status}`);
    update(row, await response.json());
  }

  async function tick() {
    const rows = running();
    if (rows.length === 0) return;
    const results = await Promise.allSettled(rows.map(follow));
    if (results.some((r) => r.status === 'rejected')) {
      // Signed out, or the server is away: say so once and stop, the page stays as it is.
      if (live) live.textContent = 'Live progress stopped: reload the page to see how the runs stand.';
      return;
    }
    setTimeout(tick, EVERY_MS);
  }

  setTimeout(tick, EVERY_MS);
})();
