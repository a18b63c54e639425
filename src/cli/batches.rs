//! A batch's tasks in and its ratings out: `verdict import` and `verdict export`.

use std::io::IsTerminal;

use anyhow::{Context, bail};

use super::{ExportArgs, ImportArgs, describe};
use crate::Store;
use crate::services::audit::Actor;
use crate::services::batches;

pub(super) async fn import(store: &Store, args: ImportArgs) -> anyhow::Result<()> {
    use verdict_core::import::Format;
    let format = match args.format.as_deref() {
        Some("jsonl" | "ndjson") => Format::Jsonl,
        Some("json") => Format::JsonArray,
        Some("csv") => Format::Csv,
        Some(other) => bail!("unknown format {other:?}: use jsonl, json or csv"),
        None => Format::from_file_name(&args.file.to_string_lossy()).context(
            "cannot tell the format from the file name; pass --format jsonl, json or csv",
        )?,
    };
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let params = batches::UploadParams {
        name: Some(args.name),
        rubric: args.rubric,
        overlap: args.overlap,
        max_overlap: args.max_overlap,
        escalate: args.escalate,
        route_by: args.route_by,
        routing: args.routing,
        randomize: args.no_randomize.then_some(false),
        raters_see_external_ids: args.raters_see_external_ids.then_some(true),
    };
    let new = batches::new_batch(store, &params, None)
        .await
        .map_err(|e| describe(e.into()))?;
    let bar = indicatif::ProgressBar::new(bytes.len() as u64);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "checking {bar:40} {bytes}/{total_bytes} ({bytes_per_sec})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let ticker = bar.clone();
    let started = std::time::Instant::now();
    let size = bytes.len();
    let result = batches::import(
        store,
        new,
        format,
        bytes.into(),
        move |done| ticker.set_position(done),
        Some(Actor::Cli),
    )
    .await;
    bar.finish_and_clear();
    let imported = result.map_err(|e| describe(e.into()))?;
    let seconds = started.elapsed().as_secs_f64().max(1e-6);
    println!(
        "{}: {} tasks added, {} unchanged ({:.1} MB in {:.2} s, {:.1} MB/s)",
        imported.batch.name,
        imported.created,
        imported.unchanged,
        size as f64 / 1e6,
        seconds,
        size as f64 / 1e6 / seconds
    );
    Ok(())
}

pub(super) async fn export(store: &Store, args: ExportArgs) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let query = crate::export::ExportQuery {
        format: Some(args.format),
        outcome: args.outcome,
        status: args.status,
        rater: args.rater,
        since: args.since,
        until: args.until,
        aggregate: None,
        counted: args.counted.then_some(true),
    };
    let (format, filter) = crate::export::parse(&query).map_err(describe)?;
    let batch = store
        .batch_by_name(&args.batch)
        .await?
        .with_context(|| format!("no batch named {:?}", args.batch))?;
    let rubric = store.batch_rubric(&batch).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let output = args.output.clone();
    let writer = tokio::spawn(async move {
        let mut out: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = match &output {
            Some(path) => Box::new(tokio::fs::File::create(path).await?),
            None => Box::new(tokio::io::stdout()),
        };
        while let Some(chunk) = rx.recv().await {
            out.write_all(&chunk).await?;
        }
        out.flush().await?;
        Ok::<(), std::io::Error>(())
    });
    let export = crate::export::Export {
        batch_id: batch.id,
        rubric,
        rubric_version: batch.rubric_version,
        format,
        filter: &filter,
    };
    let rows = crate::export::write(store, export, None, tx)
        .await
        .map_err(describe)?;
    writer
        .await
        .context("the writer stopped")?
        .context("cannot write the export")?;
    if let Some(path) = args.output {
        eprintln!("{rows} ratings written to {}", path.display());
    }
    Ok(())
}
