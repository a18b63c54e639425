//! Security headers on every response, and `no-store` on every one that holds anyone's data.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;

/// Scripts and styles only from our own origin (no inline script, no eval), no plugins,
/// no `<base>` rewriting, no framing, forms post only to us.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// Adds the security headers to every response of `router` that does not set its own.
///
/// Every answer is `Cache-Control: no-store` unless its handler says otherwise (the
/// static assets and the code runner's files, which hold nothing of anyone's): pages and
/// API answers carry secrets shown once (a new API token, a webhook's signing secret),
/// ratings and names, none of which a shared or browser cache may keep.
pub fn apply<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    let headers: [(HeaderName, &'static str); 7] = [
        (header::CACHE_CONTROL, "no-store"),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
        (
            HeaderName::from_static("permissions-policy"),
            "camera=(), microphone=(), geolocation=()",
        ),
    ];
    headers.into_iter().fold(router, |router, (name, value)| {
        router.layer(SetResponseHeaderLayer::if_not_present(
            name,
            HeaderValue::from_static(value),
        ))
    })
}
