//! Long read-only scans on SQLite (metrics and exports of a whole batch).
//!
//! sqlx's SQLite driver runs each connection on a worker thread and hands every row to
//! the async side on its own, with a thread wake-up each: at a million rows that costs
//! several times what SQLite spends on the query. A scan instead opens a read-only
//! connection of its own (rusqlite, on the same SQLite library) in a blocking thread and
//! sends rows across in batches. WAL gives it a consistent snapshot beside the writer.
//!
//! A scanned row type is declared once with [`columns!`]: its fields, each with the SQL
//! expression it is read from. That one list writes the select list of the query, the
//! sqlx decoder (by column name, for PostgreSQL) and the scan's decoder (by position, in
//! the declared order), so the two decoders of one query cannot drift apart.

use std::path::PathBuf;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{OpenFlags, Row};
use sqlx::types::Json;
use tokio::sync::mpsc;
use uuid::Uuid;
use verdict_core::lifecycle::{Outcome, RaterKind, SkipReason, Status};

/// Rows per batch handed to the async side (and to [`crate::Store::send_ratings`]'s
/// receiver, on either backend).
pub(crate) const BATCH: usize = 1024;

/// Declares a row type read both by sqlx and by a [`scan`]: a struct whose every field
/// is written `name: Type = "SQL expression"`. It derives `sqlx::FromRow` (which reads
/// columns by name; fields may carry `#[sqlx(try_from = ...)]`, but nothing that renames
/// or skips a column) and implements [`Scanned`] (which reads them by position), and
/// gives the type a `COLUMNS` constant, the select list `expression AS name, ...` in the
/// declared order, for the query to start with. An expression may be a macro call that
/// expands to a string literal.
macro_rules! columns {
    (@select $sql:expr, $field:ident $(; $more_sql:expr, $more:ident)*) => {
        concat!($sql, " AS ", stringify!($field) $(, ", ", $more_sql, " AS ", stringify!($more))*)
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $field_vis:vis $field:ident: $ty:ty = $sql:expr
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(sqlx::FromRow)]
        $vis struct $name {
            $($(#[$field_meta])* $field_vis $field: $ty,)+
        }

        impl $name {
            /// The select list: each field's expression named as the field, in the
            /// order the fields are declared.
            pub(crate) const COLUMNS: &'static str =
                $crate::scan::columns!(@select $($sql, $field);+);
        }

        impl $crate::scan::Scanned for $name {
            fn scan(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
                let mut columns = $crate::scan::Columns::new(row);
                // Fields are evaluated in the order written: the declared order, that of
                // `COLUMNS`.
                Ok(Self {
                    $($field: columns.next()?,)+
                })
            }
        }
    };
}

pub(crate) use columns;

/// A row type a [`scan`] reads, declared with [`columns!`].
pub(crate) trait Scanned: Sized {
    /// Reads the row's columns by position, in the declared order.
    fn scan(row: &Row<'_>) -> rusqlite::Result<Self>;
}

/// The columns of one row, read in turn.
pub(crate) struct Columns<'a, 'r> {
    row: &'a Row<'r>,
    at: usize,
}

impl<'a, 'r> Columns<'a, 'r> {
    pub(crate) fn new(row: &'a Row<'r>) -> Self {
        Self { row, at: 0 }
    }

    /// Reads the next column.
    pub(crate) fn next<T: ScanValue>(&mut self) -> rusqlite::Result<T> {
        let value = T::scan(self.row, self.at);
        self.at += 1;
        value
    }
}

/// A field's type as a scan reads it from the form sqlx stored it in on SQLite.
pub(crate) trait ScanValue: Sized {
    fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self>;
}

/// Types SQLite holds as they are: text, integers, and booleans (as integers).
macro_rules! plain {
    ($($ty:ty),*) => {$(
        impl ScanValue for $ty {
            fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self> {
                row.get(i)
            }
        }
    )*};
}

plain!(String, bool, i32, i64);

/// The core's names (an outcome, a status), stored as their names.
macro_rules! names {
    ($($ty:ty),*) => {$(
        impl ScanValue for $ty {
            fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self> {
                parse_text(row, i, str::parse)
            }
        }
    )*};
}

names!(Outcome, Status, RaterKind, SkipReason);

/// sqlx stores a UUID as its 16 bytes.
impl ScanValue for Uuid {
    fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self> {
        row.get(i).map(Uuid::from_bytes)
    }
}

/// sqlx stores JSON as text.
impl<T: serde::de::DeserializeOwned> ScanValue for Json<T> {
    fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self> {
        parse_text(row, i, |text| serde_json::from_str(text)).map(Json)
    }
}

/// sqlx stores a time as RFC 3339 text (see [`time`]); its reader takes other forms as
/// well, which verdict never writes.
impl ScanValue for DateTime<Utc> {
    fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self> {
        parse_text(row, i, DateTime::parse_from_rfc3339).map(|t| t.with_timezone(&Utc))
    }
}

/// NULL, or the value.
impl<T: ScanValue> ScanValue for Option<T> {
    fn scan(row: &Row<'_>, i: usize) -> rusqlite::Result<Self> {
        match row.get_ref(i)? {
            ValueRef::Null => Ok(None),
            _ => T::scan(row, i).map(Some),
        }
    }
}

/// Reads a text column and parses it, without copying the text.
fn parse_text<T, E>(
    row: &Row<'_>,
    i: usize,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> rusqlite::Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let value = row.get_ref(i)?;
    let failed = |e: Box<dyn std::error::Error + Send + Sync>| {
        rusqlite::Error::FromSqlConversionFailure(i, value.data_type(), e)
    };
    let text = value.as_str().map_err(|e| failed(Box::new(e)))?;
    parse(text).map_err(|e| failed(Box::new(e)))
}

/// A bound UUID parameter, as sqlx stores it in SQLite (its 16 bytes).
pub(crate) fn uuid(id: Uuid) -> Value {
    Value::Blob(id.as_bytes().to_vec())
}

/// A bound text parameter, or NULL.
pub(crate) fn text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |v| Value::Text(v.to_owned()))
}

