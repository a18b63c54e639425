//! The review queue: its filters, checked once for the page and the API, the ratings
//! they keep (the store's selection, then the rubric's own filters), a page of them with
//! the total, and the rating a lead goes on to after a decision.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::disagreement::{self, Preview};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::page::{Cursor, ListKind, Page};
use crate::store::review::{Peer, QueueFilter, QueueRow, WarningFilter};
use crate::web::paging::params;
use verdict_core::lifecycle::{Outcome, Status};
use verdict_core::rubric::{Answers, Rubric, Slot};
use verdict_core::user::User;

/// Which part of the review queue to read, a page at a time (the page `/review` and
/// `GET /api/v1/review` take the same parameters). Every filter is optional; a bad
/// value is a 422 naming its parameter.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// Only this batch (its id).
    pub batch: Option<String>,
    /// Only this rater's ratings (their username).
    pub rater: Option<String>,
    /// Only this outcome: `rated` or `out_of_scope` (skips are never reviewed).
    pub outcome: Option<String>,
    /// `submitted` (the default: the ratings waiting for a decision), or `accepted`,
    /// `returned` or `rejected` to browse decided ones.
    pub status: Option<String>,
    /// With `answer`: only ratings whose answer at this path has that value, e.g. `sxs`
    /// or `a.correctness`. Checked against the batch's rubric when `batch` is given.
    pub question: Option<String>,
    /// The stored value `question` must have, e.g. `2` or `major_issues`.
    pub answer: Option<String>,
    /// `true`: only ratings that disagree with the other counted ratings of their task:
    /// for some preference or score question, more than 1 point from their median (a
    /// scale or score), or not the option most of them chose (options).
    pub disagrees: Option<String>,
    /// Only ratings whose rater confirmed this consistency warning of the rubric (its
    /// id, e.g. `prefers-a-despite-major-issues`), or `any` warning.
    pub warning: Option<String>,
    /// `true`: only ratings held for review first (their rater's gold accuracy was
    /// below the batch's threshold when they were sent).
    pub review_first: Option<String>,
    /// `next_cursor` of the previous page; absent for the oldest ratings.
    pub cursor: Option<String>,
    /// Ratings per page, oldest first (default 50, at most 200).
    pub limit: Option<i64>,
}

impl QueueQuery {
    /// Its filters, as sent.
    pub fn filter_text(&self) -> FilterText<'_> {
        FilterText {
            batch: self.batch.as_deref(),
            rater: self.rater.as_deref(),
            outcome: self.outcome.as_deref(),
            status: self.status.as_deref(),
            question: self.question.as_deref(),
            answer: self.answer.as_deref(),
            disagrees: self.disagrees.as_deref(),
            warning: self.warning.as_deref(),
            review_first: self.review_first.as_deref(),
        }
    }
}

/// The queue's filters as sent, from a query string or a JSON body.
#[derive(Debug, Default, Clone, Copy)]
pub struct FilterText<'a> {
    pub batch: Option<&'a str>,
    pub rater: Option<&'a str>,
    pub outcome: Option<&'a str>,
    pub status: Option<&'a str>,
    pub question: Option<&'a str>,
    pub answer: Option<&'a str>,
    pub disagrees: Option<&'a str>,
    pub warning: Option<&'a str>,
    pub review_first: Option<&'a str>,
}

/// The queue's filters, checked.
#[derive(Debug, Clone)]
pub struct Filters {
    /// What the database selects.
    pub store: QueueFilter,
    /// An answer's path and the stored value it must have, as text.
    pub answer: Option<(String, String)>,
    /// Only ratings that disagree with the others of their task.
    pub disagrees: bool,
}

impl Filters {
    /// The filters as query parameters, for links and forms that keep them (the default
    /// status left out).
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        if let Some(batch) = self.store.batch {
            pairs.push(("batch", batch.to_string()));
        }
        if let Some(rater) = &self.store.rater {
            pairs.push(("rater", rater.clone()));
        }
        if let Some(outcome) = self.store.outcome {
            pairs.push(("outcome", outcome.as_str().to_owned()));
        }
        if self.store.status != Status::Submitted {
            pairs.push(("status", self.store.status.as_str().to_owned()));
        }
        if let Some((question, answer)) = &self.answer {
            pairs.push(("question", question.clone()));
            pairs.push(("answer", answer.clone()));
        }
        if self.disagrees {
            pairs.push(("disagrees", "true".into()));
        }
        if self.store.review_first {
            pairs.push(("review_first", "true".into()));
        }
        match &self.store.warning {
            Some(WarningFilter::Any) => pairs.push(("warning", "any".into())),
            Some(WarningFilter::Id(id)) => pairs.push(("warning", id.clone())),
            None => {}
        }
        pairs
    }

    /// Whether the database applies every filter alone (no answer, no disagreement), so
    /// a page is read by keyset in SQL.
    pub fn in_database(&self) -> bool {
        self.answer.is_none() && !self.disagrees
    }

    /// [`Filters::pairs`] as a query string (empty without filters).
    pub fn query_string(&self) -> String {
        serde_urlencoded::to_string(self.pairs()).unwrap_or_default()
    }
}

