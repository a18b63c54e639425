//! One rating for review: its answers, history and evidence, in the task's own order or
//! as the rater saw it, and the decision form.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::Value;
use tower_sessions::Session;
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult};
use crate::review::table::{Column, Row, rows};
use crate::review::{self, QueueQuery, reviewable};
use crate::services::rating::Access;
use crate::services::review::{ReviewRequest, decide};
use crate::services::task;
use crate::state::AppState;
use crate::web::notice::{self, Notice};
use crate::web::{ApiPath, Layout, render};
use verdict_core::evidence::Evidence;
use verdict_core::lifecycle::{Decision, Outcome, Status};
use verdict_core::rubric::{Side, Subject};

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

/// Which orientation the review page shows a rating in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// As the rater saw it: A is the response shown first.
    Shown,
    /// The task's own order: A is the task's response A, as stored, exported and shown
    /// in every other lead view (the default).
    Canonical,
}

/// The review page's own parameters beside the queue's filters it carries: `view`.
/// Anything else must be a filter of the queue (refused otherwise, as on the queue).
fn review_query(raw: Option<&str>) -> AppResult<(View, QueueQuery)> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    let mut view = View::Canonical;
    let mut rest = Vec::new();
    for (name, value) in pairs {
        if name == "view" {
            view = match value.as_str() {
                "shown" => View::Shown,
                "canonical" => View::Canonical,
                _ => return Err(AppError::field("view", "must be shown or canonical")),
            };
        } else {
            rest.push((name, value));
        }
    }
    let text = serde_urlencoded::to_string(&rest).unwrap_or_default();
    let query: QueueQuery =
        serde_urlencoded::from_str(&text).map_err(|e| AppError::BadRequest(e.to_string()))?;
    Ok((view, query))
}

/// A link to `path` with the queue's filters `carry` and more parameters.
fn href(path: &str, carry: &str, more: &[(&str, &str)]) -> String {
    let extra = serde_urlencoded::to_string(more).unwrap_or_default();
    let query: Vec<&str> = [carry, extra.as_str()]
        .into_iter()
        .filter(|q| !q.is_empty())
        .collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

#[derive(Template)]
#[template(path = "review/rating.html")]
struct ReviewPage {
    layout: Layout,
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
    /// Sanitised HTML (see `render`), in the orientation of `view`.
    prompt_html: String,
    a_html: String,
    b_html: String,
    error: Option<String>,
    view: View,
    /// Where the decision form posts: the rating's address with the queue's filters.
    action: String,
    /// The filtered queue, and this page in the other orientation.
    queue_href: String,
    other_view_href: String,
    /// Whether the rubric judges a pair (only then is there an orientation to choose).
    pair: bool,
    /// The rubric's guidelines, as sanitised HTML, to check the answers against.
    instructions_html: String,
    can_decide: bool,
    /// The rubric's warnings the answers met, which the rater confirmed (messages).
    confirmed_warnings: Vec<String>,
    /// A rating of a gold task: how it did, in words.
    gold: Option<String>,
    /// Held for review first.
    review_first: bool,
    /// What ran of each response in the rater's browser, and the runs they attached,
    /// in the orientation of `view`.
    code_runs: Vec<(String, String)>,
    attachments: Vec<AttachmentView>,
    /// The answers a lead may comment on, in the orientation of `view`, with the last
    /// review's comment on each, beside the row of the answer they are on.
    row_comments: Vec<Vec<CommentField>>,
    /// Those of answers with no row (none was given), after the table.
    other_comments: Vec<CommentField>,
}

impl ReviewPage {
    fn has_other_comments(&self) -> bool {
        self.other_comments.iter().any(|f| !f.comment.is_empty())
    }

    /// The comment boxes of row `i` (none past the rows).
    fn comments_of(&self, i: &usize) -> &[CommentField] {
        self.row_comments.get(*i).map_or(&[], Vec::as_slice)
    }
}

/// The comment boxes of each row of `rows`: on its answer and on that answer's
/// explanation (the classifications' row takes those of the classifications). A row of a
/// rating shown turned reads the other response's answers, whose comments it takes. The
/// boxes of answers without a row come last.
fn comments_by_row(
    rows: &[Row],
    mut fields: Vec<CommentField>,
    turned: bool,
) -> (Vec<Vec<CommentField>>, Vec<CommentField>) {
    let canonical = |path: &str| -> String {
        match (turned, path.split_once('.')) {
            (true, Some(("a", rest))) => format!("b.{rest}"),
            (true, Some(("b", rest))) => format!("a.{rest}"),
            _ => path.to_owned(),
        }
    };
    let by_row = rows
        .iter()
        .map(|row| {
            let names: Vec<String> = match &row.path {
                Some(path) => {
                    let path = canonical(path);
                    vec![
                        format!("field_comment.{path}"),
                        format!("field_comment.{path}_explanation"),
                    ]
                }
                None => fields
                    .iter()
                    .filter(|f| f.name.starts_with("field_comment.classifications."))
                    .map(|f| f.name.clone())
                    .collect(),
            };
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut fields)
                .into_iter()
                .partition(|f| names.contains(&f.name));
            fields = rest;
            mine
        })
        .collect();
    (by_row, fields)
}

