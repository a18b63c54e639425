//! Rubric documents: `verdict rubric add`, `list` and `show`.

use anyhow::{Context, bail};

use super::{RubricCommand, describe};
use crate::Store;
use crate::services::audit::Actor;

pub(super) async fn rubric(store: &Store, cmd: RubricCommand) -> anyhow::Result<()> {
    match cmd {
        RubricCommand::Add { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let document: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid JSON", file.display()))?;
            let added = crate::services::rubrics::add(store, &document, Actor::Cli)
                .await
                .map_err(|err| describe(crate::rubrics::refusal(err)))?;
            if added.created {
                println!("added {} version {}", added.name, added.version);
            } else {
                println!(
                    "{} version {} is already this document; nothing changed",
                    added.name, added.version
                );
            }
        }
        RubricCommand::List => {
            for r in crate::rubrics::list(store).await.map_err(describe)? {
                let versions: Vec<String> =
                    r.versions.iter().map(|v| v.version.to_string()).collect();
                println!(
                    "{}\tversions {}\t{}{}",
                    r.name,
                    versions.join(","),
                    r.title,
                    if r.built_in { " (built in)" } else { "" }
                );
            }
        }
        RubricCommand::Show { name, version } => {
            let (_, rubric) = match crate::rubrics::get(store, &name, version).await {
                Err(crate::error::AppError::NotFound) => match version {
                    Some(v) => bail!("rubric {name:?} has no version {v}"),
                    None => bail!("no rubric named {name:?}"),
                },
                other => other.map_err(describe)?,
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&verdict_core::rubric::document::to_value(&rubric))?
            );
        }
    }
    Ok(())
}
