//! CSRF protection, and the size limits of page forms.
//!
//! Signed-in forms carry the session's synchronizer token in a hidden `csrf_token` field,
//! and cookie-authenticated API calls carry it in `X-CSRF-Token`. That token lives in the
//! session store rather than in a second cookie, so it can neither be planted by a
//! sibling subdomain nor outlive the session.
//!
//! The sign-in form is the exception: before sign-in there is no session, and making one
//! for every visitor of `/login` would let anyone fill the sessions table. Its token is a
//! double-submit cookie instead: `GET /login` sets a random value in the `HttpOnly`,
//! `SameSite=Lax` cookie [`LOGIN_COOKIE`] (path `/login`) and puts the same value in the
//! form; `POST /login` must bring both, equal. Another site can neither read the cookie
//! nor have the browser send it with a cross-site POST, and needs no server secret, so any
//! instance can check a form another instance served. The remaining gap of the pattern (a
//! sibling subdomain planting a cookie it chose) only allows signing a victim into an
//! account the attacker holds; the `Origin` and `Sec-Fetch-Site` checks below refuse
//! what browsers mark as cross-site on top of that.
//!
//! Requests a browser marks as cross-site are refused before any token is looked at, and
//! a form's body is read only up to its route's limit.

use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tower_sessions::Session;
use tower_sessions::cookie::{Cookie, SameSite};

use argon2::password_hash::rand_core::{OsRng, RngCore};

use crate::error::AppError;
use crate::state::AppState;

const TOKEN_KEY: &str = "csrf_token";
/// The header that carries the token on API calls.
pub const HEADER: &str = "x-csrf-token";
/// The form field that carries the token.
pub const FIELD: &str = "csrf_token";
/// The cookie holding the sign-in form's token (see the module comment).
pub const LOGIN_COOKIE: &str = "verdict_login_csrf";

/// The largest body of a page form, in bytes: the rating form carries seven free-text
/// explanations, percent-encoded (up to three bytes per character on the wire).
pub const PAGE_FORM_LIMIT: usize = 1024 * 1024;
/// The largest body of the sign-in and sign-out forms, in bytes: a token, a username, a
/// password of at most 1,024 characters and a return path fit several times over.
pub const SMALL_FORM_LIMIT: usize = 16 * 1024;

/// Where a request was expected to carry its token, so a refusal can say so.
#[derive(Debug, Clone, Copy)]
pub enum Carrier {
    /// The `X-CSRF-Token` header of a cookie-authenticated API call.
    Header,
    /// The hidden `csrf_token` field of a page form.
    Form,
}

impl Carrier {
    fn refusal(self, sent: bool) -> AppError {
        AppError::Csrf(match (self, sent) {
            (Carrier::Header, false) => "missing CSRF token: a call made with the session cookie \
                 that changes something must send the page's token in the X-CSRF-Token header"
                .into(),
            (Carrier::Header, true) => "wrong CSRF token in the X-CSRF-Token header: send the \
                 token of a page loaded in this session"
                .into(),
            (Carrier::Form, false) => "the form has no CSRF token (its csrf_token field is \
                 missing): reload the page and submit it again"
                .into(),
            (Carrier::Form, true) => "the form's CSRF token is wrong or has expired: reload the \
                 page and submit it again"
                .into(),
        })
    }
}

fn session_err(e: tower_sessions::session::Error) -> AppError {
    AppError::internal(e)
}

/// 256 random bits, URL-safe.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The session's token, made on first use.
pub async fn token(session: &Session) -> Result<String, AppError> {
    if let Some(token) = session
        .get::<String>(TOKEN_KEY)
        .await
        .map_err(session_err)?
    {
        return Ok(token);
    }
    rotate(session).await
}

/// Replaces the session's token (at login, so a token seen before login is worthless).
pub async fn rotate(session: &Session) -> Result<String, AppError> {
    let token = random_token();
    session
        .insert(TOKEN_KEY, &token)
        .await
        .map_err(session_err)?;
    Ok(token)
}

/// The session's token if it has one (without making one).
async fn expected(session: &Session) -> Result<Option<String>, AppError> {
    session.get::<String>(TOKEN_KEY).await.map_err(session_err)
}

/// Checks a token against the expected one, in constant time.
fn check(expected: Option<&str>, sent: Option<&str>, carrier: Carrier) -> Result<(), AppError> {
    match (expected, sent) {
        (Some(expected), Some(sent)) if constant_time_eq(expected.as_bytes(), sent.as_bytes()) => {
            Ok(())
        }
        (_, sent) => Err(carrier.refusal(sent.is_some_and(|s| !s.is_empty()))),
    }
}

/// Checks a submitted token against the session's.
pub async fn verify(
    session: &Session,
    sent: Option<&str>,
    carrier: Carrier,
) -> Result<(), AppError> {
    check(expected(session).await?.as_deref(), sent, carrier)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses a request the browser marks as coming from another site, or whose `Origin`
/// names another host than the one it was sent to.
pub fn same_origin(headers: &HeaderMap) -> Result<(), AppError> {
    let value = |name| {
        headers
            .get(name)
            .and_then(|v: &header::HeaderValue| v.to_str().ok())
    };
    if value("sec-fetch-site") == Some("cross-site") {
        return Err(AppError::Csrf(
            "cross-site request refused: the browser says it comes from another site".into(),
        ));
    }
    if let (Some(origin), Some(host)) =
        (value(header::ORIGIN.as_str()), value(header::HOST.as_str()))
    {
        let origin_host = origin
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(origin);
        if origin != "null" && origin_host != host {
            return Err(AppError::Csrf(
                "cross-site request refused: its Origin is not this site".into(),
            ));
        }
    }
    Ok(())
}

/// The sign-in form's token from the request's cookie, if it has a well-formed one.
pub fn login_cookie(headers: &HeaderMap) -> Option<String> {
    cookie(headers, LOGIN_COOKIE).filter(|v| v.len() == 43 && URL_SAFE_NO_PAD.decode(v).is_ok())
}

/// The value of the request's cookie `name`, if it sent one.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
}

