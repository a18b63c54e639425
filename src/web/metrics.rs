//! `/metrics` for operators (see [`crate::telemetry`]): every request counted and timed
//! by the route it matched, and the figures served to scrapers the server admits.

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::config::MetricsRefusal;
use crate::error::AppError;
use crate::state::AppState;

/// Times and counts every request the router answers (a layer on every route, where the
/// matched route is known).
pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = crate::telemetry::method_label(req.method());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let response = next.run(req).await;
    state.telemetry().record(
        method,
        &route,
        response.status(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// The token of an `Authorization: Bearer` header, if the request has one.
fn bearer_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
}

/// `GET /metrics`.
async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match state.config().metrics.admits(bearer_of(&headers)) {
        Ok(()) => {}
        // A scraper is no person to send to the sign-in page: a plain 401 that says what
        // to send.
        Err(MetricsRefusal::NoToken) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"verdict metrics\""),
                )],
                "send the metrics token as Authorization: Bearer <token>\n",
            )
                .into_response();
        }
        Err(MetricsRefusal::NotServed) => return AppError::NotFound.into_response(),
    }
    let text = state.telemetry().scrape(state.store()).await;
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_token_is_read() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            headers
        };
        assert_eq!(bearer_of(&with("Bearer abc")), Some("abc"));
        assert_eq!(bearer_of(&with("Basic c2NyYXBlcg==")), None);
        assert_eq!(bearer_of(&HeaderMap::new()), None);
    }
}
