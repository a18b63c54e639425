//! LLM judges: `verdict judge add`, `list`, and `run` over a batch in the foreground.

use anyhow::Context;

use super::{JudgeCommand, describe};
use crate::Store;
use crate::config::{DEFAULT_JUDGE_LEASE, DEFAULT_JUDGE_RETRY_DELAY};
use crate::services::audit::Actor;
use crate::services::judging::{Judging, judges, runs};

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
                DEFAULT_JUDGE_LEASE,
                DEFAULT_JUDGE_RETRY_DELAY,
                key,
                endpoints.policy(),
            );
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
                    if let Ok(Some(now)) = store.run(run.id).await {
                        let view = runs::RunView::new(now, &judge.name, Default::default());
                        let retrying = view.retrying.then(|| view.status_text());
                        show(&|p| p.retrying.clone_from(&retrying));
                    }
                }
            };
            let work = judging.run_to_end(run.id, Some(&progress));
            tokio::select! {
                out = work => out.map_err(|e| describe(e.into()))?,
                _ = watch => {}
                () = crate::shutdown_signal() => {
                    bar.abandon_with_message("stopped; run the same command again to go on");
                    return Ok(());
                }
            }
            bar.finish();
            let view = runs::run_view(store, store.run(run.id).await?.context("the run is gone")?)
                .await
                .map_err(|e| describe(e.into()))?;
            println!(
                "run {}: {} — {} answered, {} unparsed, {} failed of {} calls; {} + {} tokens",
                view.id,
                view.status_text(),
                view.answered,
                view.unparsed,
                view.failed,
                view.calls,
                view.tokens.prompt,
                view.tokens.completion
            );
            if view.status == verdict_core::lifecycle::RunStatus::Failed {
                anyhow::bail!(
                    "the run failed: none of its calls got an answer (the last error is above)"
                );
            }
        }
    }
    Ok(())
}

/// What the progress bar of `verdict judge run` says beside the bar: the calls over by
/// status, and while a call waits to be asked again, what the run says of it.
#[derive(Debug, Default)]
struct Progress {
    answered: i64,
    unparsed: i64,
    failed: i64,
    /// `retrying · attempt 3 · connection failed: …`, while it does.
    retrying: Option<String>,
}

impl Progress {
    fn message(&self) -> String {
        let retrying = self
            .retrying
            .as_ref()
            .map_or(String::new(), |text| format!(" · {text}"));
        format!(
            "{} answered, {} unparsed, {} failed{retrying}",
            self.answered, self.unparsed, self.failed
        )
    }
}
