//! The lead's pages: the review queue, one rating with its history and the decision form,
//! and a task's ratings side by side.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::{Decision, QueueQuery, decide, reviewable};
use crate::auth::RequireLead;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult};
use crate::lifecycle::{Outcome, Status};
use crate::rubric::{Answers, Rubric, Slot};
use crate::services::rating::Access;
use crate::services::task;
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::store::review::QueueRow;
use crate::web::paging::PageLinks;
use crate::web::{ApiPath, ApiQuery, Layout, PageUser, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/review", get(queue))
        .route("/review/{id}", get(one).post(post_decision))
        .route("/batches/{id}/tasks/{external_id}", get(task))
}

#[derive(Template)]
#[template(path = "review/queue.html")]
struct QueuePage {
    layout: Layout,
    rows: Vec<QueueRow>,
    /// The batches the lead may pick from: (id, name, whether it is the one picked).
    batches: Vec<(Uuid, String, bool)>,
    pager: PageLinks,
}

async fn queue(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<QueueQuery>,
) -> AppResult<Response> {
    let (found, batch, limit) = super::queue(&state, &lead, &query).await?;
    let batches = state
        .store()
        .visible_batches(lead.id, lead.role)
        .await?
        .into_iter()
        .map(|b| (b.batch.id, b.batch.name, Some(b.batch.id) == batch))
        .collect();
    let keep: Vec<(&str, String)> = batch
        .map(|b| ("batch", b.to_string()))
        .into_iter()
        .collect();
    let pager = PageLinks::new(
        "/review",
        &keep,
        &found,
        ListKind::ReviewQueue,
        limit,
        query.cursor.is_none(),
    );
    Ok(render(&QueuePage {
        layout: page_user.layout,
        rows: found.items,
        batches,
        pager,
    })?
    .into_response())
}

/// A question's answer as shown to a lead: the option's label and the explanation.
pub struct Cell {
    pub value: String,
    pub why: String,
}

/// One question across several answer sets (the two responses, or several raters).
pub struct Row {
    pub label: String,
    pub cells: Vec<Cell>,
}

/// How a lead reads a stored answer: its value and, for an option, its label.
fn label_of(slot: &Slot<'_>, value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "—".into();
    };
    let raw = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let label = match slot {
        Slot::Asked { question, .. } => question.label_of(value),
        Slot::Derived(_) => None,
    };
    label.map_or(raw.clone(), |label| format!("{raw} · {label}"))
}

fn cell(slot: &Slot<'_>, answers: &Answers) -> Cell {
    let holder = slot.holder(answers);
    Cell {
        value: label_of(slot, slot.value(answers)),
        why: slot
            .explanation_key()
            .and_then(|key| holder.and_then(|h| h.get(&key)).and_then(Value::as_str))
            .unwrap_or("")
            .to_owned(),
    }
}

/// Rows of questions by columns of answer sets (canonical orientation).
pub fn rows(rubric: &Rubric, sets: &[&Answers]) -> Vec<Row> {
    let mut rows: Vec<Row> = rubric
        .slots()
        .iter()
        .map(|slot| Row {
            label: match slot.side() {
                Some(side) => format!("{} · {}", side.key().to_uppercase(), slot.label()),
                None => slot.label().to_owned(),
            },
            cells: sets.iter().map(|s| cell(slot, s)).collect(),
        })
        .collect();
    rows.push(Row {
        label: "Classifications".into(),
        cells: sets
            .iter()
            .map(|s| Cell {
                value: s
                    .get("classifications")
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "—".into()),
                why: String::new(),
            })
            .collect(),
    });
    rows
}

/// One entry of a rating's history, with what it changed.
pub struct Change {
    pub action: String,
    pub actor: String,
    pub at: String,
    /// `path: before → after` for each value that changed.
    pub changes: Vec<String>,
}

/// Every leaf of a JSON value by its dotted path.
fn leaves(prefix: &str, value: &Value, out: &mut std::collections::BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&path, v, out);
            }
        }
        Value::String(s) => {
            out.insert(prefix.to_owned(), s.clone());
        }
        Value::Null => {}
        other => {
            out.insert(prefix.to_owned(), other.to_string());
        }
    }
}

/// What changed between two snapshots of a rating (all of `after` for the first one).
pub fn changes(before: Option<&Value>, after: &Value) -> Vec<String> {
    let short = |s: &str| {
        if s.chars().count() > 60 {
            format!("{}…", s.chars().take(60).collect::<String>())
        } else {
            s.to_owned()
        }
    };
    let mut old = std::collections::BTreeMap::new();
    if let Some(before) = before {
        leaves("", before, &mut old);
    }
    let mut new = std::collections::BTreeMap::new();
    leaves("", after, &mut new);
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| *k != "version" && old.get(*k) != new.get(*k))
        .map(|k| match (old.get(k), new.get(k)) {
            (Some(o), Some(n)) => format!("{k}: {} → {}", short(o), short(n)),
            (None, Some(n)) => format!("{k}: {}", short(n)),
            (Some(o), None) => format!("{k}: {} → (none)", short(o)),
            (None, None) => unreachable!("a key from one of the maps"),
        })
        .collect()
}

