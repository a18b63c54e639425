//! Sign-in through the team's identity provider: `/auth/oidc/start` sends the person to
//! the provider with PKCE, a nonce and a state, remembering them in a sealed cookie;
//! `/auth/oidc/callback` checks the state against that cookie, exchanges the code, has
//! the ID token verified in full (`credentials::oidc`), opens the account the policy
//! names (`services::sign_in`) and signs the session in as a password sign-in does.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use tower_sessions::Session;
use tower_sessions::cookie::{Cookie, SameSite};

use super::signin::{local_path, open_session, page};
use crate::credentials::oidc::{OidcError, PENDING_FOR, Pending};
use crate::error::AppError;
use crate::services::sign_in::{SignInError, account_for};
use crate::state::AppState;
use crate::web::ApiQuery;

/// The cookie that carries a sign-in under way, sealed.
const PENDING_COOKIE: &str = "verdict_oidc";

/// The path the cookie is sent to: the callback only.
const COOKIE_PATH: &str = "/auth/oidc";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/oidc/start", get(start))
        .route("/auth/oidc/callback", get(callback))
}

#[derive(Deserialize)]
struct StartQuery {
    next: Option<String>,
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The `Set-Cookie` of the pending sign-in (`value`), or of its removal (`None`).
fn pending_cookie(value: Option<String>, secure: bool) -> Option<HeaderValue> {
    let gone = value.is_none();
    let mut cookie = Cookie::build((PENDING_COOKIE, value.unwrap_or_default()))
        .path(COOKIE_PATH)
        .http_only(true)
        // Lax: the provider sends the person back with a top-level GET, which carries it.
        .same_site(SameSite::Lax)
        .secure(secure)
        .build();
    if gone {
        cookie.make_removal();
    } else {
        cookie.set_max_age(time::Duration::try_from(PENDING_FOR).ok());
    }
    HeaderValue::from_str(&cookie.to_string()).ok()
}

/// The sign-in page saying why, with `status`, the pending cookie removed.
fn refused(
    state: &AppState,
    headers: &HeaderMap,
    next: String,
    why: String,
    status: StatusCode,
) -> Result<Response, AppError> {
    let mut response = page(state, headers, next, String::new(), Some(why), status)?;
    if let Some(gone) = pending_cookie(None, state.config().cookie_secure) {
        response.headers_mut().append(header::SET_COOKIE, gone);
    }
    Ok(response)
}

fn status_of(e: &OidcError) -> StatusCode {
    match e {
        OidcError::Discovery { .. } => StatusCode::SERVICE_UNAVAILABLE,
        OidcError::Setup(_) => StatusCode::INTERNAL_SERVER_ERROR,
        OidcError::Exchange(_) | OidcError::Untrusted(_) => StatusCode::BAD_REQUEST,
    }
}

/// An error's words as a sentence: a capital first, a full stop last.
fn sentence(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let mut chars = text.chars();
    let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

/// `GET /auth/oidc/start?next=`: off to the provider.
async fn start(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StartQuery>,
) -> Result<Response, AppError> {
    let (Some(oidc), Some(key)) = (state.oidc(), state.config().sealing_key.as_ref()) else {
        return Err(AppError::NotFound);
    };
    let next = local_path(query.next.as_deref());
    let (url, pending) = match oidc.begin(next.clone(), now()).await {
        Ok(begun) => begun,
        Err(e) => {
            tracing::warn!(err = %e, "sign-in through the identity provider could not begin");
            return refused(&state, &headers, next, sentence(&e), status_of(&e));
        }
    };
    let mut response = Redirect::to(&url).into_response();
    if let Some(cookie) = pending_cookie(Some(pending.seal(key)), state.config().cookie_secure) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
    /// The issuer (RFC 9207), when the provider says it.
    iss: Option<String>,
}

/// `GET /auth/oidc/callback`: back from the provider.
async fn callback(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<CallbackQuery>,
) -> Result<Response, AppError> {
    let (Some(oidc), Some(key)) = (state.oidc(), state.config().sealing_key.as_ref()) else {
        return Err(AppError::NotFound);
    };
    let home = "/".to_owned();
    if let Some(error) = &query.error {
        // Anyone can send a browser here with any error and description: both are only
        // logged, and the page says what the code means in words of ours.
        tracing::info!(
            error = %error,
            description = query.error_description.as_deref().unwrap_or(""),
            "the identity provider sent the browser back without a sign-in"
        );
        let why = verdict_core::sign_in::provider_refusal(error).to_owned();
        return refused(&state, &headers, home, why, StatusCode::UNAUTHORIZED);
    }
    let Some(pending) = super::csrf::cookie(&headers, PENDING_COOKIE)
        .and_then(|sealed| Pending::open(&sealed, key, now()))
    else {
        let why = "This sign-in ran out or was begun in another browser: sign in again.";
        return refused(&state, &headers, home, why.into(), StatusCode::BAD_REQUEST);
    };
    if query.state.as_deref() != Some(pending.state.as_str()) {
        let why = "This sign-in's state is not the one this browser began: sign in again.";
        return refused(&state, &headers, home, why.into(), StatusCode::BAD_REQUEST);
    }
    if query
        .iss
        .as_deref()
        .is_some_and(|iss| iss.trim_end_matches('/') != oidc.config().issuer.trim_end_matches('/'))
    {
        let why = "The answer came from another identity provider than this server's.";
        return refused(&state, &headers, home, why.into(), StatusCode::BAD_REQUEST);
    }
    let Some(code) = query.code.as_deref().filter(|c| !c.is_empty()) else {
        let why = "Your identity provider sent no code: sign in again.";
        return refused(&state, &headers, home, why.into(), StatusCode::BAD_REQUEST);
    };
    let claims = match oidc.finish(code, &pending).await {
        Ok(claims) => claims,
        Err(e) => {
            tracing::warn!(err = %e, "a sign-in through the identity provider failed");
            return refused(&state, &headers, pending.next, sentence(&e), status_of(&e));
        }
    };
    let policy = &oidc.config().policy;
    let user = match account_for(state.store(), state.hasher(), policy, &claims).await {
        Ok(user) => user,
        Err(SignInError::Refused(why)) => {
            tracing::info!(subject = %claims.subject, %why, "a sign-in through the identity provider was refused");
            return refused(
                &state,
                &headers,
                pending.next,
                sentence(&why),
                StatusCode::FORBIDDEN,
            );
        }
        Err(SignInError::Failed(e)) => return Err(e.into()),
    };
    open_session(&session, &user).await?;
    tracing::info!(username = %user.username, "signed in through the identity provider");
    let mut response = Redirect::to(&pending.next).into_response();
    if let Some(gone) = pending_cookie(None, state.config().cookie_secure) {
        response.headers_mut().append(header::SET_COOKIE, gone);
    }
    Ok(response)
}
