//! A rater's history of ratings, and the page to read or revise one.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use uuid::Uuid;

use super::HistoryQuery;
use crate::assign::pages::{FormView, form_view};
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::lifecycle::{Outcome, Status};
use crate::rubric::Answers;
use crate::services::rating::{Access, Viewer, access};
use crate::services::task;
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::store::ratings::HistoryRow;
use crate::web::paging::PageLinks;
use crate::web::{ApiPath, ApiQuery, Layout, PageUser, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/ratings", get(history))
        .route("/ratings/{id}", get(one).post(revise))
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
    skip_reason: Option<String>,
    review_comment: Option<String>,
    revisable: bool,
    form: FormView,
    error_count: usize,
    /// Why the out-of-scope explanation (or the outcome, or a skip's reason) was refused.
    explanation_error: Option<String>,
    skip_reasons: [(&'static str, &'static str); 3],
    /// Sanitised HTML of the prompt and responses, in the viewer's orientation.
    prompt_html: String,
    a_html: String,
    b_html: String,
}

async fn page(
    state: &AppState,
    access: &Access,
    layout: Layout,
    answers: Answers,
    errors: FieldErrors,
) -> AppResult<RatingPage> {
    let (task, rendered) = task::with_html(state.store(), access.rating.task_id).await?;
    let prompt_html = rendered.prompt.clone();
    let (a_html, b_html) = rendered.responses(access.turn());
    let r = &access.rating;
    Ok(RatingPage {
        layout,
        rating_id: r.id,
        batch_name: access.batch.name.clone(),
        external_id: task.external_id,
        outcome: r.outcome,
        status: r.status,
        note: r.note.clone(),
        skip_reason: r.skip_reason.clone(),
        review_comment: r.review_comment.clone(),
        revisable: access.revisable() && access.viewer == Viewer::Owner,
        form: form_view(
            &access.rubric,
            &access.batch.classifications.0,
            access.batch.min_explanation_len,
            &answers,
            &errors,
        ),
        error_count: errors.len(),
        explanation_error: ["explanation", "outcome", "reason", "note"]
            .iter()
            .find_map(|key| errors.get(*key).map(|why| format!("{key} {why}"))),
        skip_reasons: crate::rubric::SKIP_REASONS,
        prompt_html,
        a_html,
        b_html,
    })
}

async fn one(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let access = access(state.store(), id, &page_user.user).await?;
    let answers = access.answers();
    Ok(render(
        &page(
            &state,
            &access,
            page_user.layout,
            answers,
            FieldErrors::new(),
        )
        .await?,
    )?
    .into_response())
}

async fn revise(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(pairs): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    let access = access(state.store(), id, &page_user.user).await?;
    let mut input =
        crate::assign::form_answers(&access.rubric, &access.batch.classifications.0, &pairs);
    // An out-of-scope rating's form also says what it becomes and why.
    if let Some(fields) = input.as_object_mut() {
        for key in ["outcome", "explanation", "reason", "note"] {
            if let Some((_, value)) = pairs.iter().find(|(k, _)| k == key) {
                fields.insert(key.to_owned(), value.as_str().into());
            }
        }
    }
    match super::revise(&state, &access, &page_user.user, &input).await {
        Ok(_) => Ok(Redirect::to(&format!("/ratings/{id}")).into_response()),
        Err(AppError::Validation { fields, .. }) => {
            let answers = input.as_object().cloned().unwrap_or_default();
            let page = page(&state, &access, page_user.layout, answers, fields).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(other) => Err(other),
    }
}
