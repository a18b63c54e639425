//! `/api/v1/tokens`: bearer tokens for scripts. The secret is shown once, at creation.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::api::ApiRouter;
use crate::auth::{CurrentUser, Role, tokens};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::state::AppState;
use crate::store::tokens::ApiToken;
use crate::store::users::User;
use crate::web::{ApiJson, ApiPath};
use utoipa_axum::routes;

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

pub const MAX_TOKEN_NAME_LEN: usize = 100;

/// Makes a token for `owner` and returns its secret.
pub async fn issue(state: &AppState, owner: &User, name: &str) -> AppResult<(ApiToken, String)> {
    let secret = tokens::generate();
    let token = state
        .store()
        .create_token(owner.id, name, &tokens::digest(&secret))
        .await?;
    tracing::info!(username = %owner.username, token = %token.id, "API token created");
    Ok((token, secret))
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
    let name = body.name.as_deref().map(str::trim).unwrap_or("").to_owned();
    if name.is_empty() || name.chars().count() > MAX_TOKEN_NAME_LEN {
        return Err(AppError::field(
            "name",
            format!("is required, at most {MAX_TOKEN_NAME_LEN} characters"),
        ));
    }
    let owner = match body.username {
        Some(username) if username != user.username => {
            if user.role < Role::Admin {
                return Err(AppError::Forbidden);
            }
            state
                .store()
                .user_by_name(&username)
                .await?
                .ok_or(AppError::NotFound)?
        }
        _ => user.clone(),
    };
    let (token, secret) = issue(&state, &owner, &name).await?;
    if owner.id != user.id {
        let detail = serde_json::json!({ "name": token.name });
        crate::audit::record(&state, &user, "token.create", &owner.username, detail).await;
    }
    Ok((
        StatusCode::CREATED,
        Json(NewToken {
            id: token.id,
            name: token.name,
            username: owner.username,
            token: secret,
        }),
    ))
}

/// The caller's live tokens (without secrets).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    responses((status = 200, body = [ApiToken]), (status = 401, body = ErrorBody)))]
pub async fn list(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<ApiToken>>> {
    Ok(Json(state.store().list_tokens(user.id).await?))
}

/// Revokes one of the caller's tokens.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens",
    params(("id" = Uuid, Path, description = "token id")),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn revoke(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<StatusCode> {
    if state.store().revoke_token(user.id, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::NotFound)
    }
}