/// A run the rater attached to the rating.
pub struct AttachmentView {
    pub title: String,
    /// A run of the rater's edited copy of the block, not of the response's code.
    pub edited: bool,
    pub status: String,
    pub code: String,
    pub stdout: String,
    pub stderr: String,
}

/// A box for a comment on one answer: the form field carries its canonical path.
pub struct CommentField {
    pub name: String,
    pub label: String,
    pub comment: String,
}

/// Names a response as the view shows it: `a` of a rating shown turned is "B".
fn shown_side(side: Side, turned: bool) -> &'static str {
    match (side, turned) {
        (Side::A, false) | (Side::B, true) => "A",
        _ => "B",
    }
}

fn evidence_views(
    evidence: Option<&Evidence>,
    pair: bool,
    turned: bool,
) -> (Vec<(String, String)>, Vec<AttachmentView>) {
    let Some(evidence) = evidence else {
        return (vec![], vec![]);
    };
    let name = |side: Side| {
        if pair {
            format!("Response {}", shown_side(side, turned))
        } else {
            "The response".to_owned()
        }
    };
    let mut runs: Vec<(String, String)> = [Side::A, Side::B]
        .into_iter()
        .map(|side| (name(side), evidence.tally(side)))
        .filter(|(_, tally)| tally.ran > 0)
        .map(|(who, tally)| (who, tally.words()))
        .collect();
    runs.sort();
    let attachments = evidence
        .attachments
        .iter()
        .map(|a| AttachmentView {
            title: format!("{}, block {} ({})", name(a.side), a.block, a.language),
            edited: a.edited,
            status: match (a.exit_code, a.duration_ms) {
                (Some(code), Some(ms)) => format!("{}, exit {code}, {ms} ms", a.status.label()),
                (Some(code), None) => format!("{}, exit {code}", a.status.label()),
                (None, Some(ms)) => format!("{}, {ms} ms", a.status.label()),
                (None, None) => a.status.label().to_owned(),
            },
            code: a.code.clone(),
            stdout: a.stdout.clone(),
            stderr: a.stderr.clone(),
        })
        .collect();
    (runs, attachments)
}

fn comment_fields(access: &Access, turned: bool) -> Vec<CommentField> {
    let given = &access.rating.review_fields;
    review::commentable(access)
        .into_iter()
        .map(|c| {
            let label = match c.side {
                Some(side) => {
                    let side = if side == "a" { Side::A } else { Side::B };
                    format!("{} · {}", shown_side(side, turned), c.label)
                }
                None => c.label,
            };
            CommentField {
                comment: given.get(&c.path).cloned().unwrap_or_default(),
                name: format!("field_comment.{}", c.path),
                label,
            }
        })
        .collect()
}

