//! Services the features share: plain async functions over the [`Store`] and plain
//! values that return domain errors ([`ServiceError`]), not HTTP ones. Features (`assign`,
//! `ratings`, `review`, ...) call them instead of each other; the web layer turns a
//! `ServiceError` into an `AppError` in one `From` (in `error.rs`), and the CLI or a
//! background worker can call the same functions without a web state.
//!
//! [`Store`]: crate::store::Store

use crate::store::StoreError;
pub use verdict_core::fields::FieldErrors;
use verdict_core::lifecycle::Refusal;

pub mod accounts;
pub mod adjudication;
pub mod assignment;
pub mod audit;
pub mod batches;
pub mod corrections;
pub mod gold;
pub mod judging;
pub mod qualification;
pub mod rating;
pub mod review;
pub mod revision;
pub mod rubrics;
pub mod sign_in;
pub mod stalls;
pub mod task;

/// Why a service did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The lifecycle does not allow it now (finished, expired, stale).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// There is no such thing, or the caller may not know it exists.
    #[error("not found")]
    NotFound,
    /// The caller may see it but not do this to it.
    #[error("not allowed")]
    Forbidden,
    /// What was given is wrong: field path to why.
    #[error("{} field(s) are invalid", .0.len())]
    Invalid(FieldErrors),
    /// It cannot be done in the state things are in (a closed batch, an account already
    /// taken); the message says why.
    #[error("{0}")]
    Conflict(String),
    /// It was there and is no more (a deleted batch); the message names it.
    #[error("{0}")]
    Gone(String),
    /// A submission meets consistency warnings its rater has not confirmed: nothing was
    /// stored; the same submission confirming them is.
    #[error("{} consistency warning(s) to confirm", .0.len())]
    Unconfirmed(Vec<WarningView>),
    /// An uploaded file has bad records: `count` in all, the first of them in `errors`;
    /// nothing was stored.
    #[error("{count} of the records are invalid; nothing was stored")]
    BadRecords {
        count: u64,
        errors: Vec<verdict_core::import::RecordError>,
    },
    /// A credential could not be checked or made (every password hashing thread busy
    /// past its wait, a sign-in allowance spent).
    #[error(transparent)]
    Credential(#[from] crate::credentials::CredentialError),
    /// Stored data the service cannot make sense of (a fault, not the caller's).
    #[error("{0}")]
    Internal(String),
}

impl ServiceError {
    /// Invalid input naming one field.
    pub fn field(path: &str, why: impl Into<String>) -> Self {
        let mut fields = FieldErrors::new();
        fields.insert(path.to_owned(), why.into());
        Self::Invalid(fields)
    }
}

/// A consistency warning of a rubric, as a refused submission names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct WarningView {
    pub id: String,
    pub message: String,
}

impl From<&verdict_core::rubric::Warning> for WarningView {
    fn from(warning: &verdict_core::rubric::Warning) -> Self {
        Self {
            id: warning.id.clone(),
            message: warning.message.clone(),
        }
    }
}

pub type ServiceResult<T> = Result<T, ServiceError>;
