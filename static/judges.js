// Live progress of the batch page's judge runs: while a run on the page is running,
// asks the API for it every 2 seconds (with the session cookie) and writes its numbers,
// status (with the attempt and the error while it retries) and buttons into its row; a
// change of status, and the start of retrying, are said in the polite live region under
// the table. An error comes from what an endpoint answered: it is only ever written as
// text. Polling stops once no run on the page is running. Without JavaScript the table
// is the snapshot the page was served with.
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

  // Where the run stands, in words, as the server writes it (RunView::status_text).
  function statusText(run) {
    const error = run.last_error ?? 'no error was recorded';
    if (run.status === 'running' && run.attempt != null) return `retrying · attempt ${run.attempt} · ${error}`;
    if (run.status === 'failed') return `failed · ${error}`;
    return run.status;
  }

  // What came of the tasks, as the server writes it (RunView::tasks_text).
  function tasksText(run) {
    let text = `${run.tasks_rated} of ${run.tasks} tasks rated, ${run.orders_disagreed} orders disagreed`;
    const lean = run.first_shown_share;
    if (lean && lean.share) {
      const pct = (x) => `${Math.round(x * 100)}%`;
      text += `, first shown ${pct(lean.share.value)} (${pct(lean.share.low)}–${pct(lean.share.high)}) of ${lean.n}`;
    }
    return text;
  }

  function update(row, run) {
    const done = run.answered + run.unparsed;
    put(row, 'done', String(done));
    put(row, 'answered', String(run.answered));
    put(row, 'unparsed', String(run.unparsed));
    put(row, 'failed', String(run.failed));
    put(row, 'tasks', tasksText(run));
    put(row, 'tokens', `${run.tokens.prompt} + ${run.tokens.completion}`);
    put(row, 'finished', minute(run.finished_at));
    const bar = row.querySelector('progress');
    if (bar) bar.value = done;
    // The buttons the new status allows, as the server draws them.
    const over = run.status === 'finished' || run.status === 'failed';
    const allowed = {
      pause: run.status === 'running',
      resume: run.status === 'paused' || (over && run.failed > 0),
      cancel: run.status === 'running' || run.status === 'paused',
    };
    row.querySelectorAll('button[data-action]').forEach((button) => {
      button.hidden = !allowed[button.dataset.action];
      if (button.dataset.action === 'resume' && over) {
        button.textContent = 'Ask failed calls again';
      }
    });
    put(row, 'status', statusText(run));
    // Said once when the page first sees the run retry, and again if it starts again.
    const wasRetrying = row.dataset.retrying === 'true';
    row.dataset.retrying = String(run.retrying);
    if (run.status !== row.dataset.status) {
      row.dataset.status = run.status;
      if (live) {
        const calls = `${done} of ${run.calls} calls over, ${run.failed} failed.`;
        live.textContent = run.status === 'failed'
          ? `The run of ${run.judge} failed: ${calls} The last error: ${run.last_error ?? 'none was recorded'}.`
          : `The run of ${run.judge} is ${run.status}: ${calls}${run.status === 'finished' ? ' Reload the page to see its figures.' : ''}`;
      }
    } else if (run.retrying && !wasRetrying && live) {
      live.textContent = `The run of ${run.judge} is retrying: ${run.last_error ?? 'no error was recorded'}.`;
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
