//! The vendored Pyodide, served by verdict itself so the Python runner works on a machine
//! without internet: a fixed list of files from `Config::pyodide_dir`, under a path that
//! carries the version, so browsers may keep them for a year.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncReadExt;

use crate::error::AppError;

/// The files the Python worker loads, with their content types: all the runtime needs
/// (the package's other files are documentation, types and consoles). Nothing outside this
/// list is served, and a request's path names one of these or gets 404, so no path from a
/// request ever reaches the file system.
pub const FILES: [(&str, &str); 5] = [
    ("pyodide.mjs", "text/javascript; charset=utf-8"),
    ("pyodide.asm.mjs", "text/javascript; charset=utf-8"),
    ("pyodide.asm.wasm", "application/wasm"),
    ("python_stdlib.zip", "application/zip"),
    ("pyodide-lock.json", "application/json"),
];

/// The files change only with the version, which is in their path.
const CACHE_FOREVER: &str = "public, max-age=31536000, immutable";

/// The Pyodide this server serves, found once at start-up.
#[derive(Debug, Clone)]
pub struct Pyodide {
    dir: PathBuf,
    /// `None`: no usable Pyodide in `dir` (the Python runner says it is not installed).
    version: Option<String>,
}

impl Pyodide {
    /// Looks in `dir` for the package (its `package.json` names the version) and every
    /// file of [`FILES`]; logs a one-line hint when something is missing. Reads with
    /// `std::fs`: it runs once, as the router is built, on a few small files.
    pub fn discover(dir: &Path) -> Self {
        let version = match find_version(dir) {
            Ok(version) => Some(version),
            Err(why) => {
                tracing::warn!(
                    "the Python code runner is off: {why} (run scripts/vendor-pyodide, or \
                     point --pyodide-dir / VERDICT_PYODIDE_DIR at an installed pyodide package)"
                );
                None
            }
        };
        Self {
            dir: dir.to_owned(),
            version,
        }
    }

    /// The version served, if any.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The path the files are served under, e.g. `/runner/pyodide/314.0.7/`.
    pub fn index_path(&self) -> Option<String> {
        self.version
            .as_deref()
            .map(|version| format!("/runner/pyodide/{version}/"))
    }
}

/// The package's version, when `dir` holds it and every file the runtime needs.
pub(super) fn find_version(dir: &Path) -> Result<String, String> {
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|err| format!("cannot read {}: {err}", manifest.display()))?;
    let package: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| format!("{} is not JSON: {err}", manifest.display()))?;
    let version = package["version"].as_str().unwrap_or_default();
    if !is_plain_version(version) {
        return Err(format!(
            "{} names no plain version (got {version:?})",
            manifest.display()
        ));
    }
    if let Some((missing, _)) = FILES.iter().find(|(name, _)| !dir.join(name).is_file()) {
        return Err(format!("{} has no {missing}", dir.display()));
    }
    Ok(version.to_owned())
}

/// A version fit to stand in a URL path and a Content-Security-Policy as it is.
fn is_plain_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 64
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'+')
        && !version.contains("..")
}

/// `GET /runner/pyodide/{version}/{file}`: one of [`FILES`] of the version served, with
/// its content type, cached for a year, and an ETag (a matching `If-None-Match` gets 304);
/// anything else 404.
pub async fn serve(
    State(pyodide): State<std::sync::Arc<Pyodide>>,
    UrlPath((version, file)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if pyodide.version() != Some(version.as_str()) {
        return Err(AppError::NotFound);
    }
    let (name, content_type) = FILES
        .iter()
        .find(|(name, _)| *name == file)
        .ok_or(AppError::NotFound)?;
    let path = pyodide.dir.join(name);
    // A file removed since start-up is not found, not an error of the server.
    let metadata = tokio::fs::metadata(&path)
        .await
        .map_err(|_| AppError::NotFound)?;
    let etag = etag(&version, &metadata)?;
    let cache = HeaderValue::from_static(CACHE_FOREVER);
    if matches_etag(&headers, &etag) {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag), (header::CACHE_CONTROL, cache)],
        )
            .into_response());
    }
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|_| AppError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CONTENT_LENGTH, HeaderValue::from(metadata.len())),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, cache),
        ],
        Body::from_stream(chunks(file)),
    )
        .into_response())
}

/// An ETag from what identifies the file's content without reading it (9 MiB for the
/// WebAssembly): the version, its length and its modification time.
fn etag(version: &str, metadata: &std::fs::Metadata) -> Result<HeaderValue, AppError> {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos());
    HeaderValue::from_str(&format!("\"{version}-{:x}-{modified:x}\"", metadata.len()))
        .map_err(AppError::internal)
}

/// Whether `If-None-Match` names `etag` (or `*`), among others or alone, weak or strong
/// (a compressing proxy may have weakened it).
fn matches_etag(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let Ok(ours) = etag.to_str() else {
        return false;
    };
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == ours)
}

/// The file as a stream of chunks, so a large file is sent without holding it in memory.
fn chunks(file: tokio::fs::File) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> {
    futures_util::stream::try_unfold(file, |mut file| async move {
        let mut buffer = vec![0; 64 * 1024];
        let read = file.read(&mut buffer).await?;
        if read == 0 {
            return Ok(None);
        }
        buffer.truncate(read);
        Ok(Some((Bytes::from(buffer), file)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_versions_go_into_paths() {
        assert!(is_plain_version("314.0.7"));
        assert!(is_plain_version("315.0.0-alpha.2"));
        for bad in ["", "1/../2", "..", "1 2", "1;script-src *", "1'", "a\nb"] {
            assert!(!is_plain_version(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_directory_without_pyodide_serves_none_and_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            find_version(dir.path())
                .unwrap_err()
                .contains("package.json")
        );
        std::fs::write(dir.path().join("package.json"), r#"{"version": "1.2.3"}"#).unwrap();
        assert!(
            find_version(dir.path())
                .unwrap_err()
                .contains("pyodide.mjs")
        );
        for (name, _) in FILES {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        assert_eq!(find_version(dir.path()).unwrap(), "1.2.3");
        assert_eq!(
            Pyodide::discover(dir.path()).index_path().as_deref(),
            Some("/runner/pyodide/1.2.3/")
        );
    }

    #[test]
    fn the_vendoring_script_checks_every_file_served() {
        let script = include_str!("../../scripts/vendor-pyodide");
        for (name, _) in FILES {
            assert!(
                script.contains(name),
                "scripts/vendor-pyodide checks {name}"
            );
        }
    }

    #[test]
    fn if_none_match_is_read_as_a_list() {
        let etag = HeaderValue::from_static("\"1-2-3\"");
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static(value));
            matches_etag(&headers, &etag)
        };
        assert!(with("\"1-2-3\""));
        assert!(with("\"0\", W/\"1-2-3\""));
        assert!(with("*"));
        assert!(!with("\"1-2-4\""));
        assert!(!matches_etag(&HeaderMap::new(), &etag));
    }
}
