//! Exports of a batch's ratings as CSV or JSON Lines: one row per rating (drafts aside),
//! answers in the task's canonical orientation, streamed so memory stays flat however
//! many rows there are.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{AppError, AppResult, FieldErrors};
use crate::store::Store;
use crate::store::review::{ExportFilter, ExportRow};
use verdict_core::evidence::Evidence;
use verdict_core::lifecycle::{Outcome, SkipReason, Status};
use verdict_core::rubric::Rubric;
use verdict_core::rubric::Side;

pub mod aggregate;
pub mod api;
pub mod final_set;
pub mod judge;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "csv" => Some(Self::Csv),
            "jsonl" => Some(Self::Jsonl),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Jsonl => "application/x-ndjson",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Jsonl => "jsonl",
        }
    }
}

/// The export's query: format and filters.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `csv` (default) or `jsonl`.
    #[param(schema_with = crate::web::openapi::export_formats)]
    pub format: Option<String>,
    /// `rated`, `skipped` or `out_of_scope`.
    #[param(schema_with = crate::web::openapi::outcomes)]
    pub outcome: Option<String>,
    /// `submitted`, `returned`, `accepted` or `rejected`.
    #[param(schema_with = crate::web::openapi::finished_statuses)]
    pub status: Option<String>,
    /// A rater's username.
    pub rater: Option<String>,
    /// Submitted at or after (RFC 3339, or a date).
    #[param(pattern = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?$")]
    pub since: Option<String>,
    /// Submitted before (RFC 3339, or a date).
    #[param(pattern = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))?$")]
    pub until: Option<String>,
    /// `majority` or `dawid_skene`: instead of the ratings, one aggregated answer per
    /// task and question, with its confidence (no other filter then).
    #[param(schema_with = crate::web::openapi::aggregates)]
    pub aggregate: Option<String>,
    /// `true`: only the rows that count in the metrics (no skip, out-of-scope mark, gold
    /// rating, rejected or unreviewed review-first rating, or judge's rating): as many
    /// rows as the metrics' `counts.included`.
    pub counted: Option<bool>,
    /// `true`: the final dataset instead, one row per task (gold and withdrawn tasks
    /// left out): `external_id`, `answers` and `source`: `adjudicated` (a lead's final
    /// answer), else the batch's `final_method` (`majority` or `dawid_skene`) over the
    /// ratings that count, else `none` (no other filter then).
    #[serde(rename = "final")]
    #[param(rename = "final")]
    pub final_set: Option<bool>,
}

fn time(field: &str, text: &str, fields: &mut FieldErrors) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return d.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    }
    fields.insert(
        field.into(),
        "must be a date (2026-11-21) or an RFC 3339 time".into(),
    );
    None
}

/// An export's `format` (CSV when not given); `None`, with the reason under `format` in
/// `fields`, for one there is not.
pub fn format_of(given: Option<&str>, fields: &mut FieldErrors) -> Option<Format> {
    match given {
        None => Some(Format::Csv),
        Some(f) => Format::parse(f).or_else(|| {
            fields.insert(
                "format".into(),
                format!("unknown format {f:?}: use csv or jsonl"),
            );
            None
        }),
    }
}

/// Checks the query: every bad parameter is reported.
pub fn parse(query: &ExportQuery) -> AppResult<(Format, ExportFilter)> {
    let mut fields = FieldErrors::new();
    let format = format_of(query.format.as_deref(), &mut fields);
    let mut refuse = |unknown: verdict_core::lifecycle::UnknownName| {
        let (name, v) = (unknown.what, &unknown.given);
        let allowed = unknown.allowed.join(", ");
        fields.insert(name.into(), format!("unknown {name} {v:?}: use {allowed}"));
    };
    let outcome = match query.outcome.as_deref().map(str::parse::<Outcome>) {
        Some(Err(unknown)) => {
            refuse(unknown);
            None
        }
        parsed => parsed.and_then(Result::ok),
    };
    let status = match query.status.as_deref().map(Status::parse_finished) {
        Some(Err(unknown)) => {
            refuse(unknown);
            None
        }
        parsed => parsed.and_then(Result::ok),
    };
    let since = query
        .since
        .as_deref()
        .and_then(|t| time("since", t, &mut fields));
    let until = query
        .until
        .as_deref()
        .and_then(|t| time("until", t, &mut fields));
    match format {
        Some(format) if fields.is_empty() => Ok((
            format,
            ExportFilter {
                outcome,
                status,
                rater: query.rater.clone(),
                submitted_since: since,
                submitted_until: until,
                counted: query.counted.unwrap_or(false),
            },
        )),
        _ => Err(AppError::invalid(fields)),
    }
}

