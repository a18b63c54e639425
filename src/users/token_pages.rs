//! `/tokens`: a signed-in user's API tokens (an admin's: everyone's), made and revoked
//! from a page. A new token's secret is shown once, in the answer to the form that made
//! it, and never stored.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::Role;
use crate::auth::csrf::CsrfForm;
use crate::error::AppResult;
use crate::services::ServiceError;
use crate::services::accounts::{self, MAX_TOKEN_NAME_LEN};
use crate::state::AppState;
use crate::store::tokens::ApiToken;
use crate::web::{ApiPath, Layout, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/tokens", get(tokens_page).post(create))
        .route("/tokens/{id}/revoke", post(revoke))
}

/// A token just made, with the secret shown this once.
struct Made {
    name: String,
    username: String,
    secret: String,
}

#[derive(Template)]
#[template(path = "users/tokens.html")]
struct TokensPage {
    layout: Layout,
    /// Whether the viewer is an admin: every user's tokens, with their owners.
    admin: bool,
    me: String,
    tokens: Vec<ApiToken>,
    /// Admins only: who a token can be made for.
    usernames: Vec<String>,
    made: Option<Made>,
    /// The name typed, kept when the form is refused, and why it was.
    name: String,
    error: Option<String>,
    max_name: usize,
}

async fn page(
    state: &AppState,
    page_user: PageUser,
    made: Option<Made>,
    name: String,
    error: Option<String>,
) -> AppResult<TokensPage> {
    let admin = page_user.user.role >= Role::Admin;
    let tokens = accounts::visible_tokens(state.store(), &page_user.user, admin).await?;
    let usernames = if admin {
        state
            .store()
            .list_users()
            .await?
            .into_iter()
            .filter(|u| u.active)
            .map(|u| u.username)
            .collect()
    } else {
        Vec::new()
    };
    Ok(TokensPage {
        me: page_user.user.username.clone(),
        layout: page_user.layout,
        admin,
        tokens,
        usernames,
        made,
        name,
        error,
        max_name: MAX_TOKEN_NAME_LEN,
    })
}

async fn tokens_page(page_user: PageUser, State(state): State<AppState>) -> AppResult<Response> {
    Ok(render(&page(&state, page_user, None, String::new(), None).await?)?.into_response())
}

#[derive(Deserialize)]
struct CreateForm {
    #[serde(default)]
    name: String,
    /// Admins: whose token (default: their own).
    username: Option<String>,
}

async fn create(
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<CreateForm>,
) -> AppResult<Response> {
    let made = accounts::create_token(
        state.store(),
        &page_user.user,
        Some(&form.name),
        form.username.as_deref(),
    )
    .await;
    match made {
        Ok((token, secret)) => {
            let made = Made {
                name: token.name,
                username: token.username,
                secret,
            };
            let html = render(&page(&state, page_user, Some(made), String::new(), None).await?)?;
            // The secret is in this page only: no cache may keep it.
            let no_store = [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))];
            Ok((StatusCode::CREATED, no_store, html).into_response())
        }
        Err(ServiceError::Invalid(fields)) => {
            let why = fields
                .iter()
                .map(|(field, why)| format!("{} {why}", capitalised(field)))
                .collect::<Vec<_>>()
                .join("; ");
            let html = render(&page(&state, page_user, None, form.name, Some(why)).await?)?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, html).into_response())
        }
        Err(other) => Err(other.into()),
    }
}

fn capitalised(field: &str) -> String {
    let mut chars = field.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[derive(Deserialize)]
struct RevokeForm {}

async fn revoke(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(RevokeForm {}): CsrfForm<RevokeForm>,
) -> AppResult<Redirect> {
    accounts::revoke_token(state.store(), &page_user.user, id).await?;
    Ok(Redirect::to("/tokens"))
}
