//! The one application error, rendered as JSON for `/api` and as a page for the web.
//!
//! `IntoResponse` writes the JSON body `{ "error": ..., "fields": {...} }` and attaches an
//! [`ErrorInfo`] extension; `web::html_errors` turns marked responses on page routes into
//! HTML (or a redirect to the login page), and `web::log_internal_errors` logs internal
//! errors with the request id, so neither concern lives in the conversion.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::credentials::CredentialError;
use crate::services::ServiceError;
use crate::store::StoreError;
use verdict_core::lifecycle::Refusal;

pub use verdict_core::fields::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    BadRequest(String),
    #[error("sign in first")]
    Unauthorized,
    #[error("your role does not allow this")]
    Forbidden,
    /// A state-changing request without the right CSRF token, or sent cross-site; the
    /// message says which token was missing or wrong and where it belongs.
    #[error("{0}")]
    Csrf(String),
    #[error("not found")]
    NotFound,
    /// A method the address does not take (the router's `Allow` header lists those it
    /// does).
    #[error("this address does not take {0} requests")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    /// It was there and is no more (a deleted batch); the message names it.
    #[error("{0}")]
    Gone(String),
    #[error("request body is larger than the limit of {limit_mb} MiB")]
    TooLarge { limit_mb: u64 },
    /// A page form or a JSON body over its route's limit (small for sign-in, larger for
    /// the rating form and the API's JSON).
    #[error("the {what} is larger than the limit of {limit_kib} KiB")]
    BodyTooLarge { what: &'static str, limit_kib: u64 },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{message}")]
    Validation {
        message: String,
        fields: FieldErrors,
    },
    /// Answers that meet consistency warnings of the rubric the rater has not confirmed:
    /// nothing was stored; the same submission confirming them is.
    #[error("{}", unconfirmed_message(.0.len()))]
    Unconfirmed(Vec<WarningView>),
    /// An upload with bad records: nothing was stored.
    #[error("{count} of the records are invalid; nothing was stored")]
    BadRecords {
        count: u64,
        errors: Vec<verdict_core::import::RecordError>,
    },
    #[error("too many attempts; try again in {retry_after_s} s")]
    TooManyRequests { retry_after_s: u64 },
    #[error("the database is unavailable; try again shortly")]
    Unavailable,
    /// Every password check is busy and this one waited its turn too long.
    #[error("the server is busy checking passwords; try again shortly")]
    Busy,
    /// Anything the client cannot fix; reaches the client as a fixed message.
    #[error("internal error")]
    Internal(String),
}

pub type AppResult<T> = Result<T, AppError>;

pub use crate::services::WarningView;

fn unconfirmed_message(count: usize) -> String {
    let which = if count == 1 {
        "a consistency warning"
    } else {
        "consistency warnings"
    };
    format!(
        "the answers meet {which} of the rubric: look again, then change them, or send them \
         again with the ids in confirmed_warnings; nothing was stored"
    )
}

impl AppError {
    /// A 422 naming one field.
    pub fn field(path: &str, why: impl Into<String>) -> Self {
        let mut fields = FieldErrors::new();
        fields.insert(path.to_owned(), why.into());
        Self::invalid(fields)
    }

    /// A 422 naming every broken field.
    pub fn invalid(fields: FieldErrors) -> Self {
        let message = match fields.len() {
            1 => "1 field is invalid".to_owned(),
            n => format!("{n} fields are invalid"),
        };
        Self::Validation { message, fields }
    }

