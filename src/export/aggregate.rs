//! The aggregated export (`?aggregate=majority` or `?aggregate=dawid_skene`): one row
//! per task and question, the answer the method gives from the ratings that count in the
//! metrics, with its confidence (see [`verdict_core::metrics::aggregate`]). A score
//! comes to its middle answer whatever the method (`method` says `median`). A tie is
//! no answer: `answer` is empty and `tied` lists the tied answers (in CSV joined by
//! `|`), so no tie is settled by the order of the rubric's options. `mean` is the mean
//! answer where the answers are numbers.

use serde::Serialize;

use super::{ExportQuery, Format};
use crate::error::{AppError, AppResult, FieldErrors};
use crate::store::Store;
use crate::store::review::{ExportFilter, ExportRow};
use verdict_core::lifecycle::Outcome;
use verdict_core::metrics::aggregate::{Gathered, Kind, Label, Method};
use verdict_core::rubric::Rubric;

/// The columns of the aggregated CSV, in order.
pub const COLUMNS: [&str; 8] = [
    "external_id",
    "question",
    "answer",
    "tied",
    "confidence",
    "mean",
    "method",
    "raters",
];

/// Checks an aggregated export's query: a known method and format, and none of the
/// ratings export's filters (the aggregation reads exactly the ratings the metrics
/// count). Every bad parameter is reported.
pub fn parse(query: &ExportQuery, aggregate: &str) -> AppResult<(Format, Method)> {
    let mut fields = FieldErrors::new();
    let method = Method::parse(aggregate);
    if method.is_none() {
        fields.insert(
            "aggregate".into(),
            format!("unknown aggregate {aggregate:?}: use majority or dawid_skene"),
        );
    }
    let format = super::format_of(query.format.as_deref(), &mut fields);
    for (name, given) in [
        ("outcome", &query.outcome),
        ("status", &query.status),
        ("rater", &query.rater),
        ("since", &query.since),
        ("until", &query.until),
    ] {
        if given.is_some() {
            fields.insert(
                name.into(),
                "cannot be combined with aggregate: an aggregated export reads the ratings \
                 the metrics count"
                    .into(),
            );
        }
    }
    if query.counted == Some(false) {
        fields.insert(
            "counted".into(),
            "cannot be false with aggregate: an aggregated export reads only the ratings \
             the metrics count"
                .into(),
        );
    }
    match (format, method) {
        (Some(format), Some(method)) if fields.is_empty() => Ok((format, method)),
        _ => Err(AppError::invalid(fields)),
    }
}

/// One row of the aggregated export.
#[derive(Serialize)]
struct Row<'a> {
    external_id: &'a str,
    question: &'a str,
    /// `null` for a tie.
    answer: serde_json::Value,
    /// The tied answers; empty when there is an answer.
    tied: Vec<serde_json::Value>,
    confidence: f64,
    mean: Option<f64>,
    method: &'static str,
    raters: usize,
}

/// An answer as a CSV cell: text neutralised against formulas.
fn cell(label: &Label) -> String {
    match label {
        Label::Text(s) => super::neutral(s),
        other => other.to_string(),
    }
}

/// The answers of the batch's ratings that count in the metrics, by external id.
pub async fn gather(
    store: &Store,
    batch_id: uuid::Uuid,
    rubric: &Rubric,
) -> AppResult<Gathered<String>> {
    let mut gathered = Gathered::new(rubric);
    let filter = ExportFilter {
        outcome: Some(Outcome::Rated),
        ..ExportFilter::default()
    };
    // Nothing is sent: every row is taken in here.
    let (out, _unused) = tokio::sync::mpsc::channel::<Vec<u8>>(1);
    store
        .export_rows(
            batch_id,
            &filter,
            |row: ExportRow| {
                if row.counts_in_metrics() {
                    gathered.add(&row.external_id, &row.rater, &row.answers.0);
                }
                None
            },
            &out,
        )
        .await?;
    Ok(gathered)
}

/// The aggregated export of `gathered` by `method`: rows by question in the rubric's
/// order, then by external id.
pub fn render(gathered: &Gathered<String>, method: Method, format: Format) -> AppResult<Vec<u8>> {
    let mut csv = csv::Writer::from_writer(Vec::new());
    let mut lines = Vec::new();
    if format == Format::Csv {
        csv.write_record(COLUMNS).map_err(AppError::internal)?;
    }
    for (i, question) in gathered.questions.iter().enumerate() {
        let result = gathered.run(i, method);
        let means = gathered.means(i);
        let method = match question.kind {
            Kind::Classes => method.as_str(),
            Kind::Median => "median",
        };
        for task in &result.tasks {
            let row = Row {
                external_id: &task.task,
                question: &question.column,
                answer: task
                    .label
                    .as_ref()
                    .map_or(serde_json::Value::Null, Label::to_json),
                tied: task.tied.iter().map(Label::to_json).collect(),
                confidence: task.confidence,
                mean: means.get(&task.task).copied(),
                method,
                raters: task.answers,
            };
            match format {
                Format::Csv => {
                    let tied: Vec<String> = task.tied.iter().map(cell).collect();
                    csv.write_record([
                        super::neutral(row.external_id),
                        row.question.to_owned(),
                        task.label.as_ref().map(cell).unwrap_or_default(),
                        tied.join("|"),
                        row.confidence.to_string(),
                        row.mean.map(|m| m.to_string()).unwrap_or_default(),
                        row.method.to_owned(),
                        row.raters.to_string(),
                    ])
                    .map_err(AppError::internal)?;
                }
                Format::Jsonl => {
                    serde_json::to_writer(&mut lines, &row).map_err(AppError::internal)?;
                    lines.push(b'\n');
                }
            }
        }
    }
    match format {
        Format::Csv => csv.into_inner().map_err(AppError::internal),
        Format::Jsonl => Ok(lines),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_checked_field_by_field() {
        let bad = ExportQuery {
            format: Some("xlsx".into()),
            rater: Some("ann".into()),
            ..ExportQuery::default()
        };
        let Err(AppError::Validation { fields, .. }) = parse(&bad, "mean") else {
            panic!("refused")
        };
        let mut names: Vec<&String> = fields.keys().collect();
        names.sort();
        assert_eq!(names, ["aggregate", "format", "rater"]);
        let (format, method) = parse(&ExportQuery::default(), "dawid_skene").unwrap();
        assert_eq!((format, method), (Format::Csv, Method::DawidSkene));
    }
}
