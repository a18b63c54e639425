//! Sign-in in one place: who is asking and what they may do. The extractors every
//! handler uses to name the user or role it needs (`CurrentUser`, `PageUser`,
//! `RequireLead`, `RequireAdmin`), sessions and their lifetimes, CSRF (`csrf`), and the
//! login and logout pages (`signin`). The credentials they check (password hashing, login
//! limits, token digests) sit below the web layer in `crate::credentials`, re-exported
//! here, so that the app state and the services can hold them without the web.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Method, header};
use tower_sessions::Session;

use crate::error::AppError;
use crate::state::AppState;
use crate::store::sessions::USER_ID_KEY;
use crate::web::{Layout, notice, session_of};
use verdict_core::user::User;

pub mod csrf;
pub mod oidc;
pub mod signin;
pub use crate::credentials::{limits, password, tokens};

pub use verdict_core::role::Role;

/// Session key: when the session signed in (unix seconds), for the absolute lifetime.
pub const LOGIN_AT_KEY: &str = "login_at";

/// Session key: when the session last renewed its idle expiry (unix milliseconds).
const SEEN_AT_KEY: &str = "seen_at";

/// How a request proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Session,
    Token,
}

/// The signed-in, active user making the request. Rejects with 401 otherwise.
///
/// A request is signed in by `Authorization: Bearer <token>` or by the session cookie.
/// A cookie-authenticated API call that changes state must also carry the session's CSRF
/// token in `X-CSRF-Token` (HTML forms carry it in a field, checked by `CsrfForm`).
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub user: User,
    pub via: Via,
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        if let Some(cached) = parts.extensions.get::<CurrentUser>() {
            return Ok(cached.clone());
        }
        let current = if let Some(value) = parts.headers.get(header::AUTHORIZATION) {
            let secret = value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or(AppError::Unauthorized)?;
            let user = state
                .store()
                .token_user(&tokens::digest(secret.trim()))
                .await?
                .filter(|u| u.active)
                .ok_or(AppError::Unauthorized)?;
            CurrentUser {
                user,
                via: Via::Token,
            }
        } else {
            let session = Session::from_request_parts(parts, state)
                .await
                .map_err(|_| AppError::internal("session layer missing"))?;
            let user = session_user(&session, state)
                .await?
                .ok_or(AppError::Unauthorized)?;
            let unsafe_method =
                !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
            if unsafe_method && parts.uri.path().starts_with("/api/") {
                let sent = parts
                    .headers
                    .get(csrf::HEADER)
                    .and_then(|v| v.to_str().ok());
                csrf::verify(&session, sent, csrf::Carrier::Header).await?;
            }
            CurrentUser {
                user,
                via: Via::Session,
            }
        };
        parts.extensions.insert(current.clone());
        Ok(current)
    }
}

/// The active user signed in on this session, ending the session if it has outlived its
/// absolute lifetime or its user was deactivated.
pub async fn session_user(session: &Session, state: &AppState) -> Result<Option<User>, AppError> {
    let session_err = |e: tower_sessions::session::Error| AppError::internal(e);
    let Some(user_id) = session
        .get::<uuid::Uuid>(USER_ID_KEY)
        .await
        .map_err(session_err)?
    else {
        return Ok(None);
    };
    let login_at = session
        .get::<i64>(LOGIN_AT_KEY)
        .await
        .map_err(session_err)?
        .unwrap_or(0);
    let age = chrono::Utc::now().timestamp().saturating_sub(login_at);
    let too_old = age < 0 || age as u64 > state.config().session_absolute.as_secs();
    let user = state
        .store()
        .signed_in_user(user_id)
        .await?
        .filter(|u| u.active);
    if too_old || user.is_none() {
        session.flush().await.map_err(session_err)?;
        return Ok(None);
    }
    // The idle lifetime counts from the last request, but a session is only saved (and
    // its expiry pushed back) when it changes: renewing it once a tenth of the idle time
    // has passed keeps an active user signed in at the cost of one write per interval.
    let now_ms = chrono::Utc::now().timestamp_millis();
    let seen_at = session
        .get::<i64>(SEEN_AT_KEY)
        .await
        .map_err(session_err)?
        .unwrap_or(0);
    let refresh_ms =
        i64::try_from(state.config().session_idle.as_millis() / 10).unwrap_or(i64::MAX);
    if now_ms.saturating_sub(seen_at) >= refresh_ms {
        session
            .insert(SEEN_AT_KEY, now_ms)
            .await
            .map_err(session_err)?;
    }
    Ok(user)
}

/// A signed-in lead or admin; 403 for a rater.
#[derive(Debug, Clone)]
pub struct RequireLead(pub User);

/// A signed-in admin; 403 for anyone else.
#[derive(Debug, Clone)]
pub struct RequireAdmin(pub User);

impl FromRequestParts<AppState> for RequireLead {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let CurrentUser { user, .. } = CurrentUser::from_request_parts(parts, state).await?;
        if user.role >= Role::Lead {
            Ok(Self(user))
        } else {
            Err(AppError::Forbidden)
        }
    }
}

impl FromRequestParts<AppState> for RequireAdmin {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let CurrentUser { user, .. } = CurrentUser::from_request_parts(parts, state).await?;
        if user.role >= Role::Admin {
            Ok(Self(user))
        } else {
            Err(AppError::Forbidden)
        }
    }
}

/// A signed-in user visiting a page, with the layout filled in. Pages that need a higher
/// role also sit behind a `RequireLead`/`RequireAdmin` route layer.
pub struct PageUser {
    pub user: User,
    pub layout: Layout,
}

impl FromRequestParts<AppState> for PageUser {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let CurrentUser { user, .. } = CurrentUser::from_request_parts(parts, state).await?;
        let session = session_of(parts)?;
        let csrf_token = csrf::token(&session).await?;
        let returned = state.store().returned_for(user.id).await?;
        // A page shown takes the notice waiting for it; an action sent (a POST) leaves it
        // for the page that follows.
        let notice = if parts.method == Method::GET {
            notice::take(&session).await?
        } else {
            None
        };
        Ok(Self {
            user: user.clone(),
            layout: Layout {
                user: Some(user),
                csrf_token,
                returned,
                notice,
            },
        })
    }
}
