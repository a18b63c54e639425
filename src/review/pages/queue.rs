//! The review queue page with its filters, and bulk accept: the ratings it would accept,
//! then what it did.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult};
use crate::review::disagreement;
use crate::review::table::row_label;
use crate::review::{self, BulkAccepted, FilterText, QueueItem, QueueQuery, Seen};
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::web::notice::{self, Notice};
use crate::web::paging::PageLinks;
use crate::web::{ApiQuery, Layout, render};
use verdict_core::lifecycle::{Decision, Outcome, Status};
use verdict_core::rubric::Slot;

/// An option of a `<select>`: value, label, whether it is the one picked.
type Pick = (String, String, bool);

#[derive(Template)]
#[template(path = "review/queue.html")]
struct QueuePage {
    layout: Layout,
    rows: Vec<QueueItem>,
    batches: Vec<Pick>,
    outcomes: Vec<Pick>,
    statuses: Vec<Pick>,
    /// The questions of the picked batch's rubric, when one is picked.
    questions: Vec<Pick>,
    /// Each of those questions' answers as the form labels them, grouped by question
    /// (its path and label), when a batch is picked: the answer filter's choices.
    answers: Vec<(String, String, Vec<Pick>)>,
    rater: String,
    question: String,
    answer: String,
    disagrees: bool,
    review_first: bool,
    /// The consistency-warning filter's choices: any rating, any confirmed warning, and
    /// the picked batch's rubric's warnings.
    warnings: Vec<Pick>,
    /// `first–last of total`, when anything matches.
    range: Option<String>,
    total: i64,
    /// Whether the filters show waiting ratings, which may be accepted in bulk.
    waiting: bool,
    /// The filters as a query string, for the links of the rows.
    carry: String,
    error: Option<String>,
    pager: PageLinks,
    rule: &'static str,
}

fn picks<'a>(
    options: impl IntoIterator<Item = (&'a str, String)>,
    picked: Option<&str>,
) -> Vec<Pick> {
    options
        .into_iter()
        .map(|(value, label)| (value.to_owned(), label, Some(value) == picked))
        .collect()
}

pub(super) async fn queue(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<QueueQuery>,
) -> AppResult<Response> {
    let (found, error) = match review::queue(&state, &lead, &query).await {
        Ok(found) => (Some(found), None),
        Err(AppError::Validation { message, .. }) => (None, Some(message)),
        Err(other) => return Err(other),
    };
    let text = query.filter_text();
    let trimmed = |v: Option<&str>| v.map(str::trim).unwrap_or("").to_owned();
    let batch_text = trimmed(text.batch);
    let visible = state.store().visible_batches(lead.id, lead.role).await?;
    let mut questions = Vec::new();
    let mut answers = Vec::new();
    let picked_warning = trimmed(text.warning);
    let mut warnings = vec![
        (
            String::new(),
            "Any rating".to_owned(),
            picked_warning.is_empty(),
        ),
        (
            "any".to_owned(),
            "Any confirmed warning".to_owned(),
            picked_warning == "any",
        ),
    ];
    if let Some(summary) = visible
        .iter()
        .find(|b| b.batch.id.to_string() == batch_text)
    {
        let rubric = state.store().batch_rubric(&summary.batch).await?;
        let picked = trimmed(text.question);
        let picked_answer = trimmed(text.answer);
        answers = rubric
            .slots()
            .iter()
            .filter_map(|s| match s {
                Slot::Asked { question, .. } if !question.options().is_empty() => {
                    let path = s.path();
                    let options = question
                        .options()
                        .into_iter()
                        .map(|(value, label)| {
                            let value = verdict_core::rubric::plain(&value);
                            let chosen = path == picked && value == picked_answer;
                            (value, label.to_owned(), chosen)
                        })
                        .collect();
                    Some((path, row_label(s), options))
                }
                _ => None,
            })
            .collect();
        questions = rubric
            .slots()
            .iter()
            .filter(|s| !matches!(s, Slot::Asked { question, .. } if question.is_text()))
            .map(|s| {
                let path = s.path();
                let label = format!("{} ({path})", row_label(s));
                let chosen = path == picked;
                (path, label, chosen)
            })
            .collect();
        warnings.extend(rubric.warnings.iter().map(|w| {
            let label = format!("Confirmed: {}", w.id);
            (w.id.clone(), label, w.id == picked_warning)
        }));
    }
    if !warnings.iter().any(|(_, _, chosen)| *chosen) {
        let label = format!("Confirmed: {picked_warning}");
        warnings.push((picked_warning.clone(), label, true));
    }
    let batches = visible
        .into_iter()
        .map(|b| {
            let id = b.batch.id.to_string();
            let chosen = id == batch_text;
            (id, b.batch.name, chosen)
        })
        .collect();
    let outcome = trimmed(text.outcome);
    let status = trimmed(text.status);
    let outcomes = picks(
        [Outcome::Rated, Outcome::OutOfScope].map(|o| (o.as_str(), o.label())),
        Some(outcome.as_str()),
    );
    let statuses = picks(
        [
            Status::Submitted,
            Status::Accepted,
            Status::Returned,
            Status::Rejected,
        ]
        .map(|s| (s.as_str(), s.as_str().to_owned())),
        Some(if status.is_empty() {
            Status::Submitted.as_str()
        } else {
            status.as_str()
        }),
    );
    let page = match found {
        Some(found) => {
            let keep = found.filters.pairs();
            let pager = PageLinks::new(
                "/review",
                &keep,
                &found.page,
                ListKind::ReviewQueue,
                found.limit,
                query.cursor.is_none(),
            );
            let shown = found.page.items.len();
            QueuePage {
                range: (shown > 0).then(|| {
                    format!(
                        "{}–{} of {}",
                        found.offset + 1,
                        found.offset + shown,
                        found.page.total
                    )
                }),
                total: found.page.total,
                waiting: found.filters.store.status == Status::Submitted,
                carry: found.filters.query_string(),
                rows: found.page.items,
                pager,
                error: None,
                ..empty_queue(page_user.layout)
            }
        }
        None => QueuePage {
            error,
            ..empty_queue(page_user.layout)
        },
    };
    let page = QueuePage {
        batches,
        outcomes,
        statuses,
        questions,
        answers,
        rater: trimmed(text.rater),
        question: trimmed(text.question),
        answer: trimmed(text.answer),
        disagrees: matches!(
            trimmed(text.disagrees).as_str(),
            "true" | "1" | "yes" | "on"
        ),
        review_first: matches!(
            trimmed(text.review_first).as_str(),
            "true" | "1" | "yes" | "on"
        ),
        warnings,
        ..page
    };
    let status = if page.error.is_some() {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    } else {
        axum::http::StatusCode::OK
    };
    Ok((status, render(&page)?).into_response())
}

