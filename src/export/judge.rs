//! The judge export of a run (`GET /api/v1/judge-runs/{id}/export`): every answer of
//! every call, per question and per order, with its parse status, and what the orders
//! combine into ([`verdict_core::judge::export`]), as CSV or JSON Lines, streamed a page
//! of calls at a time. Each row names its run, and carries the lengths of the task's
//! responses: with the batch's export, every judge figure of the metrics can be worked
//! out again from the two files.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::{Format, neutral};
use crate::error::{AppError, AppResult};
use crate::store::Store;
use crate::store::judges::ExportCall;
use verdict_core::judge::FieldStatus;
use verdict_core::judge::export::{AnswerRow, Order, TaskCall, task_rows};
use verdict_core::lifecycle::CallStatus;
use verdict_core::rubric::Rubric;

/// The CSV columns, in order (the JSON Lines keys are the same).
pub const COLUMNS: [&str; 15] = [
    "judge_run",
    "judge",
    "batch",
    "external_id",
    "gold",
    "task_rated",
    "len_a",
    "len_b",
    "order",
    "call_status",
    "path",
    "path_shown",
    "status",
    "answer",
    "answer_shown",
];

/// Calls read from the database at a time.
const CALLS_PER_PAGE: i64 = 500;

/// What to export: one run, its judge's and batch's names, and the rubric it asked with.
pub struct JudgeExport {
    pub run_id: Uuid,
    pub judge: String,
    pub batch: String,
    pub rubric: Arc<Rubric>,
    pub min_explanation: usize,
    pub format: Format,
}

/// The task a row is about.
struct TaskFacts<'a> {
    external_id: &'a str,
    gold: bool,
    rated: bool,
    len_a: i64,
    len_b: i64,
}

/// One JSON Lines object, keys in the order of [`COLUMNS`].
#[derive(Serialize)]
struct JsonRow<'a> {
    judge_run: Uuid,
    judge: &'a str,
    batch: &'a str,
    external_id: &'a str,
    gold: bool,
    task_rated: bool,
    len_a: i64,
    len_b: i64,
    order: Order,
    call_status: Option<CallStatus>,
    path: &'a str,
    path_shown: &'a str,
    status: Option<&'a FieldStatus>,
    answer: Option<&'a Value>,
    answer_shown: Option<&'a Value>,
}

/// A value as a CSV cell: a text as it is (neutralised), anything else as JSON.
fn cell(value: Option<&Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::String(s)) => neutral(s),
        Some(other) => neutral(&other.to_string()),
    }
}

fn csv_record(export: &JudgeExport, task: &TaskFacts<'_>, row: &AnswerRow) -> [String; 15] {
    [
        export.run_id.to_string(),
        neutral(&export.judge),
        neutral(&export.batch),
        neutral(task.external_id),
        task.gold.to_string(),
        task.rated.to_string(),
        task.len_a.to_string(),
        task.len_b.to_string(),
        row.order.as_str().to_owned(),
        row.call_status.map_or("", CallStatus::as_str).to_owned(),
        neutral(&row.path),
        neutral(&row.path_shown),
        neutral(
            &row.status
                .as_ref()
                .map_or_else(String::new, ToString::to_string),
        ),
        cell(row.answer.as_ref()),
        cell(row.answer_shown.as_ref()),
    ]
}

/// Writes the rows of one task's calls into `buffer`; returns how many.
fn task(export: &JudgeExport, calls: &[ExportCall], buffer: &mut Vec<u8>) -> AppResult<u64> {
    let Some(first) = calls.first() else {
        return Ok(0);
    };
    let asked: Vec<TaskCall<'_>> = calls
        .iter()
        .map(|c| TaskCall {
            swapped: c.swapped,
            status: c.status,
            fields: &c.fields.0,
            answers: &c.answers.0,
        })
        .collect();
    let (rated, rows) = task_rows(&export.rubric, export.min_explanation, &asked);
    let facts = TaskFacts {
        external_id: &first.external_id,
        gold: first.gold,
        rated,
        len_a: first.len_a,
        len_b: first.len_b,
    };
    match export.format {
        Format::Csv => {
            let mut writer = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(std::mem::take(buffer));
            for row in &rows {
                writer
                    .write_record(csv_record(export, &facts, row))
                    .map_err(AppError::internal)?;
            }
            *buffer = writer.into_inner().map_err(AppError::internal)?;
        }
        Format::Jsonl => {
            for row in &rows {
                let json = JsonRow {
                    judge_run: export.run_id,
                    judge: &export.judge,
                    batch: &export.batch,
                    external_id: facts.external_id,
                    gold: facts.gold,
                    task_rated: facts.rated,
                    len_a: facts.len_a,
                    len_b: facts.len_b,
                    order: row.order,
                    call_status: row.call_status,
                    path: &row.path,
                    path_shown: &row.path_shown,
                    status: row.status.as_ref(),
                    answer: row.answer.as_ref(),
                    answer_shown: row.answer_shown.as_ref(),
                };
                serde_json::to_writer(&mut *buffer, &json).map_err(AppError::internal)?;
                buffer.push(b'\n');
            }
        }
    }
    Ok(rows.len() as u64)
}

/// Sends the run's export to `out` a page of calls at a time (the CSV header first);
/// returns how many rows were written, and stops early if the receiver goes away.
pub async fn write(
    store: &Store,
    export: JudgeExport,
    out: tokio::sync::mpsc::Sender<Vec<u8>>,
) -> AppResult<u64> {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    if export.format == Format::Csv {
        let mut header = csv::Writer::from_writer(Vec::new());
        header.write_record(COLUMNS).map_err(AppError::internal)?;
        buffer.extend(header.into_inner().map_err(AppError::internal)?);
    }
    let mut written = 0u64;
    let mut after = i64::MIN;
    loop {
        let page = store
            .export_calls(export.run_id, after, CALLS_PER_PAGE)
            .await?;
        let last_page = (page.len() as i64) < CALLS_PER_PAGE;
        // A page may end part way through a task's calls: the task at its end is read
        // again with the next page, unless this is the last.
        let groups: Vec<&[ExportCall]> = page.chunk_by(|x, y| x.seq == y.seq).collect();
        let whole = groups.len();
        for (i, calls) in groups.into_iter().enumerate() {
            // (A task has at most two calls, so a page always holds a whole one.)
            if !last_page && i + 1 == whole && i > 0 {
                break;
            }
            written += task(&export, calls, &mut buffer)?;
            after = calls[0].seq;
        }
        if !buffer.is_empty() && out.send(std::mem::take(&mut buffer)).await.is_err() {
            return Ok(written);
        }
        if last_page {
            return Ok(written);
        }
    }
}
