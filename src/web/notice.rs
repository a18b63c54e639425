//! A notice for the next page a user sees: what their last action did ("Task 17
//! skipped"), with a link to what it made where there is one. It is kept in the session
//! by the action that succeeded and taken out by the next page shown, so a reload or a
//! later page does not show it again, and it never rides in a URL.

use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use crate::error::AppError;

const KEY: &str = "notice";

/// What the next page says, and where its link goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    pub text: String,
    /// A page of the app (a path) and the words of its link.
    pub link: Option<(String, String)>,
}

impl Notice {
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            link: None,
        }
    }

    pub fn link(mut self, href: impl Into<String>, words: impl Into<String>) -> Self {
        self.link = Some((href.into(), words.into()));
        self
    }
}

/// Keeps `notice` for the next page this session shows (replacing one not yet shown).
pub async fn set(session: &Session, notice: Notice) -> Result<(), AppError> {
    session
        .insert(KEY, notice)
        .await
        .map_err(AppError::internal)
}

/// The notice waiting for this page, taken out so it shows once. A session with none is
/// only read, not written.
pub async fn take(session: &Session) -> Result<Option<Notice>, AppError> {
    let waiting: Option<Notice> = session.get(KEY).await.map_err(AppError::internal)?;
    if waiting.is_some() {
        session
            .remove::<Notice>(KEY)
            .await
            .map_err(AppError::internal)?;
    }
    Ok(waiting)
}