/// The sign-in form's token: the one the browser already holds, or a new one with the
/// `Set-Cookie` value that hands it over.
pub fn login_token(headers: &HeaderMap, secure: bool) -> (String, Option<HeaderValue>) {
    if let Some(token) = login_cookie(headers) {
        return (token, None);
    }
    let token = random_token();
    let cookie = Cookie::build((LOGIN_COOKIE, token.clone()))
        .path("/login")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .build();
    let value = HeaderValue::from_str(&cookie.to_string()).ok();
    (token, value)
}

#[derive(Deserialize)]
struct TokenField {
    csrf_token: Option<String>,
}

/// The form's `csrf_token` field.
fn token_field(bytes: &[u8]) -> Result<Option<String>, AppError> {
    let field: TokenField = serde_urlencoded::from_bytes(bytes)
        .map_err(|e| AppError::BadRequest(format!("malformed form: {e}")))?;
    Ok(field.csrf_token)
}

/// The form's fields, once its token has been checked.
/// Reads a form body of at most `limit` bytes, checks that its token is `expected`, and
/// parses it.
async fn checked_form<T: DeserializeOwned>(
    req: Request,
    limit: usize,
    state: &AppState,
    expected: &str,
) -> Result<T, AppError> {
    let bytes = crate::body::read_limited(req, limit, state, "form").await?;
    check(
        Some(expected),
        token_field(&bytes)?.as_deref(),
        Carrier::Form,
    )?;
    parse_form(&bytes)
}

fn parse_form<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    crate::body::refuse_nul_in_form(bytes)?;
    serde_urlencoded::from_bytes(bytes)
        .map_err(|e| AppError::BadRequest(format!("malformed form: {e}")))
}

/// A URL-encoded form of a signed-in page whose `csrf_token` field matched the session's
/// token, and whose body was at most `LIMIT` bytes.
pub struct CsrfForm<T, const LIMIT: usize = PAGE_FORM_LIMIT>(pub T);

impl<T: DeserializeOwned + Send, const LIMIT: usize> FromRequest<AppState> for CsrfForm<T, LIMIT> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, AppError> {
        same_origin(req.headers())?;
        let session = req
            .extensions()
            .get::<Session>()
            .cloned()
            .ok_or_else(|| AppError::internal("session layer missing"))?;
        // A session without a token cannot match any form: refuse before reading the body.
        let Some(expected) = expected(&session).await? else {
            return Err(Carrier::Form.refusal(true));
        };
        Ok(Self(checked_form(req, LIMIT, state, &expected).await?))
    }
}

/// The sign-in form: its `csrf_token` field matched the [`LOGIN_COOKIE`] cookie, and its
/// body was at most [`SMALL_FORM_LIMIT`] bytes.
pub struct LoginCsrfForm<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequest<AppState> for LoginCsrfForm<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, AppError> {
        same_origin(req.headers())?;
        // Without the cookie no token can match: refuse before reading the body.
        let Some(expected) = login_cookie(req.headers()) else {
            return Err(AppError::Csrf(
                "the sign-in form's CSRF cookie is missing: load the sign-in page again \
                 (it needs cookies) and submit it from there"
                    .into(),
            ));
        };
        Ok(Self(
            checked_form(req, SMALL_FORM_LIMIT, state, &expected).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn cross_site_requests_are_refused() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "verdict.example:8080".parse().unwrap());
        assert!(same_origin(&headers).is_ok());
        headers.insert(
            header::ORIGIN,
            "http://verdict.example:8080".parse().unwrap(),
        );
        assert!(same_origin(&headers).is_ok());
        headers.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(same_origin(&headers).is_err());
        headers.remove(header::ORIGIN);
        headers.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(same_origin(&headers).is_err());
    }

    #[test]
    fn refusals_name_the_missing_or_wrong_token() {
        let message = |r: Result<(), AppError>| r.unwrap_err().to_string();
        let header_missing = message(check(Some("t"), None, Carrier::Header));
        assert!(
            header_missing.starts_with("missing CSRF token")
                && header_missing.contains("X-CSRF-Token")
        );
        let header_wrong = message(check(Some("t"), Some("u"), Carrier::Header));
        assert!(header_wrong.starts_with("wrong CSRF token in the X-CSRF-Token header"));
        assert!(message(check(Some("t"), None, Carrier::Form)).contains("has no CSRF token"));
        assert!(message(check(None, Some("u"), Carrier::Form)).contains("wrong or has expired"));
        assert!(check(Some("t"), Some("t"), Carrier::Form).is_ok());
    }

    #[test]
    fn only_a_well_formed_login_cookie_counts() {
        let token = random_token();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("other=1; {LOGIN_COOKIE}={token}").parse().unwrap(),
        );
        assert_eq!(login_cookie(&headers), Some(token.clone()));
        assert_eq!(login_token(&headers, false), (token, None));
        headers.insert(
            header::COOKIE,
            format!("{LOGIN_COOKIE}=short").parse().unwrap(),
        );
        assert_eq!(login_cookie(&headers), None);
        let (fresh, cookie) = login_token(&headers, true);
        let cookie = cookie.unwrap().to_str().unwrap().to_owned();
        assert!(
            cookie.starts_with(&format!("{LOGIN_COOKIE}={fresh}")),
            "{cookie}"
        );
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/login"] {
            assert!(cookie.contains(attribute), "{cookie} has {attribute}");
        }
    }
}
