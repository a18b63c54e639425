//! LLM judges: `verdict judge add`, `list`, and `run` over a batch in the foreground.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;

use super::{JudgeCommand, describe};
use crate::Store;
use crate::config::DEFAULT_JUDGE_RETRY_DELAY;
use crate::services::audit::Actor;
use crate::services::judging::{Claim, Judging, judges, runs, worker};
use verdict_core::lifecycle::RunStatus;

pub(super) async fn judge(store: &Store, cmd: JudgeCommand) -> anyhow::Result<()> {
    let key = crate::credentials::sealed::SealingKey::from_env().map_err(anyhow::Error::msg)?;
    match cmd {
        JudgeCommand::Add {
            name,
            base_url,
            model,
            api_key_env,
            temperature,
            max_tokens,
            seed,
            structured_output,
            concurrency,
            requests_per_minute,
            max_reply_bytes,
            endpoints,
        } => {
            let body = serde_json::json!({
                "name": name, "base_url": base_url, "model": model, "api_key_env": api_key_env,
                "temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                "structured_output": structured_output, "concurrency": concurrency,
                "requests_per_minute": requests_per_minute, "max_reply_bytes": max_reply_bytes,
            });
            let judge = judges::create(store, Actor::Cli, key.as_ref(), &endpoints.policy(), &body)
                .await
                .map_err(|e| describe(e.into()))?;
            println!("created judge {} ({})", judge.name, judge.id);
        }
        JudgeCommand::List => {
            for judge in store.list_judges().await? {
                println!(
                    "{}\t{}\t{}\tconcurrency {}\t{}/min",
                    judge.name,
                    judge.base_url,
                    judge.model,
                    judge.concurrency,
                    judge.requests_per_minute
                );
            }
        }
        JudgeCommand::Run {
            batch,
            judge,
            no_wait,
            lease,
            endpoints,
        } => {
            let batch = store
                .batch_by_name(&batch)
                .await?
                .with_context(|| format!("no batch named {batch:?}"))?;
            let judge = runs::find_judge(store, &judge)
                .await
                .map_err(|e| describe(e.into()))?;
            let (run, resumed) = runs::resume_or_start(store, key.as_ref(), &judge, &batch)
                .await
                .map_err(|e| describe(e.into()))?;
            if resumed {
                eprintln!("resuming run {}", run.id);
            }
            let judging = Judging::new(
                store.clone(),
                lease.lease(),
                DEFAULT_JUDGE_RETRY_DELAY,
                key,
                endpoints.policy(),
            );
            let over = tokio::select! {
                over = wait_turn(&judging, run.id, no_wait) => over?,
                () = crate::shutdown_signal() => {
                    anyhow::bail!("stopped while waiting to take the run over; nothing was asked")
                }
            };
            if over.is_none() {
                work_here(store, &judging, &run).await?;
            }
            let view = runs::run_view(store, store.run(run.id).await?.context("the run is gone")?)
                .await
                .map_err(|e| describe(e.into()))?;
            println!(
                "run {}: {} — {}; {} answered, {} unparsed, {} failed of {} calls; {} + {} tokens",
                view.id,
                view.status_text(),
                view.tasks_text(),
                view.answered,
                view.unparsed,
                view.failed,
                view.calls,
                view.tokens.prompt,
                view.tokens.completion
            );
            let left = i64::from(view.calls) - view.answered - view.unparsed;
            match view.status {
                RunStatus::Finished => {}
                RunStatus::Failed => anyhow::bail!(
                    "the run failed: none of its calls got an answer (the last error is above)"
                ),
                RunStatus::Paused => anyhow::bail!(
                    "the run was paused, {left} calls short; `verdict judge run` again resumes it"
                ),
                RunStatus::Cancelled => {
                    anyhow::bail!("the run was cancelled, {left} calls short")
                }
                RunStatus::Running => anyhow::bail!(
                    "another process took the run over (this one fell silent for the lease); it works the {left} calls left"
                ),
            }
        }
    }
    Ok(())
}

