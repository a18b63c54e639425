//! What every route shares: the page layout, JSON bodies, error rendering, security
//! headers and static files.

use askama::Template;
use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::de::DeserializeOwned;
use tower_sessions::Session;

use crate::body::nul_in;
pub use crate::body::{read_limited, refuse_nul_in_form, too_large};
use crate::error::{AppError, ErrorBody, ErrorInfo};
use crate::state::AppState;
use verdict_core::user::User;

pub mod assets;
pub mod client;
pub mod headers;
pub mod metrics;
pub mod notice;
pub mod openapi;
pub mod paging;
pub mod shape;

/// What the base layout needs: who is signed in and the token for its logout form.
pub struct Layout {
    pub user: Option<User>,
    pub csrf_token: String,
    /// How many of the user's ratings a lead returned for revision (shown in the menu).
    pub returned: i64,
    /// What the user's last action did, shown once at the top of this page.
    pub notice: Option<notice::Notice>,
}

impl Layout {
    /// The layout for someone not signed in.
    pub fn signed_out(csrf_token: String) -> Self {
        Self {
            user: None,
            csrf_token,
            returned: 0,
            notice: None,
        }
    }
}

/// The request's session (the session layer wraps every route).
pub fn session_of(parts: &Parts) -> Result<Session, AppError> {
    parts
        .extensions
        .get::<Session>()
        .cloned()
        .ok_or_else(|| AppError::internal("session layer missing"))
}

/// Renders a page template into a response.
pub fn render(page: &impl Template) -> Result<Html<String>, AppError> {
    page.render().map(Html).map_err(AppError::internal)
}

/// A duration as every page shows one: `m:ss`, or `h:mm:ss` from an hour on, the way the
/// rating form's timer counts (static/form.js writes the same).
pub fn clock(seconds: impl std::borrow::Borrow<i32>) -> String {
    let total = (*seconds.borrow()).max(0);
    let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{secs:02}")
    } else {
        format!("{minutes}:{secs:02}")
    }
}

/// The largest JSON body the API reads: room for every explanation of a rating at its
/// longest, however escaped, and far less than a client could make the server parse.
/// (Uploads of tasks are not JSON bodies of this kind and keep the upload limit.)
pub const JSON_LIMIT: usize = 4 * 1024 * 1024;

/// A JSON request body whose rejections use the app's error format: 415 without a JSON
/// content type, 400 for malformed JSON, 422 for JSON of the wrong shape, 413 over the
/// size limit.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest<AppState> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, AppError> {
        if !is_json(req.headers()) {
            return Err(AppError::UnsupportedMediaType(
                "send the body as JSON with Content-Type: application/json".into(),
            ));
        }
        let bytes = read_limited(req, JSON_LIMIT, state, "JSON body").await?;
        // Every typed body of the API is an object, but serde also reads a struct from
        // the list of its fields in order (`[0.5, null]`), which the document does not
        // allow: said before anything is read. A `Value` body is checked by its handler.
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<serde_json::Value>()
            && first.is_some_and(|b| *b != b'{')
            && serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok()
        {
            return Err(AppError::field("body", "must be a JSON object"));
        }
        let value = shape::parse::<T>(&bytes)?;
        refuse_nul_in_json(&bytes)?;
        Ok(Self(value))
    }
}

/// Whether a request says its body is JSON (`application/json` or `application/*+json`).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(essence) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
    else {
        return false;
    };
    let essence = essence.trim().to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// NUL characters are refused wherever text comes in: SQLite would store one and
/// PostgreSQL refuse it, and no rating needs one. JSON can only spell NUL as the escape
/// `\u0000`, so the raw body is searched for it (an escape is one preceded by an odd
/// run of backslashes), and only a body that has one is parsed again to name the field.
fn refuse_nul_in_json(bytes: &[u8]) -> Result<(), AppError> {
    let escaped_nul = bytes.windows(5).enumerate().any(|(i, w)| {
        w == b"u0000" && bytes[..i].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
    });
    if !escaped_nul {
        return Ok(());
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    Err(nul_in(&nul_path(&value, "").unwrap_or_default()))
}

/// The path (`a.b`, `list.0`) of the first key or string in `value` holding a NUL.
fn nul_path(value: &serde_json::Value, at: &str) -> Option<String> {
    let join = |key: &str| {
        if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        }
    };
    match value {
        serde_json::Value::String(text) if text.contains('\0') => Some(at.to_owned()),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_path(item, &join(&i.to_string()))),
        serde_json::Value::Object(map) => map.iter().find_map(|(key, item)| {
            if key.contains('\0') {
                Some(join(key))
            } else {
                nul_path(item, &join(key))
            }
        }),
        _ => None,
    }
}

/// Screens every request before its handler runs: a body announced larger than the
/// limit gets 413 at once, without reading (or waiting for) any of it, and an address
/// with a NUL character gets 400.
pub async fn screen(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > state.config().max_upload_bytes) {
        return too_large(&state).into_response();
    }
    let target = req.uri().path_and_query().map_or("", |p| p.as_str());
    if target.to_ascii_lowercase().contains("%00") {
        return AppError::BadRequest("the address contains a NUL character".into()).into_response();
    }
    next.run(req).await
}

