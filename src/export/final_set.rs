//! The final dataset (`?final=true`): one row per task of the batch (gold and withdrawn
//! tasks left out), its answer and where it comes from: `adjudicated` (a lead recorded
//! it), else `majority` or `dawid_skene` (the batch's `final_method` over the ratings that
//! count; a score comes to its middle answer, a tie to no answer), else `none`.

use super::{ExportQuery, Format};
use crate::error::{AppError, AppResult, FieldErrors};
use crate::services::adjudication::FinalRow;
use verdict_core::metrics::aggregate::{Label, Question};

/// Checks a final export's query: a known format and none of the other exports'
/// parameters. Every bad parameter is reported.
pub fn parse(query: &ExportQuery) -> AppResult<Format> {
    let mut fields = FieldErrors::new();
    let format = super::format_of(query.format.as_deref(), &mut fields);
    for (name, given) in [
        ("outcome", &query.outcome),
        ("status", &query.status),
        ("rater", &query.rater),
        ("since", &query.since),
        ("until", &query.until),
        ("aggregate", &query.aggregate),
    ] {
        if given.is_some() {
            fields.insert(
                name.into(),
                "cannot be combined with final: the final dataset has one answer per task".into(),
            );
        }
    }
    if query.counted.is_some() {
        fields.insert(
            "counted".into(),
            "cannot be combined with final: its aggregates read the ratings that count".into(),
        );
    }
    match format {
        Some(format) if fields.is_empty() => Ok(format),
        _ => Err(AppError::invalid(fields)),
    }
}

/// Batch `batch`'s final dataset, whole, in `format` (the API and the command line).
pub async fn build(
    store: &crate::store::Store,
    batch: &verdict_core::batch::Batch,
    rubric: &verdict_core::rubric::Rubric,
    format: Format,
) -> AppResult<Vec<u8>> {
    let tasks = store.final_tasks(batch.id).await?;
    let finals = store.final_answers(batch.id).await?;
    let gathered = super::aggregate::gather(store, batch.id, rubric).await?;
    let method = batch.final_method.into();
    tokio::task::spawn_blocking(move || {
        let rows = crate::services::adjudication::final_rows(&tasks, finals, &gathered, method);
        render(&rows, &gathered.questions, format)
    })
    .await
    .map_err(AppError::internal)?
}

/// The final dataset as CSV (`external_id`, `source`, each aggregated question's answer
/// by its column, `tied` joined by `|`, and the whole answer as JSON in `answers`) or as
/// JSON Lines (`external_id`, `source`, `answers` nested, `tied`).
pub fn render(rows: &[FinalRow], questions: &[Question], format: Format) -> AppResult<Vec<u8>> {
    match format {
        Format::Jsonl => {
            let mut out = Vec::new();
            for row in rows {
                serde_json::to_writer(&mut out, row).map_err(AppError::internal)?;
                out.push(b'\n');
            }
            Ok(out)
        }
        Format::Csv => {
            let mut csv = csv::Writer::from_writer(Vec::new());
            let mut header = vec!["external_id".to_owned(), "source".to_owned()];
            header.extend(questions.iter().map(|q| q.column.clone()));
            header.extend(["tied".to_owned(), "answers".to_owned()]);
            csv.write_record(&header).map_err(AppError::internal)?;
            for row in rows {
                let answers = row.answers.as_object().cloned().unwrap_or_default();
                let mut record = vec![
                    super::neutral(&row.external_id),
                    row.source.as_str().to_owned(),
                ];
                for question in questions {
                    record.push(match question.label(&answers) {
                        Some(Label::Text(text)) => super::neutral(&text),
                        Some(label) => label.to_string(),
                        None => String::new(),
                    });
                }
                record.push(row.tied.join("|"));
                // JSON text starts with `{`: never read as a formula.
                record.push(row.answers.to_string());
                csv.write_record(&record).map_err(AppError::internal)?;
            }
            csv.into_inner().map_err(AppError::internal)
        }
    }
}