/// A bound time parameter, or NULL, as sqlx writes it in SQLite (RFC 3339 text).
pub(crate) fn time(value: Option<DateTime<Utc>>) -> Value {
    value.map_or(Value::Null, |t| {
        Value::Text(t.to_rfc3339_opts(SecondsFormat::AutoSi, false))
    })
}

/// Rows of a running scan, in batches.
pub(crate) struct Scan<T> {
    rx: mpsc::Receiver<rusqlite::Result<Vec<T>>>,
}

impl<T> Scan<T> {
    /// The next batch of rows; `None` once all were read. Dropping the scan stops it.
    pub(crate) async fn batch(&mut self) -> Result<Option<Vec<T>>, sqlx::Error> {
        match self.rx.recv().await {
            None => Ok(None),
            Some(batch) => batch
                .map(Some)
                .map_err(|e| sqlx::Error::Protocol(format!("scan: {e}"))),
        }
    }
}

/// Starts `sql` with `params` on the database at `path`, each row read as a `T`: the
/// query's columns are `T::COLUMNS`, in that order.
pub(crate) fn scan<T: Scanned + Send + 'static>(
    path: PathBuf,
    sql: String,
    params: Vec<Value>,
) -> Scan<T> {
    let (tx, rx) = mpsc::channel::<rusqlite::Result<Vec<T>>>(4);
    tokio::task::spawn_blocking(move || {
        let read = || -> rusqlite::Result<()> {
            let conn = rusqlite::Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            let mut statement = conn.prepare(&sql)?;
            let mut rows = statement.query(rusqlite::params_from_iter(params))?;
            let mut batch = Vec::with_capacity(BATCH);
            while let Some(row) = rows.next()? {
                batch.push(T::scan(row)?);
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if tx.blocking_send(Ok(full)).is_err() {
                        // Nobody reads any more.
                        return Ok(());
                    }
                }
            }
            if !batch.is_empty() {
                let _ = tx.blocking_send(Ok(batch));
            }
            Ok(())
        };
        if let Err(e) = read() {
            let _ = tx.blocking_send(Err(e));
        }
    });
    Scan { rx }
}

#[cfg(test)]
pub(crate) mod tests;