/// Path parameters whose rejection (e.g. an id that is not a UUID) is an app error.
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(AppError))]
pub struct ApiPath<T>(pub T);

impl From<axum::extract::rejection::PathRejection> for AppError {
    fn from(rejection: axum::extract::rejection::PathRejection) -> Self {
        AppError::BadRequest(rejection.body_text())
    }
}

/// Query parameters whose rejection is an app error. A parameter whose name or value is
/// not UTF-8 once percent-decoded is refused with 400 naming it, rather than read with
/// replacement characters (which would store text nobody sent).
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        if let Some(query) = parts.uri.query() {
            refuse_invalid_utf8_in_query(query)?;
        }
        let axum::extract::Query(value) =
            axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// 400 for the first query parameter whose name or value decodes to invalid UTF-8.
fn refuse_invalid_utf8_in_query(query: &str) -> Result<(), AppError> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .is_ok()
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !decode(name) {
            return Err(AppError::BadRequest(format!(
                "a query parameter name is not valid UTF-8: {:?}",
                percent_encoding::percent_decode_str(name).decode_utf8_lossy()
            )));
        }
        if !decode(value) {
            let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
            return Err(AppError::BadRequest(format!(
                "query parameter {name:?} is not valid UTF-8"
            )));
        }
    }
    Ok(())
}

impl From<axum::extract::rejection::QueryRejection> for AppError {
    fn from(rejection: axum::extract::rejection::QueryRejection) -> Self {
        AppError::BadRequest(rejection.body_text())
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    layout: Layout,
    status: u16,
    reason: String,
    message: String,
    request_id: Option<String>,
}

/// Finishes error responses: logs internal errors with the request id and puts that id in
/// the answer; on page routes (unless asked for JSON) turns a 401 into a trip to the
/// login page and any other error into an HTML page.
pub async fn finish_errors(req: Request, next: Next) -> Response {
    // The API answers errors in JSON; so does a page route asked for JSON by a page's
    // script (the form's saves and checks), which shows the fields named in it.
    let wants_json = req
        .headers()
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json") && !accept.contains("text/html"));
    let is_api = req.uri().path().starts_with("/api/") || wants_json;
    let is_get = req.method() == axum::http::Method::GET;
    let method = req.method().clone();
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut response = next.run(req).await;
    if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && response.extensions().get::<ErrorInfo>().is_none()
    {
        // The router's own answer has no body: give it the app's error format (the
        // router adds `Allow` to whatever comes back).
        response = AppError::MethodNotAllowed(method.to_string()).into_response();
    }
    let Some(info) = response.extensions().get::<ErrorInfo>().cloned() else {
        return response;
    };
    let request_id = info.internal.as_ref().and(request_id);
    if let Some(cause) = &info.internal {
        tracing::error!(request_id = request_id.as_deref().unwrap_or("-"), %cause, "internal error");
    }
    if is_api {
        if request_id.is_none() {
            return response;
        }
        let body = ErrorBody {
            error: info.message.clone(),
            fields: Default::default(),
            errors: vec![],
            error_count: None,
            warnings: vec![],
            request_id,
        };
        let mut fresh = (info.status, Json(body)).into_response();
        fresh.extensions_mut().insert(info);
        return fresh;
    }
    if info.status == StatusCode::UNAUTHORIZED {
        let next_path = if is_get { target } else { "/".to_owned() };
        let query = serde_urlencoded::to_string([("next", next_path)]).unwrap_or_default();
        return Redirect::to(&format!("/login?{query}")).into_response();
    }
    let page = ErrorPage {
        layout: Layout::signed_out(String::new()),
        status: info.status.as_u16(),
        reason: info.status.canonical_reason().unwrap_or("Error").to_owned(),
        message: info.message.clone(),
        request_id,
    };
    let mut fresh = match render(&page) {
        Ok(html) => (info.status, html).into_response(),
        Err(_) => (info.status, info.message.clone()).into_response(),
    };
    if let Some(retry) = response.headers().get(header::RETRY_AFTER) {
        fresh
            .headers_mut()
            .insert(header::RETRY_AFTER, retry.clone());
    }
    fresh.extensions_mut().insert(info);
    fresh
}

/// The answer for a path no route matches.
pub async fn not_found() -> AppError {
    AppError::NotFound
}

/// Liveness and readiness: 200 when the database answers, 503 otherwise.
pub async fn healthz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    match state.store().ping().await {
        Ok(()) => (
            StatusCode::OK,
            [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
            "ok",
        )
            .into_response(),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::clock;

    #[test]
    fn durations_read_as_the_timer_counts() {
        assert_eq!(clock(0), "0:00");
        assert_eq!(clock(65), "1:05");
        assert_eq!(clock(1800), "30:00");
        assert_eq!(clock(3725), "1:02:05");
        assert_eq!(clock(-5), "0:00");
    }
}
