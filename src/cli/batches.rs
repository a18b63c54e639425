//! A batch's tasks in and its ratings out (`verdict import`, `verdict export`), and a
//! batch deleted, restored or purged (`verdict batch ...`).

use std::io::IsTerminal;

use anyhow::{Context, bail};

use super::{BatchCommand, ExportArgs, ImportArgs, describe};
use crate::Store;
use crate::services::audit::Actor;
use crate::services::{batches, corrections};

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
        final_set: args.final_set.then_some(true),
    };
    let batch = store
        .batch_by_name(&args.batch)
        .await?
        .with_context(|| format!("no batch named {:?}", args.batch))?;
    let rubric = store.batch_rubric(&batch).await?;
    if args.final_set {
        let format = crate::export::final_set::parse(&query).map_err(describe)?;
        let body = crate::export::final_set::build(store, &batch, &rubric, format)
            .await
            .map_err(describe)?;
        match &args.output {
            Some(path) => std::fs::write(path, &body)
                .with_context(|| format!("cannot write {}", path.display()))?,
            None => {
                let mut out = tokio::io::stdout();
                out.write_all(&body).await?;
                out.flush().await?;
            }
        }
        return Ok(());
    }
    let (format, filter) = crate::export::parse(&query).map_err(describe)?;
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

pub(super) async fn batch(store: &Store, command: BatchCommand) -> anyhow::Result<()> {
    match command {
        BatchCommand::Delete { batch } => {
            let found = store
                .batch_by_name(&batch)
                .await?
                .with_context(|| format!("no batch named {batch:?} (deleted already?)"))?;
            let done = corrections::delete_batch(store, found.id, None, Actor::Cli)
                .await
                .map_err(|e| describe(e.into()))?;
            eprintln!(
                "deleted {:?}; {} held assignment(s) ended; `verdict batch restore --batch {:?}` brings it back",
                done.name, done.ended, done.name
            );
        }
        BatchCommand::Restore { batch, retention } => {
            let id = deleted_named(store, &batch).await?;
            let name = corrections::restore_batch(store, id, retention.retention(), Actor::Cli)
                .await
                .map_err(|e| describe(e.into()))?;
            eprintln!("restored {name:?}");
        }
        BatchCommand::Deleted { retention } => {
            let deleted = corrections::deleted(store, retention.retention())
                .await
                .map_err(|e| describe(e.into()))?;
            if deleted.is_empty() {
                eprintln!("no deleted batches");
            }
            for (b, purge_at) in deleted {
                println!(
                    "{}\t{}\tdeleted {}\tby {}\t{} tasks\t{} ratings\tpurged after {}",
                    b.id,
                    b.name,
                    b.deleted_at.to_rfc3339(),
                    b.deleted_by.as_deref().unwrap_or("cli"),
                    b.tasks,
                    b.ratings,
                    purge_at.to_rfc3339()
                );
            }
        }
        BatchCommand::Purge { batch, retention } => {
            let only = match batch {
                Some(name) => Some(deleted_named(store, &name).await?),
                None => None,
            };
            let purged = corrections::purge(store, retention.retention(), only, Actor::Cli)
                .await
                .map_err(|e| describe(e.into()))?;
            if purged.is_empty() {
                eprintln!("nothing to purge");
            }
            for name in purged {
                eprintln!("purged {name:?}");
            }
        }
    }
    Ok(())
}

/// The id of the deleted batch named `name`.
async fn deleted_named(store: &Store, name: &str) -> anyhow::Result<uuid::Uuid> {
    match store.deleted_batch_named(name).await? {
        Some(id) => Ok(id),
        None if store.batch_by_name(name).await?.is_some() => {
            bail!("the batch {name:?} is not deleted")
        }
        None => bail!("no deleted batch named {name:?}"),
    }
}
