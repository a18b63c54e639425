//! Keyset paging: a list is read in pages ordered by a time and an id, and a page ends
//! with a cursor naming its last row, so the next page starts right after it. Rows added
//! meanwhile neither shift a page nor repeat a row (offsets would do both).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

/// Which list a cursor belongs to, so one list's cursor is not taken by another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Audit,
    History,
    ReviewQueue,
    Deliveries,
}

impl ListKind {
    fn tag(self) -> &'static str {
        match self {
            Self::Audit => "audit",
            Self::History => "history",
            Self::ReviewQueue => "review",
            Self::Deliveries => "deliveries",
        }
    }
}

/// The sort key of the last row of a page: where the next page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub at: DateTime<Utc>,
    pub id: Uuid,
}

impl Cursor {
    /// The opaque text handed to clients.
    pub fn encode(&self, kind: ListKind) -> String {
        let at = self.at.to_rfc3339_opts(SecondsFormat::Nanos, true);
        URL_SAFE_NO_PAD.encode(format!("{}|{at}|{}", kind.tag(), self.id))
    }

    /// Reads a cursor of `kind` back; `None` for anything this list did not give out.
    pub fn decode(kind: ListKind, text: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(text.trim()).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let mut parts = text.split('|');
        let (tag, at, id) = (parts.next()?, parts.next()?, parts.next()?);
        if tag != kind.tag() || parts.next().is_some() {
            return None;
        }
        Some(Self {
            at: DateTime::parse_from_rfc3339(at).ok()?.with_timezone(&Utc),
            id: Uuid::parse_str(id).ok()?,
        })
    }
}

/// One page of a list: its rows, how many rows the whole list has, and where the next
/// page starts (`None` on the last page).
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub next: Option<Cursor>,
}

impl<T> Page<T> {
    /// A page from up to `limit + 1` rows read after the cursor: the extra row only says
    /// that another page follows.
    pub fn of(mut rows: Vec<T>, limit: i64, total: i64, key: impl Fn(&T) -> Cursor) -> Self {
        let limit = usize::try_from(limit).unwrap_or(0);
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(&key)
        } else {
            None
        };
        Self {
            items: rows,
            total,
            next,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            next: self.next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_exactly_and_only_in_its_own_list() {
        let cursor = Cursor {
            at: DateTime::parse_from_rfc3339("2025-03-04T05:06:07.123456789Z")
                .unwrap()
                .with_timezone(&Utc),
            id: Uuid::now_v7(),
        };
        let text = cursor.encode(ListKind::Audit);
        assert_eq!(Cursor::decode(ListKind::Audit, &text), Some(cursor));
        assert_eq!(Cursor::decode(ListKind::History, &text), None);
        for bad in [
            "",
            "!!",
            "YWJj",
            &URL_SAFE_NO_PAD.encode("audit|yesterday|x"),
        ] {
            assert_eq!(Cursor::decode(ListKind::Audit, bad), None, "{bad}");
        }
    }

    #[test]
    fn a_page_keeps_limit_rows_and_points_past_the_last() {
        let key = |n: &i64| Cursor {
            at: DateTime::from_timestamp(*n, 0).unwrap(),
            id: Uuid::nil(),
        };
        let page = Page::of(vec![1, 2, 3], 2, 7, key);
        assert_eq!((page.items.as_slice(), page.total), (&[1, 2][..], 7));
        assert_eq!(page.next, Some(key(&2)));
        assert_eq!(Page::of(vec![1, 2], 2, 2, key).next, None);
    }
}
