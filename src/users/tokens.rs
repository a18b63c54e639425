//! `/api/v1/tokens`: bearer tokens for scripts. The secret is shown once, at creation.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::{CurrentUser, Role, tokens};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::state::AppState;
use crate::store::Store;
use crate::store::tokens::ApiToken;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath, ApiQuery};
use utoipa_axum::routes;
use verdict_core::user::User;

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
pub async fn issue(store: &Store, owner: &User, name: &str) -> AppResult<(ApiToken, String)> {
    let secret = tokens::generate();
    let token = store
        .create_token(owner, name, &tokens::digest(&secret))
        .await?;
    tracing::info!(username = %owner.username, token = %token.id, "API token created");
    Ok((token, secret))
}

/// Checks a request for a token and makes it: for the caller, or for `username` (an
/// admin only). 422 naming `name`, 403 for a non-admin asking for someone else, 404 for
/// an unknown user. Tokens made for someone else go in the audit log.
pub async fn create_for(
    state: &AppState,
    caller: &User,
    name: Option<&str>,
    username: Option<&str>,
) -> AppResult<(ApiToken, String)> {
    let name = name.map(str::trim).unwrap_or("").to_owned();
    if name.is_empty() || name.chars().count() > MAX_TOKEN_NAME_LEN {
        return Err(AppError::field(
            "name",
            format!("is required, at most {MAX_TOKEN_NAME_LEN} characters"),
        ));
    }
    let owner = match username.map(str::trim).filter(|u| !u.is_empty()) {
        Some(username) if username != caller.username => {
            if caller.role < Role::Admin {
                return Err(AppError::Forbidden);
            }
            state
                .store()
                .user_by_name(username)
                .await?
                .ok_or(AppError::NotFound)?
        }
        _ => caller.clone(),
    };
    let (token, secret) = issue(state.store(), &owner, &name).await?;
    if owner.id != caller.id {
        let detail = serde_json::json!({ "name": token.name });
        crate::services::audit::record(
            state.store(),
            caller,
            "token.create",
            &owner.username,
            detail,
        )
        .await;
    }
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
    let (token, secret) = create_for(
        &state,
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

/// The live tokens the caller may see and revoke: their own, or with `all=true` every
/// user's (admin). 403 for `all=true` from anyone else.
pub async fn visible(state: &AppState, caller: &User, all: bool) -> AppResult<Vec<ApiToken>> {
    if all && caller.role < Role::Admin {
        return Err(AppError::Forbidden);
    }
    Ok(state
        .store()
        .list_tokens((!all).then_some(caller.id))
        .await?)
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
        visible(&state, &user, query.all.unwrap_or(false)).await?,
    ))
}

/// Revokes a token: one of the caller's, or anyone's for an admin (recorded in the audit
/// log). 404 for a token that is not live or not the caller's to revoke.
pub async fn revoke_for(state: &AppState, caller: &User, id: Uuid) -> AppResult<ApiToken> {
    let admin = caller.role >= Role::Admin;
    let token = state
        .store()
        .revoke_token((!admin).then_some(caller.id), id)
        .await?
        .ok_or(AppError::NotFound)?;
    tracing::info!(by = %caller.username, owner = %token.username, token = %token.id, "API token revoked");
    if token.username != caller.username {
        let detail = serde_json::json!({ "name": token.name });
        crate::services::audit::record(
            state.store(),
            caller,
            "token.revoke",
            &token.username,
            detail,
        )
        .await;
    }
    Ok(token)
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
    revoke_for(&state, &user, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