/// Works `run` here with a progress bar until it is over, paused, cancelled or taken by
/// another process; Ctrl-C or SIGTERM lets go of it and fails the command.
async fn work_here(
    store: &Store,
    judging: &Judging,
    run: &crate::store::judges::Run,
) -> anyhow::Result<()> {
    let done = store.run_counts(run.id).await?;
    let bar = indicatif::ProgressBar::new(u64::try_from(run.calls).unwrap_or(0));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} calls  {msg}  [{elapsed_precise}, {eta} left]",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_position(u64::try_from(done.answered + done.unparsed).unwrap_or(0));
    let shown = std::sync::Mutex::new(Progress {
        answered: done.answered,
        unparsed: done.unparsed,
        ..Progress::default()
    });
    let show = |change: &dyn Fn(&mut Progress)| {
        let mut shown = shown.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut shown);
        bar.set_message(shown.message());
    };
    let progress = |call: &crate::store::judges::Call| {
        show(&|p| match call.status {
            verdict_core::lifecycle::CallStatus::Answered => p.answered += 1,
            verdict_core::lifecycle::CallStatus::Unparsed => p.unparsed += 1,
            verdict_core::lifecycle::CallStatus::Failed => p.failed += 1,
        });
        bar.inc(1);
    };
    let watch = async {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            if let Ok(Some(now)) = store.run(run.id).await
                && let Ok(view) = runs::run_view(store, now).await
            {
                let retrying = view.retrying.then(|| view.status_text());
                let tasks = Some(view.tasks_text());
                show(&|p| {
                    p.retrying.clone_from(&retrying);
                    p.tasks.clone_from(&tasks);
                });
            }
        }
    };
    let work = judging.run_to_end(run.id, Some(&progress));
    tokio::select! {
        out = work => out.map_err(|e| describe(e.into()))?,
        _ = watch => {}
        () = crate::shutdown_signal() => {
            bar.abandon_with_message("stopped");
            // The next `verdict judge run` takes the run at once, not after the lease.
            judging.let_go(run.id).await.map_err(|e| describe(e.into()))?;
            anyhow::bail!(
                "stopped with the run unfinished; run the same command again to go on"
            );
        }
    }
    bar.finish();
    Ok(())
}

/// Waits until this process may work `run`: at once when nobody works it or its worker
/// is provably gone; while another works it, until that one has been silent for the
/// lease, counting down on stderr. `Some(status)` when the run stopped running
/// meanwhile (another process finished it, or someone paused or cancelled it).
async fn wait_turn(
    judging: &Judging,
    run: uuid::Uuid,
    no_wait: bool,
) -> anyhow::Result<Option<RunStatus>> {
    let tty = std::io::stderr().is_terminal();
    let lease = judging.lease();
    // The holder's heartbeat as first seen, and whether it has moved since: a holder
    // that beats is alive.
    let mut first_heard = None;
    let mut beating = false;
    let mut said = String::new();
    let mut said_at = std::time::Instant::now();
    let mut said_working = false;
    let end_line = |said: &str| {
        if tty && !said.is_empty() {
            eprintln!();
        }
    };
    loop {
        match judging.claim(run).await.map_err(|e| describe(e.into()))? {
            Claim::Claimed => {
                end_line(&said);
                if !said.is_empty() {
                    eprintln!("taking run {run} over");
                }
                return Ok(None);
            }
            Claim::TookFromGone(holder) => {
                end_line(&said);
                eprintln!(
                    "run {run} was held by {}, which is gone; taking it over now",
                    worker::describe(&holder)
                );
                return Ok(None);
            }
            Claim::NotRunning(status) => {
                end_line(&said);
                return Ok(Some(status));
            }
            Claim::Held {
                worker: holder,
                silent,
                heard_at,
            } => {
                let who = worker::describe(&holder);
                let (silent_s, lease_s) = (silent.as_secs(), lease.as_secs());
                if no_wait {
                    anyhow::bail!(
                        "run {run} is held by {who}, heard from {silent_s} s ago; it is taken over once that one has been silent for {lease_s} s (run again without --no-wait to wait for that)"
                    );
                }
                beating |= *first_heard.get_or_insert(heard_at) != heard_at;
                // A heartbeat comes every third of the lease: a holder heard from since
                // this began waiting, and not long ago, works the run.
                let working = beating && silent <= lease / 3 + Duration::from_secs(1);
                let line = if working {
                    format!(
                        "run held by {who}, which is working it (heard from {silent_s} s ago); waiting until it stops or falls silent for {lease_s} s"
                    )
                } else {
                    let left = lease.saturating_sub(silent).as_secs_f64().ceil();
                    format!(
                        "run held by {who}, silent for {silent_s} s; taking it over in {left} s"
                    )
                };
                if tty {
                    eprint!("\r\x1b[2K{line}");
                } else if said.is_empty()
                    || working != said_working
                    || said_at.elapsed() >= Duration::from_secs(5)
                {
                    // Not a terminal: a line now and then, not one a second.
                    eprintln!("{line}");
                    said_at = std::time::Instant::now();
                }
                said = line;
                said_working = working;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// What the progress bar of `verdict judge run` says beside the bar: the calls over by
/// status, and while a call waits to be asked again, what the run says of it.
#[derive(Debug, Default)]
struct Progress {
    answered: i64,
    unparsed: i64,
    failed: i64,
    /// `retrying · attempt 3 · connection dropped: …`, while it does.
    retrying: Option<String>,
    /// What came of the tasks so far (`3 of 10 tasks rated, 7 orders disagreed, …`).
    tasks: Option<String>,
}

impl Progress {
    fn message(&self) -> String {
        let retrying = self
            .retrying
            .as_ref()
            .map_or(String::new(), |text| format!(" · {text}"));
        let tasks = self
            .tasks
            .as_ref()
            .map_or(String::new(), |text| format!(" · {text}"));
        format!(
            "{} answered, {} unparsed, {} failed{tasks}{retrying}",
            self.answered, self.unparsed, self.failed
        )
    }
}
