//! Static files (CSS, scripts), embedded in the binary so it runs from any directory.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

use crate::error::AppError;

#[derive(RustEmbed)]
#[folder = "static/"]
struct Assets;

/// `GET /static/{*path}`: the file with an ETag; a matching `If-None-Match` gets 304.
pub async fn serve(Path(path): Path<String>, headers: HeaderMap) -> Result<Response, AppError> {
    let file = Assets::get(&path).ok_or(AppError::NotFound)?;
    let etag = format!(
        "\"{}\"",
        file.metadata
            .sha256_hash()
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let etag = HeaderValue::from_str(&etag).map_err(AppError::internal)?;
    // Revalidate after an hour: files change only with a new binary.
    let cache = HeaderValue::from_static("public, max-age=3600");
    if headers.get(header::IF_NONE_MATCH) == Some(&etag) {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag), (header::CACHE_CONTROL, cache)],
        )
            .into_response());
    }
    let mime = HeaderValue::from_str(file.metadata.mimetype()).map_err(AppError::internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, mime),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, cache),
        ],
        file.data,
    )
        .into_response())
}
