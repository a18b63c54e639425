//! Reading request bodies within their limits and refusing NUL characters in them: the
//! pieces both the web layer's JSON extractor and `auth`'s CSRF-checked form extractor
//! need, kept below both so neither imports the other for them.

use axum::extract::Request;
use axum::http::header;

use crate::error::AppError;
use crate::state::AppState;

/// Reads a body of at most `limit` bytes (and never more than the upload limit): a 413
/// naming `what` as soon as it is announced or found to be larger, without reading the
/// rest.
pub async fn read_limited(
    req: Request,
    limit: usize,
    state: &AppState,
    what: &'static str,
) -> Result<Vec<u8>, AppError> {
    use futures_util::StreamExt;
    let limit = limit.min(usize::try_from(state.config().max_upload_bytes).unwrap_or(usize::MAX));
    let too_large = || AppError::BodyTooLarge {
        what,
        limit_kib: (limit / 1024) as u64,
    };
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    let mut stream = req.into_body().into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| AppError::BadRequest(format!("could not read the {what}: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The 422 for a NUL character in a field, saying so in its message too (a page shows
/// only the message).
pub(crate) fn nul_in(field: &str) -> AppError {
    let mut fields = crate::error::FieldErrors::new();
    fields.insert(field.to_owned(), "contains a NUL character".to_owned());
    AppError::Validation {
        message: format!("{field} contains a NUL character"),
        fields,
    }
}

/// A form body's fields refused for a NUL character, like JSON's.
pub fn refuse_nul_in_form(bytes: &[u8]) -> Result<(), AppError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(bytes).unwrap_or_default();
    match pairs
        .iter()
        .find(|(key, value)| key.contains('\0') || value.contains('\0'))
    {
        Some((key, _)) => Err(nul_in(key)),
        None => Ok(()),
    }
}

/// The 413 for a body over the configured limit.
pub fn too_large(state: &AppState) -> AppError {
    AppError::TooLarge {
        limit_mb: state.config().max_upload_bytes / (1024 * 1024),
    }
}