fn empty_queue(layout: Layout) -> QueuePage {
    QueuePage {
        layout,
        rows: vec![],
        batches: vec![],
        outcomes: vec![],
        statuses: vec![],
        questions: vec![],
        answers: vec![],
        rater: String::new(),
        question: String::new(),
        answer: String::new(),
        disagrees: false,
        review_first: false,
        warnings: vec![],
        range: None,
        total: 0,
        waiting: false,
        carry: String::new(),
        error: None,
        pager: PageLinks {
            shown: 0,
            total: 0,
            next: None,
            first: None,
        },
        rule: disagreement::RULE,
    }
}

/// The filters of a bulk accept, as its confirmation form sends them back.
#[derive(Debug, Default, Deserialize)]
pub(super) struct AcceptForm {
    batch: Option<String>,
    rater: Option<String>,
    outcome: Option<String>,
    question: Option<String>,
    answer: Option<String>,
    disagrees: Option<String>,
    warning: Option<String>,
    review_first: Option<String>,
    /// `rating_id:version` of each rating shown, comma-separated.
    #[serde(default)]
    seen: String,
}

impl AcceptForm {
    fn filter_text(&self) -> FilterText<'_> {
        FilterText {
            batch: self.batch.as_deref(),
            rater: self.rater.as_deref(),
            outcome: self.outcome.as_deref(),
            status: None,
            question: self.question.as_deref(),
            answer: self.answer.as_deref(),
            disagrees: self.disagrees.as_deref(),
            warning: self.warning.as_deref(),
            review_first: self.review_first.as_deref(),
        }
    }
}