async fn review_page(
    state: &AppState,
    access: &Access,
    layout: Layout,
    error: Option<String>,
    view: View,
    carry: &str,
) -> AppResult<ReviewPage> {
    let (task, rendered) = task::with_html(state.store(), access.rating.task_id).await?;
    let rater = rater_name(state, access).await?;
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
    let swapped = access.assignment.swapped;
    let pair = access.rubric.subject == Subject::Pair;
    let turned = view == View::Shown && swapped && pair;
    let shown;
    let column = if turned {
        shown = r.answers.clone().into_shown(&access.rubric, true);
        Column::shown(&shown)
    } else {
        Column::task(&r.answers, swapped)
    };
    let prompt_html = rendered.prompt.clone();
    let (a_html, b_html) = rendered.responses(turned);
    let table_rows = rows(&access.rubric, &access.batch.classifications, &[column]);
    let (row_comments, other_comments) =
        comments_by_row(&table_rows, comment_fields(access, turned), turned);
    let (code_runs, attachments) = evidence_views(r.evidence.as_ref(), pair, turned);
    let path = format!("/review/{}", r.id);
    let other = match view {
        View::Shown => "canonical",
        View::Canonical => "shown",
    };
    Ok(ReviewPage {
        layout,
        batch_id: access.batch.id,
        batch_name: access.batch.name.clone(),
        external_id: task.external_id,
        rater,
        outcome: r.outcome,
        status: r.status,
        note: r.note.clone(),
        version: r.version,
        swapped,
        time_spent_s: r.time_spent_s,
        review_comment: r.review_comment.clone(),
        rows: table_rows,
        row_comments,
        other_comments,
        history,
        prompt_html,
        a_html,
        b_html,
        error,
        view,
        action: href(&path, carry, &[]),
        queue_href: href("/review", carry, &[]),
        other_view_href: href(&path, carry, &[("view", other)]),
        pair,
        instructions_html: verdict_core::render::markdown_kept(&access.rubric.instructions),
        can_decide: r.can_review(),
        confirmed_warnings: r
            .confirmed_warnings
            .iter()
            .map(|id| match access.rubric.warning(id) {
                Some(w) => w.message.clone(),
                None => format!("{id} (no longer in the rubric)"),
            })
            .collect(),
        gold: r.gold_grade.as_ref().map(gold_words),
        review_first: r.review_first,
        code_runs,
        attachments,
    })
}

pub(super) async fn one(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    RawQuery(raw): RawQuery,
) -> AppResult<Response> {
    let (view, query) = review_query(raw.as_deref())?;
    let filters = review::filters(&state, &lead, query.filter_text()).await?;
    let access = reviewable(&state, id, &lead).await?;
    let page = review_page(
        &state,
        &access,
        page_user.layout,
        None,
        view,
        &filters.query_string(),
    )
    .await?;
    Ok(render(&page)?.into_response())
}

/// The decision form's fields: `decision`, `comment`, `version`, and a
/// `field_comment.<path>` box per answer. Read as pairs because the per-answer boxes
/// are not known to a struct.
fn decision_of(pairs: Vec<(String, String)>) -> AppResult<ReviewRequest> {
    let mut decision = ReviewRequest {
        decision: String::new(),
        comment: None,
        field_comments: Default::default(),
        version: 0,
    };
    if !pairs.iter().any(|(key, _)| key == "version") {
        return Err(AppError::BadRequest(
            "the form lacks the rating's version: reload the rating and decide again".into(),
        ));
    }
    for (key, value) in pairs {
        match key.as_str() {
            "decision" => decision.decision = value,
            "comment" => decision.comment = Some(value),
            "version" => {
                decision.version = value
                    .trim()
                    .parse()
                    .map_err(|_| AppError::BadRequest("version must be a whole number".into()))?;
            }
            _ => {
                if let Some(path) = key.strip_prefix("field_comment.") {
                    decision.field_comments.insert(path.to_owned(), value);
                }
            }
        }
    }
    Ok(decision)
}

