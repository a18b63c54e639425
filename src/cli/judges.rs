//! LLM judges: `verdict judge add`, `list`, and `run` over a batch in the foreground.

use anyhow::Context;

use super::{JudgeCommand, describe};
use crate::{Config, Store};

pub(super) async fn judge(store: &Store, cmd: JudgeCommand) -> anyhow::Result<()> {
    use verdict_core::lifecycle::RunStatus;
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
            let (_, settings) =
                crate::judges::read_settings(store, key.as_ref(), &endpoints.policy(), &body, None)
                    .await
                    .map_err(|e| describe(e.into()))?;
            let judge = store.create_judge(&name, &settings).await?;
            crate::services::audit::record(
                store,
                crate::services::audit::Actor::Cli,
                "judge.create",
                &judge.name,
                serde_json::json!({"base_url": judge.base_url, "model": judge.model}),
            )
            .await;
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
            let judge = crate::judges::find_judge(store, &judge)
                .await
                .map_err(|e| describe(e.into()))?;
            let open = store
                .runs_of_batch(batch.id)
                .await?
                .into_iter()
                .find(|r| r.judge_id == judge.id && r.status.is_open());
            let run = match open {
                Some(run) => {
                    store
                        .set_run_status(run.id, &[RunStatus::Paused], RunStatus::Running)
                        .await?;
                    eprintln!("resuming run {}", run.id);
                    run
                }
                None => crate::judges::start_run(store, key.as_ref(), &judge, &batch, None)
                    .await
                    .map_err(|e| describe(e.into()))?,
            };
            let judging = crate::services::judging::Judging::new(
                store.clone(),
                Config::default().judge_lease,
                Config::default().judge_retry_delay,
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
            let counts = std::sync::Mutex::new((done.answered, done.unparsed, 0i64));
            let progress = |call: &crate::store::judges::Call| {
                let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
                match call.status {
                    verdict_core::lifecycle::CallStatus::Answered => c.0 += 1,
                    verdict_core::lifecycle::CallStatus::Unparsed => c.1 += 1,
                    verdict_core::lifecycle::CallStatus::Failed => c.2 += 1,
                }
                bar.set_message(format!(
                    "{} answered, {} unparsed, {} failed",
                    c.0, c.1, c.2
                ));
                bar.inc(1);
            };
            let work = judging.run_to_end(run.id, Some(&progress));
            tokio::select! {
                out = work => out.map_err(|e| describe(e.into()))?,
                () = crate::shutdown_signal() => {
                    bar.abandon_with_message("stopped; run the same command again to go on");
                    return Ok(());
                }
            }
            bar.finish();
            let view = crate::judges::run_view(
                store,
                store.run(run.id).await?.context("the run is gone")?,
            )
            .await
            .map_err(|e| describe(e.into()))?;
            println!(
                "run {}: {} — {} answered, {} unparsed, {} failed of {} calls; {} + {} tokens",
                view.id,
                view.status,
                view.answered,
                view.unparsed,
                view.failed,
                view.calls,
                view.tokens.prompt,
                view.tokens.completion
            );
        }
    }
    Ok(())
}
