//! `/api/v1/tokens`: bearer tokens for scripts. The secret is shown once, at creation.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::CurrentUser;
use crate::error::{AppResult, ErrorBody};
use crate::services::accounts;
use crate::state::AppState;
use crate::store::tokens::ApiToken;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;

/// The routes of `/api/v1/tokens`.
pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// What the token is for, e.g. "nightly export".
    name: Option<String>,
    /// Whose token (admin only; default: the caller).
    username: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct NewToken {
    id: Uuid,
    name: String,
    username: String,
    /// The secret; it is not stored and cannot be shown again.
    token: String,
}

/// Creates a bearer token for the caller, or for another user (admin).
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", request_body = CreateToken,
    responses((status = 201, body = NewToken), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateToken>,
) -> AppResult<(StatusCode, Json<NewToken>)> {
    let (token, secret) = accounts::create_token(
        state.store(),
        &user,
        body.name.as_deref(),
        body.username.as_deref(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(NewToken {
            id: token.id,
            name: token.name,
            username: token.username,
            token: secret,
        }),
    ))
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListTokens {
    /// `true`: every user's live tokens (admin only); default: the caller's.
    pub all: Option<bool>,
}

/// The caller's live tokens, or every user's (admin, `all=true`); never their secrets.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens", params(ListTokens),
    responses((status = 200, body = [ApiToken]), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)))]
pub async fn list(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListTokens>,
) -> AppResult<Json<Vec<ApiToken>>> {
    Ok(Json(
        accounts::visible_tokens(state.store(), &user, query.all.unwrap_or(false)).await?,
    ))
}

/// Revokes one of the caller's tokens, or anyone's (admin).
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens",
    params(("id" = Uuid, Path, description = "token id")),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revoke(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<StatusCode> {
    accounts::revoke_token(state.store(), &user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
