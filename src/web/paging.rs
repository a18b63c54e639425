//! Paged lists at the edge: `?cursor=&limit=` checked once, and the JSON shape every
//! paged API list answers with, `{items, total, next_cursor}`.

use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::store::page::{Cursor, ListKind, Page};

/// Rows per page when the caller does not say.
pub const DEFAULT_LIMIT: i64 = 50;
/// The most rows one page holds.
pub const MAX_LIMIT: i64 = 200;

/// Where a page starts and how long it is, checked: 422 naming `cursor` for a cursor
/// this list did not give out, naming `limit` outside 1..=[`MAX_LIMIT`].
pub fn params(
    kind: ListKind,
    cursor: Option<&str>,
    limit: Option<i64>,
) -> AppResult<(Option<Cursor>, i64)> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(refused(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        ));
    }
    let cursor = match cursor.filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => Some(Cursor::decode(kind, text).ok_or_else(|| {
            refused(
                "cursor",
                "is not a cursor of this list: pass next_cursor from the previous page as it came"
                    .into(),
            )
        })?),
    };
    Ok((cursor, limit))
}

/// A 422 naming the parameter in its message too, as a page shows only the message.
fn refused(field: &str, why: String) -> AppError {
    AppError::Validation {
        message: format!("{field} {why}"),
        fields: [(field.to_owned(), why)].into(),
    }
}

/// One page of a list, as the API answers it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Paged<T> {
    pub items: Vec<T>,
    /// How many rows the whole list has (every page together).
    pub total: i64,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

impl<T> Paged<T> {
    pub fn new(page: Page<T>, kind: ListKind) -> Self {
        Self {
            items: page.items,
            total: page.total,
            next_cursor: page.next.map(|c| c.encode(kind)),
        }
    }
}

/// The links under a paged list page: to the next page, and back to the first.
pub struct PageLinks {
    /// Rows on this page, and in the whole list.
    pub shown: usize,
    pub total: i64,
    /// The address of the next page, if there is one.
    pub next: Option<String>,
    /// The address of the first page, when this is not it.
    pub first: Option<String>,
}

impl PageLinks {
    /// Links for a page of `path`, whose other query parameters are `keep` (already
    /// URL-encoded pairs) and whose page length is `limit` (left out when default).
    pub fn new<T>(
        path: &str,
        keep: &[(&str, String)],
        page: &Page<T>,
        kind: ListKind,
        limit: i64,
        on_first: bool,
    ) -> Self {
        let href = |cursor: Option<String>| {
            let mut pairs: Vec<(&str, String)> = keep.to_vec();
            if limit != DEFAULT_LIMIT {
                pairs.push(("limit", limit.to_string()));
            }
            if let Some(cursor) = cursor {
                pairs.push(("cursor", cursor));
            }
            let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
            if query.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{query}")
            }
        };
        Self {
            shown: page.items.len(),
            total: page.total,
            next: page.next.map(|c| href(Some(c.encode(kind)))),
            first: (!on_first).then(|| href(None)),
        }
    }
}