#[derive(Template)]
#[template(path = "review/rating.html")]
struct ReviewPage {
    layout: Layout,
    rating_id: Uuid,
    batch_id: Uuid,
    batch_name: String,
    external_id: String,
    rater: String,
    outcome: Outcome,
    status: Status,
    note: Option<String>,
    version: i32,
    swapped: bool,
    time_spent_s: i32,
    review_comment: Option<String>,
    rows: Vec<Row>,
    history: Vec<Change>,
    /// Sanitised HTML (see `render`), canonical orientation.
    prompt_html: String,
    a_html: String,
    b_html: String,
    error: Option<String>,
}

async fn review_page(
    state: &AppState,
    access: &Access,
    layout: Layout,
    error: Option<String>,
) -> AppResult<ReviewPage> {
    let (task, rendered) = task::with_html(state.store(), access.rating.task_id).await?;
    let rater = state
        .store()
        .user_by_id(access.rating.rater_id)
        .await?
        .map(|u| u.username)
        .unwrap_or_default();
    let history = state
        .store()
        .rating_history(access.rating.id)
        .await?
        .into_iter()
        .map(|(action, actor, at, before, after)| Change {
            action,
            actor: actor.unwrap_or_else(|| "—".into()),
            at: at.format("%Y-%m-%d %H:%M").to_string(),
            changes: changes(before.as_ref().map(|b| &b.0), &after.0),
        })
        .collect();
    let r = &access.rating;
    Ok(ReviewPage {
        layout,
        rating_id: r.id,
        batch_id: access.batch.id,
        batch_name: access.batch.name.clone(),
        external_id: task.external_id,
        rater,
        outcome: r.outcome,
        status: r.status,
        note: r.note.clone(),
        version: r.version,
        swapped: access.assignment.swapped,
        time_spent_s: r.time_spent_s,
        review_comment: r.review_comment.clone(),
        rows: rows(&access.rubric, &[&r.answers.0]),
        history,
        prompt_html: rendered.prompt,
        a_html: rendered.response_a,
        b_html: rendered.response_b,
        error,
    })
}

async fn one(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let access = reviewable(&state, id, &lead).await?;
    Ok(render(&review_page(&state, &access, page_user.layout, None).await?)?.into_response())
}

#[derive(Deserialize)]
struct DecisionForm {
    #[serde(default)]
    decision: String,
    comment: Option<String>,
    version: i32,
}

async fn post_decision(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<DecisionForm>,
) -> AppResult<Response> {
    let access = reviewable(&state, id, &lead).await?;
    let decision = Decision {
        decision: form.decision,
        comment: form.comment,
        version: form.version,
    };
    match decide(&state, &access, &lead, &decision).await {
        Ok(_) => Ok(Redirect::to("/review").into_response()),
        Err(err @ (AppError::Conflict(_) | AppError::Validation { .. })) => {
            let status = err.status();
            let message = match &err {
                AppError::Validation { fields, .. } => fields
                    .iter()
                    .map(|(f, why)| format!("{f} {why}"))
                    .collect::<Vec<_>>()
                    .join("; "),
                other => other.to_string(),
            };
            let fresh = reviewable(&state, id, &lead).await?;
            let page = review_page(&state, &fresh, page_user.layout, Some(message)).await?;
            Ok((status, render(&page)?).into_response())
        }
        Err(other) => Err(other),
    }
}

#[derive(Template)]
#[template(path = "review/task.html")]
struct TaskPage {
    layout: Layout,
    batch_id: Uuid,
    batch_name: String,
    external_id: String,
    raters: Vec<(Uuid, String, String, Status, bool)>,
    rows: Vec<Row>,
    /// Sanitised HTML (see `render`), canonical orientation.
    prompt_html: String,
    a_html: String,
    b_html: String,
}

/// `GET /batches/{id}/tasks/{external_id}`: every rater's answers side by side.
async fn task(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
) -> AppResult<Response> {
    let (summary, rubric, task_id, ratings) =
        super::task_ratings(&state, &lead, batch_id, &external_id).await?;
    let (_, rendered) = task::with_html(state.store(), task_id).await?;
    let sets: Vec<&Answers> = ratings.iter().map(|r| &r.answers.0).collect();
    let rows = rows(&rubric, &sets);
    let raters = ratings
        .iter()
        .map(|r| {
            let counts = crate::lifecycle::counts_in_metrics(r.outcome, r.status);
            (
                r.rating_id,
                r.rater.clone(),
                r.outcome.label(),
                r.status,
                counts,
            )
        })
        .collect();
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
    };
    Ok(render(&page)?.into_response())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::changes;

    #[test]
    fn changes_list_what_differs() {
        let before = json!({"status": "submitted", "answers": {"sxs": 2, "a": {"correctness": "no_issues"}}, "version": 1});
        let after = json!({"status": "returned", "answers": {"sxs": 2, "a": {"correctness": "minor_issues"}}, "version": 2});
        assert_eq!(
            changes(Some(&before), &after),
            vec![
                "answers.a.correctness: no_issues → minor_issues".to_owned(),
                "status: submitted → returned".to_owned(),
            ]
        );
        assert_eq!(
            changes(None, &json!({"status": "submitted"})),
            vec!["status: submitted".to_owned()]
        );
    }
}