/// The CSV columns, in order: the fixed ones, then every answer of the rubric.
pub fn columns(rubric: &Rubric) -> Vec<String> {
    let mut columns: Vec<String> = [
        "rating_id",
        "batch",
        "external_id",
        "rater",
        "rater_kind",
        "outcome",
        "status",
        "counts_in_metrics",
        "swapped",
        "model_a",
        "model_b",
    ]
    .map(String::from)
    .to_vec();
    for slot in rubric.slots() {
        let prefix = slot
            .side()
            .map_or(String::new(), |s| format!("{}_", s.key()));
        columns.push(format!("{prefix}{}", slot.key()));
        if let Some(key) = slot.explanation_key() {
            columns.push(format!("{prefix}{key}"));
        }
    }
    columns.extend(
        [
            "classifications",
            "skip_reason",
            "note",
            "time_spent_s",
            "version",
            "created_at",
            "submitted_at",
            "reviewed_at",
            "review_comment",
            "rubric",
            "rubric_version",
            "warnings",
            "code_runs",
            "attachments",
            "review_field_comments",
            "gold",
            "gold_grade",
            "review_first",
            "judge_run",
            "withdrawn",
            "stale",
        ]
        .map(String::from),
    );
    columns
}

/// What ran of each response in the rater's browser, in words: `a: ran 2 blocks: 2
/// passed; b: ran 1 block: 1 failed` (canonical sides).
fn code_runs(evidence: Option<&Evidence>) -> String {
    let Some(evidence) = evidence else {
        return String::new();
    };
    [Side::A, Side::B]
        .into_iter()
        .filter_map(|side| {
            let tally = evidence.tally(side);
            (tally.ran > 0).then(|| format!("{}: {}", side.key(), tally.words()))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A cell a spreadsheet would run as a formula gets a leading apostrophe.
pub(crate) fn neutral(text: &str) -> String {
    if is_formula(text) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

fn is_formula(text: &str) -> bool {
    text.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// A time as the export writes it: RFC 3339 in UTC, with as many digits of the second
/// as it needs (none, 3, 6 or 9), as [`DateTime::to_rfc3339`] writes it.
const STAMP: &str = "%Y-%m-%dT%H:%M:%S%.f+00:00";

/// [`STAMP`] parsed once: formatting with the text itself parses it again for every time
/// written (a sixth of a CSV export's rendering).
static STAMP_ITEMS: std::sync::LazyLock<Vec<chrono::format::Item<'static>>> =
    std::sync::LazyLock::new(|| {
        chrono::format::StrftimeItems::new(STAMP)
            .parse()
            .expect("STAMP is a valid format")
    });

/// The answer columns of a rubric, worked out once per export: each slot, and its
/// explanation's key if it has one.
pub struct AnswerColumns<'r> {
    cells: Vec<(verdict_core::rubric::Slot<'r>, Option<String>)>,
}

impl<'r> AnswerColumns<'r> {
    pub fn of(rubric: &'r Rubric) -> Self {
        let cells = rubric
            .slots()
            .into_iter()
            .map(|slot| (slot, slot.explanation_key()))
            .collect();
        Self { cells }
    }
}

/// Writes one CSV record, in the order of [`columns`], cell by cell: text the row holds
/// is written from where it lies and numbers and times go through one reused buffer, so
/// a row costs no string per cell. `rubric` names the rubric; `version` is its version
/// the batch pinned.
pub struct CsvRecords<'r> {
    rubric: &'r str,
    version: i32,
    answers: AnswerColumns<'r>,
    scratch: String,
}

impl<'r> CsvRecords<'r> {
    pub fn new(rubric: &'r Rubric, version: i32) -> Self {
        Self {
            rubric: &rubric.name,
            version,
            answers: AnswerColumns::of(rubric),
            scratch: String::new(),
        }
    }

    /// Writes `row` to `out`.
    pub fn write<W: std::io::Write>(
        &mut self,
        out: &mut csv::Writer<W>,
        row: &ExportRow,
    ) -> csv::Result<()> {
        let mut cells = Cells {
            out,
            scratch: &mut self.scratch,
        };
        cells.display(row.rating_id)?;
        cells.text(&row.batch)?;
        cells.text(&row.external_id)?;
        cells.text(&row.rater)?;
        cells.display(row.rater_kind)?;
        cells.display(row.outcome)?;
        cells.display(row.status)?;
        cells.display(row.counts_in_metrics())?;
        cells.display(row.swapped)?;
        cells.text(row.model_a.as_deref().unwrap_or(""))?;
        cells.text(row.model_b.as_deref().unwrap_or(""))?;
        let answers: &verdict_core::rubric::Answers = &row.answers.0;
        for (slot, explanation) in &self.answers.cells {
            let holder = slot.holder(answers);
            cells.value(holder.and_then(|h| h.get(slot.key())))?;
            if let Some(explanation) = explanation {
                cells.value(holder.and_then(|h| h.get(explanation)))?;
            }
        }
        match answers.get("classifications") {
            Some(c) => cells.json(c, false)?,
            None => cells.text("")?,
        }
        cells.text(row.skip_reason.as_ref().map_or("", SkipReason::as_str))?;
        cells.text(row.note.as_deref().unwrap_or(""))?;
        cells.display(row.time_spent_s)?;
        cells.display(row.version)?;
        cells.stamp(Some(row.created_at))?;
        cells.stamp(row.submitted_at)?;
        cells.stamp(row.reviewed_at)?;
        cells.text(row.review_comment.as_deref().unwrap_or(""))?;
        cells.text(self.rubric)?;
        cells.display(self.version)?;
        cells.warnings(&row.confirmed_warnings.0)?;
        let evidence = row.evidence.as_ref().map(|e| &e.0);
        // Words of the server's own ("a: ran 2 blocks: ..."), never a formula.
        cells.out.write_field(code_runs(evidence))?;
        let attachments = evidence.map_or(&[][..], |e| &e.attachments[..]);
        cells.json(&attachments, attachments.is_empty())?;
        let comments = &row.review_fields.0;
        cells.json(comments, comments.is_empty())?;
        cells.display(row.gold)?;
        let grade = row.gold_grade.as_ref().map(|g| &g.0);
        cells.json(&grade, grade.is_none())?;
        cells.display(row.review_first)?;
        match row.judge_run {
            Some(id) => cells.display(id)?,
            None => cells.text("")?,
        }
        cells.display(row.withdrawn)?;
        cells.display(row.stale)?;
        // No fields: ends the record.
        cells.out.write_record(None::<&[u8]>)
    }
}

/// The cells of one record being written.
struct Cells<'a, W: std::io::Write> {
    out: &'a mut csv::Writer<W>,
    scratch: &'a mut String,
}

impl<W: std::io::Write> Cells<'_, W> {
    /// Text as it is, a formula neutralised.
    fn text(&mut self, text: &str) -> csv::Result<()> {
        if is_formula(text) {
            self.scratch.clear();
            self.scratch.push('\'');
            self.scratch.push_str(text);
            self.out.write_field(self.scratch.as_bytes())
        } else {
            self.out.write_field(text)
        }
    }

    /// A value written as it displays (numbers, names, ids): never a formula.
    fn display(&mut self, value: impl std::fmt::Display) -> csv::Result<()> {
        use std::fmt::Write;
        self.scratch.clear();
        let _ = write!(self.scratch, "{value}");
        self.out.write_field(self.scratch.as_bytes())
    }

    /// An answer: text as it is, anything else as JSON, nothing for none.
    fn value(&mut self, value: Option<&Value>) -> csv::Result<()> {
        match value {
            None | Some(Value::Null) => self.out.write_field(""),
            Some(Value::String(s)) => self.text(s),
            Some(other) => self.display(other),
        }
    }

    /// A value as JSON, neutralised; nothing when `empty`.
    fn json<T: Serialize + ?Sized>(&mut self, value: &T, empty: bool) -> csv::Result<()> {
        if empty {
            return self.out.write_field("");
        }
        let mut json = std::mem::take(self.scratch);
        json.clear();
        // Serialising into a string cannot fail for these values.
        let mut bytes = json.into_bytes();
        let _ = serde_json::to_writer(&mut bytes, value);
        let json = String::from_utf8(bytes).unwrap_or_default();
        let written = if is_formula(&json) {
            self.out.write_field(format!("'{json}"))
        } else {
            self.out.write_field(json.as_bytes())
        };
        *self.scratch = json;
        written
    }

    /// A time (see [`STAMP`]), nothing for none.
    fn stamp(&mut self, time: Option<DateTime<Utc>>) -> csv::Result<()> {
        match time {
            Some(t) => self.display(t.format_with_items(STAMP_ITEMS.iter())),
            None => self.out.write_field(""),
        }
    }

    /// The confirmed warnings, joined by `;`, neutralised.
    fn warnings(&mut self, warnings: &[String]) -> csv::Result<()> {
        let mut joined = std::mem::take(self.scratch);
        joined.clear();
        for (i, w) in warnings.iter().enumerate() {
            if i > 0 {
                joined.push(';');
            }
            joined.push_str(w);
        }
        let written = self.text(&joined);
        *self.scratch = joined;
        written
    }
}

/// One JSON Lines object (answers nested, canonical orientation), borrowing from the
/// row: nothing of it is copied on the way out. Its keys are written in the order
/// below, which is alphabetical, as they came out when it was built as a JSON map.
#[derive(Serialize)]
pub struct JsonRecord<'a> {
    answers: verdict_core::rubric::Parts<'a>,
    batch: &'a str,
    counts_in_metrics: bool,
    created_at: DateTime<Utc>,
    evidence: Option<&'a Evidence>,
    external_id: &'a str,
    gold: bool,
    gold_grade: Option<&'a verdict_core::gold::Grade>,
    /// A judge's rating: the run it came from.
    judge_run: Option<uuid::Uuid>,
    model_a: Option<&'a str>,
    model_b: Option<&'a str>,
    note: Option<&'a str>,
    outcome: Outcome,
    rater: &'a str,
    rater_kind: verdict_core::lifecycle::RaterKind,
    rating_id: uuid::Uuid,
    review_comment: Option<&'a str>,
    review_field_comments: &'a std::collections::BTreeMap<String, String>,
    review_first: bool,
    reviewed_at: Option<DateTime<Utc>>,
    rubric: &'a str,
    rubric_version: i32,
    skip_reason: Option<SkipReason>,
    /// Of an earlier version of its task, since corrected: not in the metrics.
    stale: bool,
    status: Status,
    submitted_at: Option<DateTime<Utc>>,
    swapped: bool,
    time_spent_s: i32,
    version: i32,
    warnings: &'a [String],
    /// Its task withdrawn: not in the metrics while it is.
    withdrawn: bool,
}

/// The JSON Lines object of a row; `version` is the rubric's the batch pinned.
pub fn json_record<'a>(rubric: &'a Rubric, version: i32, row: &'a ExportRow) -> JsonRecord<'a> {
    JsonRecord {
        answers: rubric.parts(&row.answers.0),
        batch: &row.batch,
        counts_in_metrics: row.counts_in_metrics(),
        created_at: row.created_at,
        evidence: row.evidence.as_ref().map(|e| &e.0),
        external_id: &row.external_id,
        gold: row.gold,
        gold_grade: row.gold_grade.as_ref().map(|g| &g.0),
        judge_run: row.judge_run,
        model_a: row.model_a.as_deref(),
        model_b: row.model_b.as_deref(),
        note: row.note.as_deref(),
        outcome: row.outcome,
        rater: &row.rater,
        rater_kind: row.rater_kind,
        rating_id: row.rating_id,
        review_comment: row.review_comment.as_deref(),
        review_field_comments: &row.review_fields.0,
        review_first: row.review_first,
        reviewed_at: row.reviewed_at,
        rubric: &rubric.name,
        rubric_version: version,
        skip_reason: row.skip_reason.clone(),
        stale: row.stale,
        status: row.status,
        submitted_at: row.submitted_at,
        swapped: row.swapped,
        time_spent_s: row.time_spent_s,
        version: row.version,
        warnings: &row.confirmed_warnings.0,
        withdrawn: row.withdrawn,
    }
}

/// Rows gathered into one chunk of output before it is handed on.
const ROWS_PER_CHUNK: usize = 256;

/// What to export: a batch's ratings under its rubric (and the version it was rated
/// under), in a format, those the filter selects.
pub struct Export<'a> {
    pub batch_id: uuid::Uuid,
    pub rubric: Arc<Rubric>,
    pub rubric_version: i32,
    pub format: Format,
    pub filter: &'a ExportFilter,
}