    pub fn internal(err: impl std::fmt::Display) -> Self {
        Self::Internal(err.to_string())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden | Self::Csrf(_) => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) | Self::Unconfirmed(_) => StatusCode::CONFLICT,
            Self::Gone(_) => StatusCode::GONE,
            Self::TooLarge { .. } | Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Validation { .. } | Self::BadRecords { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable | Self::Busy => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The JSON error body of every API error.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in words for a person.
    pub error: String,
    /// Field path to the reason it was refused (validation errors only).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: FieldErrors,
    /// Bad records of an upload, by line (the first 100).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<verdict_core::import::RecordError>,
    /// How many records were bad in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_count: Option<u64>,
    /// The consistency warnings the answers meet and the rater has not confirmed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<WarningView>,
    /// Quote this when reporting an internal error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// Attached to every error response so middleware can re-render or log it.
#[derive(Debug, Clone)]
pub struct ErrorInfo {
    pub status: StatusCode,
    pub message: String,
    /// The internal cause, for the log only.
    pub internal: Option<String>,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = self.to_string();
        let internal = match &self {
            Self::Internal(cause) => Some(cause.clone()),
            _ => None,
        };
        let retry_after = match &self {
            Self::TooManyRequests { retry_after_s } => Some(*retry_after_s),
            Self::Unavailable | Self::Busy => Some(1),
            _ => None,
        };
        let (fields, errors, error_count, warnings) = match self {
            Self::Validation { fields, .. } => (fields, vec![], None, vec![]),
            Self::BadRecords { count, errors } => (FieldErrors::new(), errors, Some(count), vec![]),
            Self::Unconfirmed(warnings) => (FieldErrors::new(), vec![], None, warnings),
            _ => (FieldErrors::new(), vec![], None, vec![]),
        };
        let body = ErrorBody {
            error: message.clone(),
            fields,
            errors,
            error_count,
            warnings,
            request_id: None,
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response.extensions_mut().insert(ErrorInfo {
            status,
            message,
            internal,
        });
        response
    }
}

impl From<StoreError> for AppError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Duplicate(what) => Self::Conflict(format!("{what} is already taken")),
            StoreError::Retry => {
                Self::Conflict("changed by another request at the same time; try again".into())
            }
            StoreError::Db(ref db) if crate::store::is_unavailable(db) => Self::Unavailable,
            // The requests' screening refuses NUL first; should one still reach
            // PostgreSQL (which cannot store it), it is the caller's text, not a fault.
            StoreError::Db(sqlx::Error::Database(ref db))
                if matches!(db.code().as_deref(), Some("22021" | "22P05")) =>
            {
                Self::BadRequest("text contains a NUL character".into())
            }
            other => Self::internal(other),
        }
    }
}

impl From<Refusal> for AppError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Closed(why) => Self::Conflict(why.into_owned()),
            Refusal::Expired => Self::Conflict(EXPIRED.into()),
            Refusal::Stale { current } => Self::Conflict(format!(
                "this rating changed since you loaded it (it is at version {current} now); \
                 reload and decide again"
            )),
        }
    }
}

impl From<CredentialError> for AppError {
    fn from(err: CredentialError) -> Self {
        match err {
            CredentialError::Busy => AppError::Busy,
            CredentialError::TooManyAttempts { retry_after_s } => {
                AppError::TooManyRequests { retry_after_s }
            }
            CredentialError::Store(e) => e.into(),
            CredentialError::Internal(why) => AppError::Internal(why),
        }
    }
}

impl From<ServiceError> for AppError {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::Store(err) => err.into(),
            ServiceError::Refused(refusal) => refusal.into(),
            ServiceError::NotFound => Self::NotFound,
            ServiceError::Forbidden => Self::Forbidden,
            ServiceError::Invalid(fields) => Self::invalid(fields),
            ServiceError::Internal(cause) => Self::Internal(cause),
            ServiceError::Conflict(why) => Self::Conflict(why),
            ServiceError::Gone(why) => Self::Gone(why),
            ServiceError::Unconfirmed(warnings) => Self::Unconfirmed(warnings),
            ServiceError::BadRecords { count, errors } => Self::BadRecords { count, errors },
            ServiceError::Credential(err) => err.into(),
        }
    }
}

/// What a rater is told when their time on a task ran out.
pub const EXPIRED: &str = "your time on this task ran out and it went back to the pool for \
     another rater; what you wrote is kept as a draft in your ratings";
