//! The admin's users page: list, create, change role, deactivate, reset a password.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use super::UserView;
use crate::auth::PageUser;
use crate::auth::csrf::CsrfForm;
use crate::auth::{RequireAdmin, Role};
use crate::error::{AppError, AppResult, FieldErrors};
use crate::services::ServiceError;
use crate::services::accounts::{self, Changes, NewUser};
use crate::state::AppState;
use crate::web::{ApiPath, ApiQuery, Layout, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(users_page).post(create))
        .route("/admin/users/{id}", post(update))
        .route("/admin/users/{id}/password", post(reset_password))
}

#[derive(Template)]
#[template(path = "users/admin_users.html")]
struct UsersPage {
    layout: Layout,
    /// The admin looking at the page, who may not demote or deactivate themselves.
    me: Uuid,
    users: Vec<UserView>,
    roles: [Role; 3],
    form: CreateForm,
    errors: FieldErrors,
    /// What a password must be, shown beside the field.
    password_policy: String,
    /// The length limits the password fields carry (the server checks them too).
    min_password_len: usize,
    max_password_len: usize,
    /// The account whose password was just reset, by name.
    reset_done: Option<String>,
    /// A refused reset: the account and why.
    reset_error: Option<(Uuid, String)>,
}

/// What the page shows besides the list: a reset that worked or one that was refused.
#[derive(Default)]
struct ResetOutcome {
    done: Option<Uuid>,
    error: Option<(Uuid, String)>,
}

#[derive(Deserialize, Default)]
struct CreateForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    password: String,
}

async fn page(
    state: &AppState,
    page_user: PageUser,
    form: CreateForm,
    errors: FieldErrors,
    reset: ResetOutcome,
) -> AppResult<UsersPage> {
    let users: Vec<UserView> = state
        .store()
        .list_users()
        .await?
        .into_iter()
        .map(UserView::from)
        .collect();
    let reset_done = reset
        .done
        .and_then(|id| users.iter().find(|u| u.id == id))
        .map(|u| u.username.clone());
    Ok(UsersPage {
        layout: page_user.layout,
        me: page_user.user.id,
        users,
        roles: Role::ALL,
        form,
        errors,
        password_policy: crate::auth::password::policy(),
        min_password_len: crate::auth::password::MIN_PASSWORD_LEN,
        max_password_len: crate::auth::password::MAX_PASSWORD_LEN,
        reset_done,
        reset_error: reset.error,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersQuery {
    /// The account whose password was just reset (after the reset form's redirect).
    reset: Option<Uuid>,
}

async fn users_page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<UsersQuery>,
) -> AppResult<Response> {
    let form = CreateForm {
        role: "rater".into(),
        ..Default::default()
    };
    let reset = ResetOutcome {
        done: query.reset,
        error: None,
    };
    Ok(render(&page(&state, page_user, form, FieldErrors::new(), reset).await?)?.into_response())
}

async fn create(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<CreateForm>,
) -> AppResult<Response> {
    let parsed = NewUser::parse(Some(&form.username), Some(&form.role), Some(&form.password));
    let (status, errors) = match parsed {
        Ok(new) => {
            let actor = Some((&page_user.user).into());
            match accounts::create_user(state.store(), state.hasher(), new, actor).await {
                Ok(_) => return Ok(Redirect::to("/admin/users").into_response()),
                // A taken username is shown beside the field, in the API's words.
                Err(err) => match AppError::from(err) {
                    AppError::Conflict(why) => (
                        StatusCode::CONFLICT,
                        FieldErrors::from([("username".to_owned(), why)]),
                    ),
                    other => return Err(other),
                },
            }
        }
        Err(errors) => (StatusCode::UNPROCESSABLE_ENTITY, errors),
    };
    // The password is never echoed back into the page.
    let form = CreateForm {
        password: String::new(),
        ..form
    };
    Ok((
        status,
        render(&page(&state, page_user, form, errors, ResetOutcome::default()).await?)?,
    )
        .into_response())
}

#[derive(Deserialize)]
struct UpdateForm {
    role: Option<String>,
    active: Option<String>,
}

async fn update(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<UpdateForm>,
) -> AppResult<Redirect> {
    let changes = Changes {
        role: form.role,
        active: form.active.map(|a| a == "true"),
        ..Changes::default()
    };
    let actor = (&page_user.user).into();
    accounts::update_user(state.store(), state.hasher(), actor, id, changes).await?;
    Ok(Redirect::to("/admin/users"))
}

#[derive(Deserialize)]
struct ResetForm {
    #[serde(default)]
    password: String,
}

/// An admin sets a new password for an account: the same change as `PATCH
/// /api/v1/users/{id}` with `password`, so the account's sessions end and its tokens are
/// revoked. A refused password shows the page again with the reason beside the account.
async fn reset_password(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<ResetForm>,
) -> AppResult<Response> {
    let changes = Changes {
        password: Some(form.password),
        ..Changes::default()
    };
    let actor = (&page_user.user).into();
    match accounts::update_user(state.store(), state.hasher(), actor, id, changes).await {
        Ok(_) => Ok(Redirect::to(&format!("/admin/users?reset={id}")).into_response()),
        Err(ServiceError::Invalid(fields)) => {
            let why = fields
                .get("password")
                .cloned()
                .unwrap_or_else(|| "was refused".into());
            let form = CreateForm {
                role: "rater".into(),
                ..Default::default()
            };
            let reset = ResetOutcome {
                done: None,
                error: Some((id, why)),
            };
            let html = render(&page(&state, page_user, form, FieldErrors::new(), reset).await?)?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, html).into_response())
        }
        Err(other) => Err(other.into()),
    }
}
