//! A rater's history of ratings, and the page to read or revise one.

use askama::Template;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::Value;
use uuid::Uuid;

use super::HistoryQuery;
use crate::assign::pages::{FormView, as_typed, confirmed_of, form_view};
use crate::auth::PageUser;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppResult, FieldErrors, WarningView};
use crate::services::ServiceError;
use crate::services::rating::{Access, Viewer, access};
use crate::services::revision;
use crate::services::task;
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::store::ratings::HistoryRow;
use crate::web::paging::PageLinks;
use crate::web::{ApiPath, ApiQuery, Layout, render};
use verdict_core::lifecycle::{Outcome, Status};
use verdict_core::rubric::Answers;
use verdict_core::submission::{RatingRequest, RevisionRequest};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/ratings", get(history))
        .route("/ratings/{id}", get(one).post(revise))
        .route("/ratings/{id}/draft", post(draft))
}

#[derive(Template)]
#[template(path = "ratings/history.html")]
struct HistoryPage {
    layout: Layout,
    rows: Vec<HistoryRow>,
    pager: PageLinks,
}

async fn history(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HistoryQuery>,
) -> AppResult<Response> {
    let (found, limit) = super::history(&state, &page_user.user, &query).await?;
    let pager = PageLinks::new(
        "/ratings",
        &[],
        &found,
        ListKind::History,
        limit,
        query.cursor.is_none(),
    );
    Ok(render(&HistoryPage {
        layout: page_user.layout,
        rows: found.items,
        pager,
    })?
    .into_response())
}

#[derive(Template)]
#[template(path = "ratings/rating.html")]
struct RatingPage {
    layout: Layout,
    rating_id: Uuid,
    batch_name: String,
    external_id: String,
    outcome: Outcome,
    status: Status,
    note: Option<String>,
    /// The reason of a skip, in the rubric's words.
    skip_reason: Option<String>,
    review_comment: Option<String>,
    /// The rubric's warnings a refused revision's answers meet, and those ticked.
    warnings: Vec<WarningView>,
    confirmed: Vec<String>,
    revisable: bool,
    form: FormView,
    error_count: usize,
    /// Why the out-of-scope explanation (or the outcome, or a skip's reason) was refused.
    explanation_error: Option<String>,
    skip_reasons: Vec<verdict_core::rubric::SkipOption>,
    /// Sanitised HTML of the prompt and responses, in the viewer's orientation.
    prompt_html: String,
    a_html: String,
    b_html: String,
    /// Active time so far, a revision's included (the timer goes on from it).
    time_spent_s: i32,
    /// The out-of-scope explanation in the box: the one being written, or the stored one.
    oos_explanation: String,
    /// Whether an unsent revision was restored into the form.
    restored: bool,
    /// What the rater is told after sending a revision.
    confirmation: Option<String>,
}

/// What the page was asked for: `?sent=1` after a revision was taken.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RatingQuery {
    sent: Option<u8>,
}

/// The form as it stands: what was sent back (refused), else an unsent revision, else
/// the rating itself.
enum Shown {
    Refused(Answers, FieldErrors, i32),
    Saved,
}

async fn page(
    state: &AppState,
    access: &Access,
    layout: Layout,
    shown: Shown,
    confirmation: Option<String>,
) -> AppResult<RatingPage> {
    let revisable = access.revisable() && access.viewer == Viewer::Owner;
    let draft = if revisable {
        revision::draft(state.store(), access).await?
    } else {
        None
    };
    let stored_explanation = (access.rating.outcome == Outcome::OutOfScope)
        .then(|| access.rating.note.clone())
        .flatten();
    let restored = draft.is_some() && matches!(shown, Shown::Saved);
    let (answers, errors, time, oos_explanation) = match (shown, draft) {
        (Shown::Refused(answers, errors, time), _) => {
            let sent = answers.get("explanation").and_then(Value::as_str);
            let explanation = sent.map(str::to_owned).or(stored_explanation);
            (answers, errors, time, explanation.unwrap_or_default())
        }
        (Shown::Saved, Some(draft)) => (
            draft.answers.into_map(),
            FieldErrors::new(),
            draft.time_spent_s,
            draft.explanation.or(stored_explanation).unwrap_or_default(),
        ),
        (Shown::Saved, None) => (
            access.answers(),
            FieldErrors::new(),
            0,
            stored_explanation.unwrap_or_default(),
        ),
    };
    let (task, rendered) = task::with_html(state.store(), access.rating.task_id).await?;
    let external_id = access.task_name(state.store(), &task.external_id).await?;
    let prompt_html = rendered.prompt.clone();
    let (a_html, b_html) = rendered.responses(access.turn());
    let r = &access.rating;
    Ok(RatingPage {
        layout,
        rating_id: r.id,
        batch_name: access.batch.name.clone(),
        external_id,
        outcome: r.outcome,
        status: r.status,
        note: r.note.clone(),
        skip_reason: r
            .skip_reason
            .as_ref()
            .map(|reason| access.rubric.skip_label(reason.as_str())),
        review_comment: r.review_comment.clone(),
        revisable,
        confirmed: confirmed_of(&answers),
        warnings: Vec::new(),
        form: {
            let mut form = form_view(
                &access.rubric,
                &access.batch.classifications,
                access.batch.min_explanation_len,
                &answers,
                &errors,
            );
            form.annotate(&access.review_fields(), access.evidence().as_ref());
            form
        },
        error_count: errors.len(),
        explanation_error: ["explanation", "outcome", "reason", "note"]
            .iter()
            .find_map(|key| errors.get(*key).map(|why| format!("{key} {why}"))),
        skip_reasons: access.rubric.skip_options().to_vec(),
        prompt_html,
        a_html,
        b_html,
        time_spent_s: time.max(r.time_spent_s),
        oos_explanation,
        restored,
        confirmation,
    })
}

