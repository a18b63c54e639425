//! The in-browser code runner, server side: the two Web Workers that run a response's code
//! blocks in the rater's browser (static/runner.js drives them), and the vendored Pyodide
//! the Python one loads. Each worker is served on its own route with its own
//! Content-Security-Policy, which is what keeps the code it runs off the network (the
//! site's policy would let it call verdict's own API with the rater's cookies).

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::error::AppError;

pub mod install;
pub mod pyodide;

use pyodide::Pyodide;

/// What both workers share (taking the network globals away, capped output), put where
/// each has the line [`COMMON_PLACEHOLDER`]: one copy, served inside each worker.
const WORKER_COMMON: &str = include_str!("worker-common.js");
const COMMON_PLACEHOLDER: &str = "/* worker-common */";
/// The JavaScript worker's source; it needs no setting from the server.
static JS_WORKER: LazyLock<String> =
    LazyLock::new(|| include_str!("js-worker.js").replacen(COMMON_PLACEHOLDER, WORKER_COMMON, 1));
/// The Python worker's source, with a placeholder the server fills with where Pyodide is.
static PYTHON_WORKER: LazyLock<String> = LazyLock::new(|| {
    include_str!("python-worker.js").replacen(COMMON_PLACEHOLDER, WORKER_COMMON, 1)
});
const PYODIDE_INDEX_PLACEHOLDER: &str = "/* pyodide-index */ null";

/// The JavaScript worker evaluates the block (that is its job) and may load and reach
/// nothing: no `connect-src`, so `default-src 'none'` refuses every fetch, socket, import
/// and nested worker.
pub const JS_WORKER_CSP: &str = "default-src 'none'; script-src 'unsafe-eval'";

/// The routes, for any state: they need only the Pyodide found in `config`'s directory
/// (looked for once, here, as the server starts).
pub fn router<S: Clone + Send + Sync + 'static>(config: &Config) -> Router<S> {
    let pyodide = Arc::new(Pyodide::discover(&config.pyodide_dir));
    Router::new()
        .route("/runner/js-worker.js", get(js_worker))
        .route("/runner/python-worker.js", get(python_worker))
        .route("/runner/pyodide/{version}/{file}", get(pyodide::serve))
        .with_state(pyodide)
}

/// The Python worker's policy. It may load Pyodide's scripts and fetch its files, from
/// the one path they are served under, and nothing else: not verdict's API, not another
/// site. `'wasm-unsafe-eval'` lets it compile its WebAssembly; plain `eval` stays
/// refused (Pyodide does not need it, so a block cannot evaluate JavaScript text either).
///
/// A path-restricted source needs the host, taken from the request's `Host` header when
/// it is a plain `host[:port]`; otherwise (or without Pyodide) the worker may load
/// nothing, and says Python could not be loaded.
pub fn python_worker_csp(host: Option<&str>, pyodide: &Pyodide) -> String {
    match (host.and_then(plain_host), pyodide.index_path()) {
        (Some(host), Some(index)) => format!(
            "default-src 'none'; script-src {host}{index} 'wasm-unsafe-eval'; \
             connect-src {host}{index}"
        ),
        _ => "default-src 'none'; script-src 'none'; connect-src 'none'".to_owned(),
    }
}

/// `host` or `host:port` with nothing else in it (letters, digits, dots and dashes, a
/// numeric port), lower-cased; `None` for anything that could carry more into a policy.
/// IPv6 literals are refused: a policy's host sources cannot name them.
fn plain_host(value: &str) -> Option<String> {
    let (host, port) = match value.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (value, None),
    };
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && !host.starts_with(['.', '-'])
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    let port_ok = port.is_none_or(|port| {
        !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
    });
    (host_ok && port_ok).then(|| value.to_ascii_lowercase())
}

/// `GET /runner/js-worker.js`.
async fn js_worker(headers: HeaderMap) -> Result<Response, AppError> {
    worker(&headers, JS_WORKER.clone(), JS_WORKER_CSP.to_owned())
}

/// `GET /runner/python-worker.js`: the worker, told where Pyodide is served (or that it
/// is not).
async fn python_worker(
    State(pyodide): State<Arc<Pyodide>>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let index = serde_json::to_string(&pyodide.index_path()).map_err(AppError::internal)?;
    let source = PYTHON_WORKER.replacen(PYODIDE_INDEX_PLACEHOLDER, &index, 1);
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let csp = python_worker_csp(host, &pyodide);
    worker(&headers, source, csp)
}

/// A worker script with its own policy. Revalidated on every load (`no-cache`, with an
/// ETag of its content): it changes with the binary and with the Pyodide served.
fn worker(headers: &HeaderMap, source: String, csp: String) -> Result<Response, AppError> {
    let digest = Sha256::digest(source.as_bytes());
    let etag = format!(
        "\"{}\"",
        digest
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let etag = HeaderValue::from_str(&etag).map_err(AppError::internal)?;
    let csp = HeaderValue::from_str(&csp).map_err(AppError::internal)?;
    let cache = HeaderValue::from_static("no-cache");
    if headers.get(header::IF_NONE_MATCH) == Some(&etag) {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag),
                (header::CACHE_CONTROL, cache),
                (header::CONTENT_SECURITY_POLICY, csp),
            ],
        )
            .into_response());
    }
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, cache),
            (header::CONTENT_SECURITY_POLICY, csp),
        ],
        source,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_host_and_port_goes_into_the_policy() {
        assert_eq!(
            plain_host("127.0.0.1:8080").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            plain_host("Verdict.Example").as_deref(),
            Some("verdict.example")
        );
        for bad in [
            "",
            ":80",
            "a:",
            "a:80:1",
            "a:123456",
            "[::1]:80",
            "a b",
            "a;connect-src *",
            "a/b",
            "a'",
            "*.example",
            ".a",
        ] {
            assert_eq!(plain_host(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_python_worker_reaches_only_the_pyodide_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("package.json"), r#"{"version": "9.8.7"}"#).unwrap();
        for (name, _) in pyodide::FILES {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let pyodide = Pyodide::discover(dir.path());
        assert_eq!(
            python_worker_csp(Some("127.0.0.1:3000"), &pyodide),
            "default-src 'none'; script-src 127.0.0.1:3000/runner/pyodide/9.8.7/ \
             'wasm-unsafe-eval'; connect-src 127.0.0.1:3000/runner/pyodide/9.8.7/"
        );
        let closed = "default-src 'none'; script-src 'none'; connect-src 'none'";
        assert_eq!(python_worker_csp(Some("a b"), &pyodide), closed);
        assert_eq!(python_worker_csp(None, &pyodide), closed);
        let missing = Pyodide::discover(&dir.path().join("nowhere"));
        assert_eq!(python_worker_csp(Some("127.0.0.1:3000"), &missing), closed);
    }

    #[test]
    fn the_python_worker_has_its_placeholder() {
        assert_eq!(PYTHON_WORKER.matches(PYODIDE_INDEX_PLACEHOLDER).count(), 1);
    }

    #[test]
    fn each_worker_holds_the_shared_part_once() {
        for (name, source) in [("js", &*JS_WORKER), ("python", &*PYTHON_WORKER)] {
            assert_eq!(
                source.matches("function dropNetworkGlobals()").count(),
                1,
                "{name}"
            );
            assert!(!source.contains(COMMON_PLACEHOLDER), "{name}");
        }
    }
}