#[derive(Template)]
#[template(path = "review/accept.html")]
struct AcceptPage {
    layout: Layout,
    rows: Vec<QueueItem>,
    /// The filters, as hidden fields of the form.
    fields: Vec<(&'static str, String)>,
    seen: String,
    carry: String,
    /// After accepting: how many were, and what was skipped.
    done: Option<BulkAccepted>,
}

/// `GET /review/accept`: the ratings a bulk accept under these filters would accept,
/// and the button that does it.
pub(super) async fn confirm_accept(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<QueueQuery>,
) -> AppResult<Response> {
    let text = FilterText {
        status: None,
        ..query.filter_text()
    };
    let filters = review::filters(&state, &lead, text).await?;
    let rows = review::matching(&state, &lead, &filters).await?;
    let seen = rows
        .iter()
        .map(|r| format!("{}:{}", r.rating_id, r.version))
        .collect::<Vec<_>>()
        .join(",");
    Ok(render(&AcceptPage {
        layout: page_user.layout,
        rows,
        fields: filters.pairs(),
        seen,
        carry: filters.query_string(),
        done: None,
    })?
    .into_response())
}

/// Reads `id:version,...` as the form sends it.
fn parse_seen(text: &str) -> AppResult<Vec<Seen>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (id, version) = pair.split_once(':')?;
            Some(Seen {
                rating_id: Uuid::parse_str(id).ok()?,
                version: version.parse().ok()?,
            })
        })
        .map(|seen| {
            seen.ok_or_else(|| AppError::field("seen", "must list rating_id:version pairs"))
        })
        .collect()
}

/// `POST /review/accept`: accepts what the confirmation listed, and says what happened.
pub(super) async fn post_accept(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<AcceptForm>,
) -> AppResult<Response> {
    let seen = parse_seen(&form.seen)?;
    let done = review::accept_all(&state, &lead, form.filter_text(), Some(&seen)).await?;
    let filters = review::filters(&state, &lead, form.filter_text()).await?;
    Ok(render(&AcceptPage {
        layout: page_user.layout,
        rows: vec![],
        fields: vec![],
        seen: String::new(),
        carry: filters.query_string(),
        done: Some(done),
    })?
    .into_response())
}

/// `POST /review/selected`: decides the ticked ratings the same way, each as a normal
/// review (one that changed since the queue was shown is left alone), then back to the
/// queue under the same filters, whose page says what was done.
pub(super) async fn post_selected(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    session: tower_sessions::Session,
    CsrfForm(pairs): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    // The queue's filters ride in the form's address; the form sends the decision, the
    // comment a return gives every rater, and each ticked rating as a repeated `seen`.
    let shown: AcceptForm =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).map_err(|err| {
            AppError::BadRequest(format!("the address's filters cannot be read: {err}"))
        })?;
    let (mut decision, mut comment, mut seen_text) = (String::new(), None, Vec::new());
    for (key, value) in pairs {
        match key.as_str() {
            "decision" => decision = value,
            "comment" => comment = Some(value),
            "seen" => seen_text.push(value),
            _ => {}
        }
    }
    let seen = parse_seen(&seen_text.join(","))?;
    let filters = review::filters(&state, &lead, shown.filter_text()).await?;
    let back = match filters.query_string() {
        carry if carry.is_empty() => "/review".to_owned(),
        carry => format!("/review?{carry}"),
    };
    let said = match (decision.parse::<Decision>(), seen.is_empty()) {
        (Err(unknown), _) => Notice::new(format!("Nothing was changed: {unknown}.")),
        (Ok(_), true) => Notice::new("Tick the ratings to decide first: nothing was changed."),
        (Ok(decision), false) => match review::decide_all(
            &state,
            &lead,
            shown.filter_text(),
            Some(&seen),
            decision,
            comment,
        )
        .await
        {
            Ok((decided, skipped)) => {
                Notice::new(selected_words(decision, decided.len(), &skipped))
            }
            Err(AppError::Validation { fields, .. }) => Notice::new(format!(
                "Nothing was changed: {}.",
                fields
                    .iter()
                    .map(|(field, why)| format!("the {field} {why}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Err(other) => return Err(other),
        },
    };
    notice::set(&session, said).await?;
    Ok(axum::response::Redirect::to(&back).into_response())
}

/// What the queue says after deciding ticked ratings: how many, and any left alone.
fn selected_words(decision: Decision, decided: usize, skipped: &[review::SkippedRating]) -> String {
    let ratings = |n: usize| {
        if n == 1 {
            "1 rating".to_owned()
        } else {
            format!("{n} ratings")
        }
    };
    let done = match decision {
        Decision::Accept => format!("Accepted {}.", ratings(decided)),
        Decision::Return => format!(
            "Returned {} to their raters, with your comment.",
            ratings(decided)
        ),
        Decision::Reject => format!(
            "Rejected {}: their tasks go to other raters.",
            ratings(decided)
        ),
    };
    match skipped {
        [] => done,
        [one] => format!("{done} 1 was left alone: {}.", one.reason),
        more => format!(
            "{done} {} were left alone (changed since you saw them, or no longer waiting).",
            more.len()
        ),
    }
}
