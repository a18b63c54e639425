//! `/api/v1/rubrics`: rubric documents and their versions.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::{AddedView, Comparison, RubricSummary};
use crate::auth::{CurrentUser, RequireAdmin};
use crate::error::{AppResult, ErrorBody};
use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath};
use utoipa_axum::routes;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, add))
        .routes(routes!(latest))
        .routes(routes!(version))
        .routes(routes!(compare))
}

/// The header that says which version a document is.
const VERSION_HEADER: &str = "x-rubric-version";

/// The document itself, as JSON, with its version in a header: the form `POST` takes, so
/// a document read back, renamed and posted makes a new rubric.
fn document(version: i32, rubric: &verdict_core::rubric::Rubric) -> Response {
    (
        [(VERSION_HEADER, version.to_string())],
        Json(verdict_core::rubric::document::to_value(rubric)),
    )
        .into_response()
}

/// Every rubric a batch can use, with its versions.
#[utoipa::path(get, path = "/api/v1/rubrics", tag = "rubrics",
    responses((status = 200, body = [RubricSummary]), (status = 401, body = ErrorBody)))]
pub async fn list(
    _: CurrentUser,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<RubricSummary>>> {
    Ok(Json(super::list(state.store()).await?))
}

/// Adds a rubric document (admin): a new rubric, or the next version of the rubric of its
/// name (201). A document equal to the newest version changes nothing (200). Every broken
/// rule of the document is reported under its path (`questions[2].answer.options`).
#[utoipa::path(post, path = "/api/v1/rubrics", tag = "rubrics",
    request_body(content = Object, description = "a rubric document (see the README)"),
    responses((status = 201, body = AddedView), (status = 200, body = AddedView),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, description = "a built-in rubric's name", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn add(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<Value>,
) -> AppResult<(StatusCode, Json<AddedView>)> {
    let added = crate::services::rubrics::add(state.store(), &body, (&admin).into())
        .await
        .map_err(super::refusal)?;
    let status = if added.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(added)))
}

/// The newest version of a rubric, as its document (the version is in `X-Rubric-Version`).
#[utoipa::path(get, path = "/api/v1/rubrics/{name}", tag = "rubrics",
    params(("name" = String, Path, description = "the rubric's name")),
    responses((status = 200, body = Object, description = "the rubric document",
            headers(("x-rubric-version" = i32, description = "its version"))),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn latest(
    _: CurrentUser,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> AppResult<Response> {
    let (version, rubric) = super::get(state.store(), &name, None).await?;
    Ok(document(version, &rubric))
}

/// One version of a rubric, as its document.
#[utoipa::path(get, path = "/api/v1/rubrics/{name}/versions/{version}", tag = "rubrics",
    params(("name" = String, Path, description = "the rubric's name"),
        ("version" = i32, Path, description = "its version", minimum = 1)),
    responses((status = 200, body = Object, description = "the rubric document",
            headers(("x-rubric-version" = i32, description = "its version"))),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn version(
    _: CurrentUser,
    State(state): State<AppState>,
    ApiPath((name, version)): ApiPath<(String, i32)>,
) -> AppResult<Response> {
    let (version, rubric) = super::get(state.store(), &name, Some(version)).await?;
    Ok(document(version, &rubric))
}

/// Which questions two versions of a rubric share unchanged, so that batches made with
/// either can be compared on them.
#[utoipa::path(get, path = "/api/v1/rubrics/{name}/versions/{from}/compare/{to}", tag = "rubrics",
    params(("name" = String, Path, description = "the rubric's name"),
        ("from" = i32, Path, description = "one version", minimum = 1),
        ("to" = i32, Path, description = "another version", minimum = 1)),
    responses((status = 200, body = Comparison), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn compare(
    _: CurrentUser,
    State(state): State<AppState>,
    ApiPath((name, from, to)): ApiPath<(String, i32, i32)>,
) -> AppResult<Json<Comparison>> {
    Ok(Json(super::compare(state.store(), &name, from, to).await?))
}
