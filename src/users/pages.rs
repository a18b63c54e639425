//! The admin's users page: list, create, change role, deactivate.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use super::{Changes, NewUser, UserView};
use crate::auth::csrf::CsrfForm;
use crate::auth::{RequireAdmin, Role};
use crate::error::{AppError, AppResult, FieldErrors};
use crate::state::AppState;
use crate::web::{ApiPath, Layout, PageUser, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/users", get(users_page).post(create))
        .route("/admin/users/{id}", post(update))
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
    password_policy: &'static str,
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
) -> AppResult<UsersPage> {
    let users = state
        .store()
        .list_users()
        .await?
        .into_iter()
        .map(UserView::from)
        .collect();
    Ok(UsersPage {
        layout: page_user.layout,
        me: page_user.user.id,
        users,
        roles: Role::ALL,
        form,
        errors,
        password_policy: crate::auth::password::POLICY,
    })
}

async fn users_page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
) -> AppResult<Response> {
    let form = CreateForm {
        role: "rater".into(),
        ..Default::default()
    };
    Ok(render(&page(&state, page_user, form, FieldErrors::new()).await?)?.into_response())
}

async fn create(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<CreateForm>,
) -> AppResult<Response> {
    let parsed = NewUser::parse(Some(&form.username), Some(&form.role), Some(&form.password));
    let (status, errors) = match parsed {
        Ok(new) => match super::create(&state, new, Some(&page_user.user)).await {
            Ok(_) => return Ok(Redirect::to("/admin/users").into_response()),
            Err(AppError::Conflict(why)) => (
                StatusCode::CONFLICT,
                FieldErrors::from([("username".to_owned(), why)]),
            ),
            Err(other) => return Err(other),
        },
        Err(errors) => (StatusCode::UNPROCESSABLE_ENTITY, errors),
    };
    // The password is never echoed back into the page.
    let form = CreateForm {
        password: String::new(),
        ..form
    };
    Ok((
        status,
        render(&page(&state, page_user, form, errors).await?)?,
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
        password: None,
    };
    super::update(&state, &page_user.user, id, changes).await?;
    Ok(Redirect::to("/admin/users"))
}
