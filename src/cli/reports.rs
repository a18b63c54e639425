//! `verdict report hours`: the hours report, read straight from the database (whoever
//! holds it sees every batch).

use anyhow::Context;

use super::{HoursArgs, describe};
use crate::Store;
use crate::reports::{HoursFormat, HoursQuery};
use verdict_core::role::Role;

pub(super) async fn hours(store: &Store, args: HoursArgs) -> anyhow::Result<()> {
    let batch = match &args.batch {
        None => None,
        Some(name) => Some(
            store
                .batch_by_name(name)
                .await?
                .with_context(|| format!("no batch named {name:?}"))?
                .id
                .to_string(),
        ),
    };
    let query = HoursQuery {
        batch,
        from: args.from,
        to: args.to,
        by: Some(args.by),
        format: Some(args.format),
    };
    let request = crate::reports::parse(&query).map_err(describe)?;
    let report = crate::reports::hours(store, uuid::Uuid::nil(), Role::Admin, &request)
        .await
        .map_err(describe)?;
    let mut out = match request.format {
        HoursFormat::Csv => crate::reports::csv(&report).map_err(describe)?,
        HoursFormat::Json => serde_json::to_vec_pretty(&report)?,
    };
    if request.format == HoursFormat::Json {
        out.push(b'\n');
    }
    match &args.output {
        Some(path) => {
            std::fs::write(path, &out)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("{} rows written to {}", report.rows.len(), path.display());
        }
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&out)?;
        }
    }
    Ok(())
}

pub(super) async fn qualification(store: &Store, batch: &str) -> anyhow::Result<()> {
    let batch = store
        .batch_by_name(batch)
        .await?
        .with_context(|| format!("no batch named {batch:?}"))?;
    let Some(q) = batch.qualification else {
        println!("{} asks for no qualification", batch.name);
        return Ok(());
    };
    let standings = crate::services::qualification::standings(store, batch.id, &q)
        .await
        .map_err(|e| describe(e.into()))?;
    println!(
        "{}: {} gold tasks a try, {:.0}% to pass, {} tr{}",
        batch.name,
        q.tasks,
        q.pass_mark * 100.0,
        q.tries,
        if q.tries == 1 { "y" } else { "ies" }
    );
    if standings.is_empty() {
        println!("nobody has started it yet");
    }
    for (rater, standing) in standings {
        let tries: Vec<String> = standing
            .tries
            .iter()
            .map(|t| format!("{} of {}", t.right, t.rated))
            .collect();
        println!(
            "{rater:<32} {:<12} {}",
            standing.state.words(),
            tries.join("; ")
        );
    }
    Ok(())
}
