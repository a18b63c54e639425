//! The login and logout pages: signing people in and out, beside the session and token
//! extractors and CSRF of the rest of `auth`, on `web`'s layout and rendering.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use tower_sessions::Session;

use super::csrf::{self, CsrfForm, LoginCsrfForm};
use super::{LOGIN_AT_KEY, session_user};
use crate::error::AppError;
use crate::state::AppState;
use crate::store::sessions::USER_ID_KEY;
use crate::web::client::ClientAddress;
use crate::web::{ApiQuery, Layout, render};
use verdict_core::user::User;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .merge(super::oidc::router())
}

#[derive(Template)]
#[template(path = "auth/login.html")]
struct LoginPage {
    layout: Layout,
    next: String,
    username: String,
    error: Option<String>,
    /// The identity provider's name, when people may sign in through it.
    provider: Option<String>,
    /// Whether the password form is offered.
    passwords: bool,
}

/// The sign-in page, with `error` said at its top and the status given. It stores
/// nothing: its form's CSRF token travels in a cookie of its own (see `csrf`).
pub(super) fn page(
    state: &AppState,
    headers: &HeaderMap,
    next: String,
    username: String,
    error: Option<String>,
    status: StatusCode,
) -> Result<Response, AppError> {
    let (token, set_cookie) = csrf::login_token(headers, state.config().cookie_secure);
    let page = LoginPage {
        layout: Layout::signed_out(token),
        next,
        username,
        error,
        provider: state.oidc().map(|oidc| oidc.config().label.clone()),
        passwords: state.config().password_sign_in,
    };
    let mut response = (status, render(&page)?).into_response();
    if let Some(cookie) = set_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// Signs `user` in on this session: a new session id (so an id planted before sign-in is
/// worthless after it), the user and the time, and a new CSRF token.
pub(super) async fn open_session(session: &Session, user: &User) -> Result<(), AppError> {
    session.cycle_id().await.map_err(session_err)?;
    session
        .insert(USER_ID_KEY, user.id)
        .await
        .map_err(session_err)?;
    session
        .insert(LOGIN_AT_KEY, chrono::Utc::now().timestamp())
        .await
        .map_err(session_err)?;
    csrf::rotate(session).await.map(|_| ())
}

#[derive(Deserialize)]
struct NextQuery {
    next: Option<String>,
}

/// Only a path on this site may be a redirect target: it starts with one `/` (not `//host`
/// or `/\host`), holds no backslash anywhere (browsers read it as `/`), and nothing but
/// visible ASCII, so no whitespace or control character (a browser drops a tab or a
/// newline inside a URL, which turns `/\t/host` into `//host`, and a header cannot hold
/// one). Anything else, and anything that does not parse as a path, gives `/`.
pub fn local_path(next: Option<&str>) -> String {
    let acceptable = |p: &str| {
        p.starts_with('/')
            && !p.starts_with("//")
            && !p.contains('\\')
            && p.bytes().all(|b| b.is_ascii_graphic())
            && p.parse::<axum::http::uri::PathAndQuery>().is_ok()
    };
    match next {
        Some(p) if acceptable(p) => p.to_owned(),
        _ => "/".to_owned(),
    }
}

fn session_err(e: tower_sessions::session::Error) -> AppError {
    AppError::internal(e)
}

/// The sign-in page. It stores nothing: its form's CSRF token travels in a cookie of
/// its own (see `csrf`), so anonymous visitors add no rows to the sessions table.
async fn login_page(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<NextQuery>,
) -> Result<Response, AppError> {
    let next = local_path(query.next.as_deref());
    if session_user(&session, &state).await?.is_some() {
        return Ok(Redirect::to(&next).into_response());
    }
    page(&state, &headers, next, String::new(), None, StatusCode::OK)
}

#[derive(Deserialize)]
struct LoginForm {
    username: String,
    password: String,
    next: Option<String>,
}

async fn login(
    State(state): State<AppState>,
    ClientAddress(client): ClientAddress,
    session: Session,
    headers: HeaderMap,
    LoginCsrfForm(form): LoginCsrfForm<LoginForm>,
) -> Result<Response, AppError> {
    let username = form.username.trim();
    let next = local_path(form.next.as_deref());
    if !state.config().password_sign_in {
        let why = "Password sign-in is off on this server: sign in through your identity provider.";
        return page(
            &state,
            &headers,
            next,
            username.to_owned(),
            Some(why.into()),
            StatusCode::FORBIDDEN,
        );
    }
    let counted = state
        .login_limiter()
        .check(state.store(), username, client)
        .await?;
    let found = state.store().credentials(username).await?;
    let (user, hash) = match found {
        Some((user, hash)) => (Some(user), Some(hash)),
        None => (None, None),
    };
    let verified = state.hasher().verify(hash, form.password).await?;
    let Some(user) = user.filter(|u| verified && u.active) else {
        // One answer for an unknown user, a wrong password and a deactivated account.
        // The form's token again, from its cookie: a failed sign-in stores nothing either.
        let wrong = Some("Wrong username or password.".into());
        return page(
            &state,
            &headers,
            next,
            username.to_owned(),
            wrong,
            StatusCode::UNAUTHORIZED,
        );
    };
    state
        .login_limiter()
        .succeeded(state.store(), counted)
        .await?;
    open_session(&session, &user).await?;
    tracing::info!(username = %user.username, "signed in");
    Ok(Redirect::to(&next).into_response())
}

#[derive(Deserialize)]
struct LogoutForm {}

async fn logout(
    session: Session,
    CsrfForm(_): CsrfForm<LogoutForm, { csrf::SMALL_FORM_LIMIT }>,
) -> Result<Redirect, AppError> {
    session.flush().await.map_err(session_err)?;
    Ok(Redirect::to("/login"))
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn redirects_stay_on_this_site() {
        assert_eq!(local_path(Some("/ratings?page=2")), "/ratings?page=2");
        for hostile in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example",
            "evil",
            "",
            "/\t/127.0.0.1:18999/",
            "/ /evil.example",
            "/x\ny",
            "/x\r\nSet-Cookie: a=b",
            "/x\u{7f}",
            "/x\\y",
            "/caf\u{e9}",
        ] {
            assert_eq!(local_path(Some(hostile)), "/", "{hostile}");
        }
        assert_eq!(local_path(None), "/");
    }
}
