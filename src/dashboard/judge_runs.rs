//! The batch page's judge-run buttons: start a run of the judge picked, pause, resume and
//! cancel one, as the API's `POST /api/v1/batches/{id}/judge-runs` and the runs'
//! transitions do. Each goes back to the batch page, which shows what was wrong, if
//! anything, beside the buttons.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::{Extension, Router};
use serde::Deserialize;
use uuid::Uuid;

use super::RunForm;
use crate::auth::PageUser;
use crate::auth::RequireAdmin;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::services::ServiceError;
use crate::services::judging::runs::{RunAction, launch, move_run};
use crate::state::AppState;
use crate::web::ApiPath;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/batches/{id}/judge-runs", post(start))
        .route(
            "/judge-runs/{id}/pause",
            post(transition).layer(Extension(RunAction::Pause)),
        )
        .route(
            "/judge-runs/{id}/resume",
            post(transition).layer(Extension(RunAction::Resume)),
        )
        .route(
            "/judge-runs/{id}/cancel",
            post(transition).layer(Extension(RunAction::Cancel)),
        )
}

/// The batch page's start form.
#[derive(Deserialize)]
struct StartForm {
    /// The judge, by name.
    #[serde(default)]
    judge: String,
}

/// `POST /batches/{id}/judge-runs`: starts a run of the judge picked over the batch, as
/// `POST /api/v1/batches/{id}/judge-runs` does, and goes back to the batch page; what is
/// wrong is shown on the batch page, and no run is started.
async fn start(
    RequireAdmin(admin): RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<StartForm>,
) -> AppResult<Response> {
    let batch = state
        .store()
        .batch(batch_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let name = form.judge.trim();
    let started = if name.is_empty() {
        Err(ServiceError::field("judge", "is required: choose a judge"))
    } else {
        launch(state.store(), state.judging(), &admin, &batch, name).await
    };
    let (status, errors) = match started {
        Ok(_) => {
            return Ok(Redirect::to(&format!("/batches/{batch_id}#judge-runs")).into_response());
        }
        Err(ServiceError::Invalid(fields)) => (StatusCode::UNPROCESSABLE_ENTITY, fields),
        Err(ServiceError::Refused(refusal)) => (
            StatusCode::CONFLICT,
            FieldErrors::from([("judge".to_owned(), AppError::from(refusal).to_string())]),
        ),
        Err(other) => return Err(other.into()),
    };
    let run_form = RunForm {
        judge: name.to_owned(),
        errors,
    };
    let html = super::with_run_form(&state, &admin, page_user.layout, batch_id, run_form).await?;
    Ok((status, html).into_response())
}

/// `POST /judge-runs/{id}/pause`, `/resume` and `/cancel`: the batch page's buttons on a
/// run, each route giving its action. Moves the run as the API's pause, resume and cancel
/// do (`move_run`), then goes back to the batch page. A run that cannot move now (it
/// moved meanwhile) shows the batch page saying why.
async fn transition(
    RequireAdmin(admin): RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    Extension(action): Extension<RunAction>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(_): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    let layout = page_user.layout;
    let run = state.store().run(id).await?.ok_or(AppError::NotFound)?;
    match move_run(state.store(), state.judging(), &admin, id, action)
        .await
        .map_err(AppError::from)
    {
        Ok(_) => Ok(Redirect::to(&format!("/batches/{}#judge-runs", run.batch_id)).into_response()),
        Err(AppError::Conflict(why)) => {
            let judge = state
                .store()
                .judge(run.judge_id)
                .await?
                .map_or_else(String::new, |j| j.name);
            let run_form = RunForm {
                errors: FieldErrors::from([(
                    "run".to_owned(),
                    format!("The run of {judge}: {why}."),
                )]),
                ..RunForm::default()
            };
            let html = super::with_run_form(&state, &admin, layout, run.batch_id, run_form).await?;
            Ok((StatusCode::CONFLICT, html).into_response())
        }
        Err(other) => Err(other),
    }
}