/// The username of the rating's rater (empty once the account is gone).
async fn rater_name(state: &AppState, access: &Access) -> AppResult<String> {
    Ok(state
        .store()
        .user_by_id(access.rating.rater_id)
        .await?
        .map(|u| u.username)
        .unwrap_or_default())
}

/// What the lead's next page says of the decision just recorded, with the way back to
/// the rating.
async fn decided_notice(
    state: &AppState,
    access: &Access,
    decision: &str,
    carry: &str,
) -> AppResult<Notice> {
    let task = state
        .store()
        .task(access.rating.task_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let rater = rater_name(state, access).await?;
    let whose = format!("{rater}'s rating of task {}", task.external_id);
    let text = match decision.parse::<Decision>() {
        Ok(Decision::Accept) => format!("Accepted {whose}."),
        Ok(Decision::Return) => format!("Returned {whose}, with your comment."),
        Ok(Decision::Reject) => format!("Rejected {whose}: the task goes to another rater."),
        // Recorded, so one of those; said plainly all the same.
        Err(_) => format!("Recorded your decision on {whose}."),
    };
    let back = href(&format!("/review/{}", access.rating.id), carry, &[]);
    Ok(Notice::new(text).link(back, "Open it"))
}

/// Records a decision, then goes on to the next rating waiting under the queue's
/// filters the form carries in its address (or back to the queue when none is left).
pub(super) async fn post_decision(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    RawQuery(raw): RawQuery,
    session: Session,
    CsrfForm(pairs): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    let (view, query) = review_query(raw.as_deref())?;
    let filters = review::filters(&state, &lead, query.filter_text()).await?;
    let carry = filters.query_string();
    let access = reviewable(&state, id, &lead).await?;
    let decision = decision_of(pairs)?;
    let decided = decide(state.store(), &access, &lead, &decision).await;
    match decided.map_err(AppError::from) {
        Ok(_) => {
            // The decision is recorded: a notice that cannot be worded or kept is logged.
            let said = decided_notice(&state, &access, &decision.decision, &carry).await;
            if let Err(err) = match said {
                Ok(said) => notice::set(&session, said).await,
                Err(err) => Err(err),
            } {
                tracing::warn!(%err, "could not keep the notice of a decision");
            }
            let next =
                review::next_after(&state, &lead, &filters, id, access.rating.submitted_at).await?;
            let to = match next {
                Some(next) => href(&format!("/review/{next}"), &carry, &[]),
                None => href("/review", &carry, &[]),
            };
            Ok(Redirect::to(&to).into_response())
        }
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
            let page = review_page(
                &state,
                &fresh,
                page_user.layout,
                Some(message),
                view,
                &carry,
            )
            .await?;
            Ok((status, render(&page)?).into_response())
        }
        Err(other) => Err(other),
    }
}

/// A gold grade in words: `2 of 3 expected answers right; wrong: sxs` (paths in the
/// task's own A/B order).
fn gold_words(grade: &verdict_core::gold::Grade) -> String {
    let mut words = format!(
        "{} of {} expected answers right",
        grade.right, grade.expected
    );
    if !grade.wrong.is_empty() {
        words.push_str(&format!(
            "; wrong: {} (in the task's own A/B order)",
            grade.wrong.join(", ")
        ));
    }
    words
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{View, changes, review_query};

    #[test]
    fn the_review_page_takes_a_view_beside_the_queue_filters() {
        let (view, query) = review_query(Some("rater=r1&view=shown")).unwrap();
        assert_eq!((view, query.rater.as_deref()), (View::Shown, Some("r1")));
        let (view, _) = review_query(None).unwrap();
        assert_eq!(view, View::Canonical, "the task's own order unless asked");
        assert!(review_query(Some("view=sideways")).is_err());
        assert!(review_query(Some("colour=red")).is_err());
    }

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