/// Sends a batch's export to `out` in chunks (the CSV header first). Returns how many
/// rows were written; stops early if the receiver goes away. `fault_after` stops it with
/// an error after that many rows (the tests' way to break an export part way).
pub async fn write(
    store: &Store,
    export: Export<'_>,
    fault_after: Option<u64>,
    out: tokio::sync::mpsc::Sender<Vec<u8>>,
) -> AppResult<u64> {
    let Export {
        batch_id,
        rubric,
        rubric_version,
        format,
        filter,
    } = export;
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    if format == Format::Csv {
        let mut header = csv::Writer::from_writer(Vec::new());
        header
            .write_record(columns(&rubric))
            .map_err(AppError::internal)?;
        buffer.extend(header.into_inner().map_err(AppError::internal)?);
    }
    let mut pending = 0usize;
    let mut faulted = false;
    // One CSV writer per chunk, not per row (each keeps a buffer of its own).
    let csv_writer = || {
        csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::with_capacity(64 * 1024))
    };
    let mut rows_csv = csv_writer();
    let mut records = CsvRecords::new(&rubric, rubric_version);
    let each = |row: ExportRow| {
        if faulted || fault_after.is_some_and(|n| pending as u64 >= n) {
            faulted = true;
            return None;
        }
        // Writing into memory cannot fail.
        match format {
            Format::Csv => {
                let _ = records.write(&mut rows_csv, &row);
            }
            Format::Jsonl => {
                let record = json_record(&rubric, rubric_version, &row);
                let _ = serde_json::to_writer(&mut buffer, &record);
                buffer.push(b'\n');
            }
        }
        pending += 1;
        (pending % ROWS_PER_CHUNK == 0).then(|| {
            let written = std::mem::replace(&mut rows_csv, csv_writer());
            buffer.extend(written.into_inner().unwrap_or_default());
            std::mem::take(&mut buffer)
        })
    };
    let rows = store.export_rows(batch_id, filter, each, &out).await?;
    if faulted {
        return Err(AppError::internal(
            "export stopped by the configured test fault",
        ));
    }
    buffer.extend(rows_csv.into_inner().unwrap_or_default());
    if !buffer.is_empty() {
        let _ = out.send(buffer).await;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_rfc_3339() {
        use chrono::TimeZone;
        let second = Utc.with_ymd_and_hms(2026, 11, 29, 5, 6, 7).unwrap();
        for nanos in [0, 120_000_000, 123_456_000, 123_456_789, 1] {
            let t = second + chrono::Duration::nanoseconds(nanos);
            assert_eq!(t.format(STAMP).to_string(), t.to_rfc3339(), "{nanos}");
            assert_eq!(
                t.format_with_items(STAMP_ITEMS.iter()).to_string(),
                t.to_rfc3339(),
                "{nanos}"
            );
        }
    }

    #[test]
    fn formula_cells_are_neutralised() {
        for bad in ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\t=x"] {
            assert!(neutral(bad).starts_with('\''), "{bad:?}");
        }
        assert_eq!(neutral("plain text"), "plain text");
    }

    #[test]
    fn the_query_is_checked_field_by_field() {
        let bad = ExportQuery {
            format: Some("xlsx".into()),
            outcome: Some("maybe".into()),
            since: Some("yesterday".into()),
            ..ExportQuery::default()
        };
        let Err(AppError::Validation { fields, .. }) = parse(&bad) else {
            panic!("refused")
        };
        assert_eq!(fields.len(), 3, "{fields:?}");
        let good = ExportQuery {
            format: Some("jsonl".into()),
            since: Some("2026-11-01".into()),
            ..ExportQuery::default()
        };
        let (format, filter) = parse(&good).unwrap();
        assert_eq!(format, Format::Jsonl);
        assert_eq!(
            filter.submitted_since.unwrap().to_rfc3339(),
            "2026-11-01T00:00:00+00:00"
        );
    }

    /// The JSON Lines record is written field by field from the row; its keys must
    /// still come out as they did when it was built as a JSON map (sorted), so that
    /// exports stay byte for byte what they were.
    #[test]
    fn a_json_record_writes_its_keys_as_a_map_would() {
        let row = ExportRow {
            rating_id: uuid::Uuid::now_v7(),
            batch: "b".into(),
            external_id: "t1".into(),
            rater: "ana".into(),
            outcome: Outcome::Rated,
            status: Status::Submitted,
            swapped: true,
            model_a: Some("alpha".into()),
            model_b: None,
            answers: sqlx::types::Json(
                serde_json::from_str(r#"{"sxs": 3, "a": {"correctness": "no_issues"}}"#).unwrap(),
            ),
            skip_reason: None,
            note: Some("=1+1".into()),
            time_spent_s: 42,
            version: 2,
            created_at: Utc::now(),
            submitted_at: Some(Utc::now()),
            reviewed_at: None,
            review_comment: None,
            rater_kind: verdict_core::lifecycle::RaterKind::Human,
            confirmed_warnings: sqlx::types::Json(vec!["w1".into()]),
            evidence: None,
            review_fields: sqlx::types::Json(Default::default()),
            gold: false,
            gold_grade: None,
            review_first: false,
            withdrawn: false,
            stale: true,
            judge_run: None,
        };
        let rubric = verdict_core::rubric::by_name("blackhat").unwrap();
        let record = json_record(rubric, 1, &row);
        let written = serde_json::to_string(&record).unwrap();
        let as_map = serde_json::to_string(&serde_json::to_value(&record).unwrap()).unwrap();
        assert_eq!(written, as_map);
        let back: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(back["answers"]["sxs"], 3);
        assert_eq!(
            (back["rubric"].as_str(), back["rubric_version"].as_i64()),
            (Some("blackhat"), Some(1))
        );
        assert_eq!(back["model_b"], Value::Null);
        assert_eq!(
            back["note"], "=1+1",
            "JSON is not a spreadsheet: nothing is neutralised"
        );
    }

    #[test]
    fn columns_cover_every_answer_of_the_rubric() {
        let columns = columns(verdict_core::rubric::by_name("blackhat").unwrap());
        for c in [
            "rating_id",
            "counts_in_metrics",
            "a_executability",
            "a_executability_explanation",
            "b_correctness_explanation",
            "sxs",
            "sxs_explanation",
            "submitted_at",
            "review_comment",
        ] {
            assert!(columns.iter().any(|x| x == c), "{c}");
        }
    }
}