/// A 422 naming every broken filter, its message naming them too (a page shows only
/// the message).
fn refused(fields: crate::error::FieldErrors) -> AppError {
    let message = fields
        .iter()
        .map(|(field, why)| format!("{field} {why}"))
        .collect::<Vec<_>>()
        .join("; ");
    AppError::Validation { message, fields }
}

/// Whether `text` could be an answer's path: a key, or a side and a key (`a.correctness`).
fn is_answer_path(text: &str) -> bool {
    let key = text
        .strip_prefix("a.")
        .or_else(|| text.strip_prefix("b."))
        .unwrap_or(text);
    !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A stored answer as the text a filter compares it with.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Why `answer` cannot be the stored value of `slot`, if it cannot.
fn answer_violation(rubric: &Rubric, slot: &Slot<'_>, answer: &str) -> Option<String> {
    match slot {
        Slot::Asked { question, .. } if question.is_text() => {
            Some(format!("cannot be matched: {} is free text", slot.path()))
        }
        Slot::Asked { question, .. } => {
            let options: Vec<String> = question
                .options()
                .iter()
                .map(|(v, _)| value_text(v))
                .collect();
            (!options.iter().any(|o| o == answer))
                .then(|| format!("must be one of {} for {}", options.join(", "), slot.path()))
        }
        Slot::Derived(derived) => {
            let (low, high) = derived.range(rubric);
            let fits = answer
                .parse::<i64>()
                .is_ok_and(|n| (low..=high).contains(&n));
            (!fits).then(|| {
                format!(
                    "must be a whole number from {low} to {high} for {}",
                    slot.path()
                )
            })
        }
    }
}

/// Checks the queue's filters: a batch the lead leads (404 otherwise, as everywhere),
/// known names, and a question of the batch's rubric with one of its values.
pub async fn filters(state: &AppState, lead: &User, text: FilterText<'_>) -> AppResult<Filters> {
    let given = |v: Option<&str>| {
        v.map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let mut fields = crate::error::FieldErrors::new();
    let batch = match given(text.batch) {
        None => None,
        Some(text) => match Uuid::parse_str(&text) {
            Ok(id) => Some(crate::batches::visible(state, id, lead).await?),
            Err(_) => {
                fields.insert("batch".into(), "must be a batch id".into());
                None
            }
        },
    };
    // The batch's rubric, read once for the question and warning filters that need it.
    let rubric = match &batch {
        Some(summary) if given(text.question).is_some() || given(text.warning).is_some() => {
            Some(state.store().batch_rubric(&summary.batch).await?)
        }
        _ => None,
    };
    let rater = given(text.rater);
    if let Some(name) = &rater {
        // Text no account can be named (control characters, NUL) never reaches the
        // database, which may refuse it outright.
        let possible = name.chars().count() <= 200 && !name.chars().any(char::is_control);
        if !possible || state.store().user_by_name(name).await?.is_none() {
            fields.insert("rater".into(), format!("{name:?} is not a user's name"));
        }
    }
    let outcome = match given(text.outcome).map(|o| o.parse::<Outcome>()) {
        None => None,
        Some(Ok(Outcome::Skipped)) => {
            fields.insert(
                "outcome".into(),
                "skips are not reviewed: use rated or out_of_scope".into(),
            );
            None
        }
        Some(Ok(outcome)) => Some(outcome),
        Some(Err(unknown)) => {
            fields.insert("outcome".into(), unknown.to_string());
            None
        }
    };
    let status = match given(text.status).map(|s| Status::parse_finished(&s)) {
        None => Status::Submitted,
        Some(Ok(status)) => status,
        Some(Err(unknown)) => {
            fields.insert("status".into(), unknown.to_string());
            Status::Submitted
        }
    };
    let answer = match (given(text.question), given(text.answer)) {
        (None, None) => None,
        (Some(_), None) => {
            fields.insert("answer".into(), "is required with question".into());
            None
        }
        (None, Some(_)) => {
            fields.insert(
                "question".into(),
                "is required with answer: name the answer's path, e.g. sxs".into(),
            );
            None
        }
        (Some(question), Some(answer)) => {
            if !is_answer_path(&question) {
                fields.insert(
                    "question".into(),
                    "must be an answer's path, e.g. sxs or a.correctness".into(),
                );
            } else if let Some(rubric) = &rubric {
                let slots = rubric.slots();
                match slots.iter().find(|s| s.path() == question) {
                    None => {
                        let known: Vec<String> = slots.iter().map(Slot::path).collect();
                        fields.insert(
                            "question".into(),
                            format!(
                                "is not a question of rubric {}: one of {}",
                                rubric.name,
                                known.join(", ")
                            ),
                        );
                    }
                    Some(slot) => {
                        if let Some(why) = answer_violation(rubric, slot, &answer) {
                            fields.insert("answer".into(), why);
                        }
                    }
                }
            }
            Some((question, answer))
        }
    };
    let mut flag = |name: &str, text: Option<String>| match text.as_deref() {
        None | Some("false" | "0" | "no") => false,
        Some("true" | "1" | "yes" | "on") => true,
        Some(_) => {
            fields.insert(name.into(), "must be true or false".into());
            false
        }
    };
    let disagrees = flag("disagrees", given(text.disagrees));
    let review_first = flag("review_first", given(text.review_first));
    let warning = match given(text.warning) {
        None => None,
        Some(any) if any == "any" => Some(WarningFilter::Any),
        Some(id) => {
            let known = match &rubric {
                Some(rubric) => {
                    let ids: Vec<String> = rubric.warnings.iter().map(|w| w.id.clone()).collect();
                    (!ids.contains(&id)).then(|| {
                        if ids.is_empty() {
                            format!("rubric {} has no warnings", rubric.name)
                        } else {
                            format!(
                                "is not a warning of rubric {}: one of any, {}",
                                rubric.name,
                                ids.join(", ")
                            )
                        }
                    })
                }
                None => (verdict_core::rubric::document::check_name(&id).is_err()).then(|| {
                    "must be a warning's id (lower-case letters, digits and dashes) or any".into()
                }),
            };
            match known {
                Some(why) => {
                    fields.insert("warning".into(), why);
                    None
                }
                None => Some(WarningFilter::Id(id)),
            }
        }
    };
    if !fields.is_empty() {
        return Err(refused(fields));
    }
    Ok(Filters {
        store: QueueFilter {
            batch: batch.map(|b| b.batch.id),
            rater,
            outcome,
            status,
            warning,
            review_first,
        },
        answer,
        disagrees,
    })
}

/// A rating of the review queue, as a lead reads it in the list.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct QueueItem {
    pub rating_id: Uuid,
    pub batch_id: Uuid,
    pub batch_name: String,
    pub external_id: String,
    pub rater: String,
    pub outcome: Outcome,
    pub status: Status,
    pub submitted_at: Option<DateTime<Utc>>,
    /// Send it back with a decision.
    pub version: i32,
    /// The rating's main answers (preferences, scores) by their labels.
    pub preview: Vec<Preview>,
    /// Whether it disagrees with the other counted ratings of its task.
    pub disagrees: bool,
    /// Held for review first: it counts in no metric until accepted.
    pub review_first: bool,
}

/// Every rating of the queue `filters` keep, oldest first: the store's selection, then
/// the rubric's filters (an answer, disagreement) over it.
pub async fn matching(
    state: &AppState,
    lead: &User,
    filters: &Filters,
) -> AppResult<Vec<QueueItem>> {
    let store = state.store();
    let rows = store
        .review_queue(lead.id, lead.role, &filters.store)
        .await?;
    if rows.is_empty() {
        return Ok(vec![]);
    }
    let peers = store
        .review_queue_peers(lead.id, lead.role, &filters.store)
        .await?;
    let rubrics = rubrics_of(state, lead, &rows).await?;
    Ok(items(rows, &peers, &rubrics, filters))
}

/// The rubric of each batch `rows` come from.
async fn rubrics_of(
    state: &AppState,
    lead: &User,
    rows: &[QueueRow],
) -> AppResult<HashMap<Uuid, Arc<Rubric>>> {
    let store = state.store();
    let mut rubrics = HashMap::new();
    for summary in store.visible_batches(lead.id, lead.role).await? {
        if rows.iter().any(|r| r.batch_id == summary.batch.id) {
            rubrics.insert(summary.batch.id, store.batch_rubric(&summary.batch).await?);
        }
    }
    Ok(rubrics)
}

/// Queue rows as a lead reads them, each compared with the counted ratings among
/// `peers` of its task, keeping those the rubric's filters keep.
fn items(
    rows: Vec<QueueRow>,
    peers: &[Peer],
    rubrics: &HashMap<Uuid, Arc<Rubric>>,
    filters: &Filters,
) -> Vec<QueueItem> {
    let mut by_task: HashMap<Uuid, Vec<&Peer>> = HashMap::new();
    for peer in peers {
        if peer.counts_in_metrics() {
            by_task.entry(peer.task_id).or_default().push(peer);
        }
    }
    let mut items = Vec::new();
    for row in rows {
        let Some(rubric) = rubrics.get(&row.batch_id) else {
            continue;
        };
        let answers = &row.answers.0;
        if let Some((question, answer)) = &filters.answer {
            let held = rubric
                .slots()
                .iter()
                .find(|s| s.path() == *question)
                .and_then(|s| s.value(answers))
                .map(value_text);
            if held.as_deref() != Some(answer.as_str()) {
                continue;
            }
        }
        let others: Vec<&Answers> = by_task
            .get(&row.task_id)
            .into_iter()
            .flatten()
            .filter(|p| p.rating_id != row.rating_id)
            .map(|p| &*p.answers.0)
            .collect();
        let disagrees = disagreement::disagrees(rubric, answers, &others);
        if filters.disagrees && !disagrees {
            continue;
        }
        items.push(QueueItem {
            preview: disagreement::preview(rubric, answers),
            disagrees,
            rating_id: row.rating_id,
            batch_id: row.batch_id,
            batch_name: row.batch_name,
            external_id: row.external_id,
            rater: row.rater,
            outcome: row.outcome,
            status: row.status,
            submitted_at: row.submitted_at,
            version: row.version,
            review_first: row.review_first,
        });
    }
    items
}

fn key(item: &QueueItem) -> Cursor {
    Cursor {
        at: item.submitted_at.unwrap_or_default(),
        id: item.rating_id,
    }
}

/// One page of the review queue.
pub struct FoundPage {
    pub page: Page<QueueItem>,
    /// How many matching ratings come before this page.
    pub offset: usize,
    pub limit: i64,
    pub filters: Filters,
}

/// A page of the review queue `lead` may work on, under the query's filters.
pub async fn queue(state: &AppState, lead: &User, query: &QueueQuery) -> AppResult<FoundPage> {
    let (cursor, limit) = params(ListKind::ReviewQueue, query.cursor.as_deref(), query.limit)?;
    let filters = filters(state, lead, query.filter_text()).await?;
    if filters.in_database() {
        let store = state.store();
        let (page, before) = store
            .review_queue_page(lead.id, lead.role, &filters.store, cursor, limit)
            .await?;
        let mut tasks: Vec<Uuid> = page.items.iter().map(|r| r.task_id).collect();
        tasks.sort();
        tasks.dedup();
        let peers = store.task_peers(&tasks).await?;
        let rubrics = rubrics_of(state, lead, &page.items).await?;
        return Ok(FoundPage {
            page: Page {
                items: items(page.items, &peers, &rubrics, &filters),
                total: page.total,
                next: page.next,
            },
            offset: usize::try_from(before).unwrap_or(0),
            limit,
            filters,
        });
    }
    // The rubric's filters need every rating the database keeps; the keyset cursor then
    // pages what they leave.
    let items = matching(state, lead, &filters).await?;
    let total = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let offset = cursor.map_or(0, |c| {
        items
            .iter()
            .position(|item| (key(item).at, key(item).id) > (c.at, c.id))
            .unwrap_or(items.len())
    });
    let rows: Vec<QueueItem> = items
        .into_iter()
        .skip(offset)
        .take(usize::try_from(limit).unwrap_or(0) + 1)
        .collect();
    Ok(FoundPage {
        page: Page::of(rows, limit, total, key),
        offset,
        limit,
        filters,
    })
}

/// The rating a lead should look at after deciding on `current`: the next one of the
/// queue under `filters` that is still waiting, after it in queue order, else the
/// first; `None` when nothing else waits.
pub async fn next_after(
    state: &AppState,
    lead: &User,
    filters: &Filters,
    current: Uuid,
    current_at: Option<DateTime<Utc>>,
) -> AppResult<Option<Uuid>> {
    let here = (current_at.unwrap_or_default(), current);
    if filters.in_database() {
        let store = state.store();
        let cursor = Cursor {
            at: here.0,
            id: here.1,
        };
        let (after, _) = store
            .review_queue_page(lead.id, lead.role, &filters.store, Some(cursor), 1)
            .await?;
        let (first, _) = store
            .review_queue_page(lead.id, lead.role, &filters.store, None, 2)
            .await?;
        return Ok(after
            .items
            .iter()
            .chain(first.items.iter())
            .find(|r| {
                r.rating_id != current && verdict_core::lifecycle::can_review(r.outcome, r.status)
            })
            .map(|r| r.rating_id));
    }
    let items = matching(state, lead, filters).await?;
    let waiting = |item: &&QueueItem| {
        item.rating_id != current && verdict_core::lifecycle::can_review(item.outcome, item.status)
    };
    let after = items
        .iter()
        .filter(waiting)
        .find(|item| (key(item).at, key(item).id) > here);
    Ok(after
        .or_else(|| items.iter().find(waiting))
        .map(|item| item.rating_id))
}
