//! Long read-only scans on SQLite (metrics and exports of a whole batch).
//!
//! sqlx's SQLite driver runs each connection on a worker thread and hands every row to
//! the async side on its own, with a thread wake-up each: at a million rows that costs
//! several times what SQLite spends on the query. A scan instead opens a read-only
//! connection of its own (rusqlite, on the same SQLite library) in a blocking thread and
//! sends rows across in batches. WAL gives it a consistent snapshot beside the writer.

use std::path::PathBuf;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::types::Value;
use rusqlite::{OpenFlags, Row};
use tokio::sync::mpsc;
use uuid::Uuid;

/// Rows per batch handed to the async side.
const BATCH: usize = 1024;

/// A bound parameter, as sqlx stores it in SQLite.
pub(crate) fn uuid(id: Uuid) -> Value {
    Value::Blob(id.as_bytes().to_vec())
}

pub(crate) fn text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |v| Value::Text(v.to_owned()))
}

pub(crate) fn time(value: Option<DateTime<Utc>>) -> Value {
    value.map_or(Value::Null, |t| {
        Value::Text(t.to_rfc3339_opts(SecondsFormat::AutoSi, false))
    })
}

/// Reads a column sqlx stored as a UUID.
pub(crate) fn get_uuid(row: &Row, i: usize) -> rusqlite::Result<Uuid> {
    let bytes: Vec<u8> = row.get(i)?;
    Uuid::from_slice(&bytes).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Blob, Box::new(e))
    })
}

/// Reads a text column holding a name (an outcome, a status) and parses it.
pub(crate) fn get_parsed<T>(row: &Row, i: usize) -> rusqlite::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let text: String = row.get(i)?;
    text.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// Reads a nullable text column holding a name (a skip reason) and parses it.
pub(crate) fn get_parsed_opt<T>(row: &Row, i: usize) -> rusqlite::Result<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    match row.get::<_, Option<String>>(i)? {
        None => Ok(None),
        Some(_) => get_parsed(row, i).map(Some),
    }
}

/// Reads a column sqlx stored as a time.
pub(crate) fn get_time(row: &Row, i: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    let text: Option<String> = row.get(i)?;
    text.map(|t| {
        DateTime::parse_from_rfc3339(&t)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    i,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })
    })
    .transpose()
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

/// Starts `sql` with `params` on the database at `path`, each row mapped by `map`.
pub(crate) fn scan<T: Send + 'static>(
    path: PathBuf,
    sql: String,
    params: Vec<Value>,
    map: fn(&Row) -> rusqlite::Result<T>,
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
                batch.push(map(row)?);
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
