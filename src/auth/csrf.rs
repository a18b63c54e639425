//! CSRF protection: a synchronizer token kept in the server-side session.
//!
//! Every HTML form carries the session's token in a hidden `csrf_token` field, and
//! cookie-authenticated API calls carry it in `X-CSRF-Token`. The token lives in the
//! session store rather than in a second cookie (the double-submit pattern), so it can
//! neither be planted by a sibling subdomain nor outlive the session. Requests a browser
//! marks as cross-site are refused before the token is looked at.

use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tower_sessions::Session;

use argon2::password_hash::rand_core::{OsRng, RngCore};

use crate::error::AppError;
use crate::state::AppState;

const TOKEN_KEY: &str = "csrf_token";
/// The header that carries the token on API calls.
pub const HEADER: &str = "x-csrf-token";
/// The form field that carries the token.
pub const FIELD: &str = "csrf_token";

fn session_err(e: tower_sessions::session::Error) -> AppError {
    AppError::internal(e)
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
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    let token = URL_SAFE_NO_PAD.encode(bytes);
    session
        .insert(TOKEN_KEY, &token)
        .await
        .map_err(session_err)?;
    Ok(token)
}

/// Checks a submitted token against the session's, in constant time.
pub async fn verify(session: &Session, sent: Option<&str>) -> Result<(), AppError> {
    let expected = session
        .get::<String>(TOKEN_KEY)
        .await
        .map_err(session_err)?;
    match (expected, sent) {
        (Some(expected), Some(sent)) if constant_time_eq(expected.as_bytes(), sent.as_bytes()) => {
            Ok(())
        }
        _ => Err(AppError::Forbidden),
    }
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
        return Err(AppError::Forbidden);
    }
    if let (Some(origin), Some(host)) =
        (value(header::ORIGIN.as_str()), value(header::HOST.as_str()))
    {
        let origin_host = origin
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(origin);
        if origin != "null" && origin_host != host {
            return Err(AppError::Forbidden);
        }
    }
    Ok(())
}

/// A URL-encoded form whose `csrf_token` field matched the session's token.
pub struct CsrfForm<T>(pub T);

#[derive(Deserialize)]
struct TokenField {
    csrf_token: Option<String>,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for CsrfForm<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, AppError> {
        same_origin(req.headers())?;
        let session = req
            .extensions()
            .get::<Session>()
            .cloned()
            .ok_or_else(|| AppError::internal("session layer missing"))?;
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| match e.status() {
                axum::http::StatusCode::PAYLOAD_TOO_LARGE => crate::web::too_large(state),
                _ => AppError::BadRequest(e.body_text()),
            })?;
        let field: TokenField = serde_urlencoded::from_bytes(&bytes)
            .map_err(|e| AppError::BadRequest(format!("malformed form: {e}")))?;
        verify(&session, field.csrf_token.as_deref()).await?;
        crate::web::refuse_nul_in_form(&bytes)?;
        let form = serde_urlencoded::from_bytes(&bytes)
            .map_err(|e| AppError::BadRequest(format!("malformed form: {e}")))?;
        Ok(Self(form))
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
}
