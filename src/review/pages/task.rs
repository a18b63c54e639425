//! A task's ratings side by side: every rater's answers, and each LLM judge's beside
//! them.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::error::AppResult;
use crate::review::table::{self, Column, Row, rows};
use crate::review::{self, JudgeOnTask};
use crate::services::task;
use crate::state::AppState;
use crate::web::{ApiPath, Layout, render};
use verdict_core::lifecycle::Status;

/// One rater's column of the side-by-side view.
pub struct RaterColumn {
    pub rating_id: Uuid,
    pub rater: String,
    pub outcome: String,
    pub status: Status,
    pub counts: bool,
    pub swapped: bool,
    /// Of an earlier version of the task, since corrected.
    pub stale: bool,
}

impl RaterColumn {
    /// The column of rating `r`.
    pub fn of(r: &crate::store::review::TaskRating) -> Self {
        Self {
            rating_id: r.rating_id,
            rater: r.rater.clone(),
            outcome: r.outcome.label(),
            status: r.status,
            counts: r.counts_in_metrics(),
            swapped: r.swapped,
            stale: r.stale,
        }
    }
}

#[derive(Template)]
#[template(path = "review/task.html")]
struct TaskPage {
    layout: Layout,
    batch_id: Uuid,
    batch_name: String,
    external_id: String,
    raters: Vec<RaterColumn>,
    rows: Vec<Row>,
    /// Sanitised HTML (see `render`), canonical orientation.
    prompt_html: String,
    a_html: String,
    b_html: String,
    /// Each LLM judge's answer beside the raters'.
    judges: Vec<JudgeColumn>,
}

/// A judge's answer to the task as the side-by-side page shows it.
struct JudgeColumn {
    judge: String,
    complete: bool,
    /// Per question: its label, then the answer's (or why it was not read), and its
    /// explanation.
    rows: Vec<(String, String, String)>,
    /// Each call: the order asked, its status, and its raw output or error.
    calls: Vec<(String, String, String)>,
}

impl JudgeColumn {
    fn new(rubric: &verdict_core::rubric::Rubric, judge: JudgeOnTask) -> Self {
        let rows = rubric
            .slots()
            .iter()
            .map(|slot| {
                let label = table::row_label(slot);
                match judge.fields.get(&slot.path()) {
                    Some(status) if status.is_parsed() => {
                        let cell = table::cell(slot, &judge.answers);
                        (label, cell.value, cell.why)
                    }
                    Some(status) => (label, format!("not read: {status}"), String::new()),
                    None => (label, "—".into(), String::new()),
                }
            })
            .collect();
        let calls = judge
            .calls
            .into_iter()
            .map(|c| {
                let order = if c.swapped { "B first" } else { "A first" };
                let shown = c
                    .raw_output
                    .or(c.error.map(|e| format!("error: {e}")))
                    .unwrap_or_default();
                (order.to_owned(), c.status.label(), shown)
            })
            .collect();
        Self {
            judge: judge.judge,
            complete: judge.complete,
            rows,
            calls,
        }
    }
}

/// `GET /batches/{id}/tasks/{external_id}`: every rater's answers side by side.
pub(super) async fn task(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
) -> AppResult<Response> {
    let (summary, rubric, task_id, ratings) =
        review::task_ratings(&state, &lead, batch_id, &external_id).await?;
    let (_, rendered) = task::with_html(state.store(), task_id).await?;
    let judges = review::task_judges(&state, &summary.batch, &rubric, task_id)
        .await?
        .into_iter()
        .map(|j| JudgeColumn::new(&rubric, j))
        .collect();
    let columns: Vec<Column<'_>> = ratings
        .iter()
        .map(|r| Column::task(&r.answers.0, r.swapped))
        .collect();
    let rows = rows(&rubric, &summary.batch.classifications, &columns);
    let raters = ratings.iter().map(RaterColumn::of).collect();
    let page = TaskPage {
        layout: page_user.layout,
        batch_id,
        batch_name: summary.batch.name,
        external_id,
        raters,
        rows,
        prompt_html: rendered.prompt,
        a_html: rendered.response_a,
        b_html: rendered.response_b,
        judges,
    };
    Ok(render(&page)?.into_response())
}