async fn one(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<RatingQuery>,
) -> AppResult<Response> {
    let access = access(state.store(), id, &page_user.user).await?;
    let confirmation = query.sent.is_some().then(|| confirmation(&access));
    Ok(render(
        &page(
            &state,
            &access,
            page_user.layout,
            Shown::Saved,
            confirmation,
        )
        .await?,
    )?
    .into_response())
}

/// What a rater reads after sending a revision, from where the rating now stands.
fn confirmation(access: &Access) -> String {
    match access.rating.outcome {
        Outcome::Skipped => {
            "Your revision was saved: the task is skipped and goes to another rater.".into()
        }
        _ if access.rating.status == Status::Submitted => {
            "Your revision was saved and is back with the leads for review.".into()
        }
        _ => format!(
            "Your revision was saved; the rating is now {}.",
            access.rating.status
        ),
    }
}

/// `POST /ratings/{id}/draft`: the revise form's automatic save (form-encoded, so a page
/// being closed can still send it as a beacon). The rating itself is unchanged.
async fn draft(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(pairs): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Json<serde_json::Value>> {
    let access = access(state.store(), id, &page_user.user).await?;
    let request = revision_of(&access, &pairs);
    let saved_at = revision::save_draft(state.store(), &access, &request).await?;
    Ok(Json(serde_json::json!({ "saved_at": saved_at })))
}

/// The revise form's fields as a revision: the answers, and what an out-of-scope
/// rating's form also says (what it becomes and why).
fn revision_of(access: &Access, pairs: &[(String, String)]) -> RevisionRequest {
    let text = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value.clone())
    };
    RevisionRequest {
        outcome: text("outcome"),
        explanation: text("explanation"),
        reason: text("reason"),
        note: text("note"),
        rating: RatingRequest::from_form(&access.rubric, &access.batch.classifications, pairs),
    }
}

/// A refused revision's answers as the form shows them again, with the explanation it
/// gave, and its time spent.
fn refused(request: &RevisionRequest) -> (Answers, i32) {
    let (mut answers, time) = as_typed(&request.rating);
    if let Some(explanation) = &request.explanation {
        answers.insert("explanation".into(), Value::from(explanation.as_str()));
    }
    (answers, time)
}

async fn revise(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(pairs): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    let access = access(state.store(), id, &page_user.user).await?;
    let request = revision_of(&access, &pairs);
    let (answers, time) = refused(&request);
    match revision::revise(state.store(), &access, &page_user.user, request).await {
        Ok(_) => Ok(Redirect::to(&format!("/ratings/{id}?sent=1")).into_response()),
        Err(ServiceError::Invalid(fields)) => {
            let shown = Shown::Refused(answers, fields, time);
            let page = page(&state, &access, page_user.layout, shown, None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(ServiceError::Unconfirmed(warnings)) => {
            let shown = Shown::Refused(answers, FieldErrors::new(), time);
            let mut page = page(&state, &access, page_user.layout, shown, None).await?;
            page.warnings = warnings;
            Ok((StatusCode::CONFLICT, render(&page)?).into_response())
        }
        Err(other) => Err(other.into()),
    }
}
