//! `/api/v1/me` and `/api/v1/users`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use uuid::Uuid;

use super::UserView;
use crate::auth::{CurrentUser, RequireAdmin};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::services::accounts::{self, Changes, NewUser};
use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiJson, ApiPath};
use utoipa_axum::routes;

/// The routes of `/api/v1/me` and `/api/v1/users`.
pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(me, update_me))
        .routes(routes!(list, create))
        .routes(routes!(update))
}

/// The signed-in user.
#[utoipa::path(get, path = "/api/v1/me", tag = "users",
    responses((status = 200, body = UserView), (status = 401, body = ErrorBody)))]
pub async fn me(CurrentUser { user, .. }: CurrentUser) -> Json<UserView> {
    Json(user.into())
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMe {
    /// Leads and admins: what you know (languages, subjects), at most 50, each 1 to 40
    /// characters without commas; kept trimmed, in lower case and sorted. A rater's are
    /// set by a lead or an admin: 422 naming `skills`.
    skills: Option<Vec<String>>,
    /// What you say you know, checked as `skills` are: a batch that prefers skills offers
    /// the matching tasks first; one that routes strictly goes by `skills` alone.
    declared_skills: Option<Vec<String>>,
}

/// Changes the signed-in user's own skills (leads and admins) or declared skills.
#[utoipa::path(patch, path = "/api/v1/me", tag = "users", request_body = UpdateMe,
    responses((status = 200, body = UserView), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 422, body = ErrorBody)))]
pub async fn update_me(
    CurrentUser { user, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<UpdateMe>,
) -> AppResult<Json<UserView>> {
    let changes = Changes {
        skills: body.skills,
        declared_skills: body.declared_skills,
        ..Changes::default()
    };
    Ok(Json(
        accounts::update_own(state.store(), state.hasher(), &user, changes)
            .await?
            .into(),
    ))
}

/// Every account (admin).
#[utoipa::path(get, path = "/api/v1/users", tag = "users",
    responses((status = 200, body = [UserView]), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn list(
    _: RequireAdmin,
    State(state): State<AppState>,
) -> AppResult<Json<Vec<UserView>>> {
    let users = state.store().list_users().await?;
    Ok(Json(users.into_iter().map(UserView::from).collect()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// Letters, digits and `. _ - @`, at most 64 characters.
    username: Option<String>,
    /// `rater`, `lead` or `admin`.
    role: Option<String>,
    /// At least 10 characters.
    password: Option<String>,
}

/// Creates an account (admin).
#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = CreateUser,
    responses((status = 201, body = UserView), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 415, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    RequireAdmin(admin): RequireAdmin,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateUser>,
) -> AppResult<(StatusCode, Json<UserView>)> {
    let new = NewUser::parse(
        body.username.as_deref(),
        body.role.as_deref(),
        body.password.as_deref(),
    )
    .map_err(AppError::invalid)?;
    let user =
        accounts::create_user(state.store(), state.hasher(), new, Some((&admin).into())).await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    role: Option<String>,
    /// `false` deactivates the account and ends its sessions.
    active: Option<bool>,
    /// A new password; ends every session of the account.
    password: Option<String>,
    /// What the person knows (languages, subjects): at most 50, each 1 to 40 characters
    /// without commas; kept trimmed, in lower case and sorted. A lead may set a rater's.
    skills: Option<Vec<String>>,
}

/// Changes an account's role, activation, password or skills (admin); a lead may change
/// a rater's skills, and nothing else.
#[utoipa::path(patch, path = "/api/v1/users/{id}", tag = "users", request_body = UpdateUser,
    params(("id" = Uuid, Path, description = "user id")),
    responses((status = 200, body = UserView), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update(
    CurrentUser { user: actor, .. }: CurrentUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<UpdateUser>,
) -> AppResult<Json<UserView>> {
    let changes = Changes {
        role: body.role,
        active: body.active,
        password: body.password,
        skills: body.skills,
        declared_skills: None,
    };
    accounts::may_change(state.store(), &actor, id, &changes).await?;
    Ok(Json(
        accounts::update_user(state.store(), state.hasher(), (&actor).into(), id, changes)
            .await?
            .into(),
    ))
}
