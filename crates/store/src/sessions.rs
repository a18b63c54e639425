//! Server-side sessions: the `tower_sessions::SessionStore` over our own `sessions` table.
//!
//! The ready-made sqlx stores keep the record as an opaque blob in a table of their own;
//! ours also copies the signed-in user's id into a column, so that deactivating a user or
//! changing a password can end all of that user's sessions in one statement.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
use uuid::Uuid;

use super::{Store, read, write};

/// The session key under which the signed-in user's id is kept.
pub const USER_ID_KEY: &str = "user_id";

fn backend(err: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(err.to_string())
}

fn expiry(record: &Record) -> DateTime<Utc> {
    DateTime::from_timestamp(record.expiry_date.unix_timestamp(), 0).unwrap_or_else(Utc::now)
}

fn user_of(record: &Record) -> Option<Uuid> {
    record
        .data
        .get(USER_ID_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

impl Store {
    /// Removes sessions past their expiry; returns how many.
    pub async fn delete_expired_sessions(&self) -> super::StoreResult<u64> {
        let done = write!(self, |pool| {
            sqlx::query("DELETE FROM sessions WHERE expires_at < $1")
                .bind(Utc::now())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(done)
    }

    /// Inserts a session record; `on_conflict` says what to do when the id exists.
    /// Returns how many rows were written.
    async fn put_session(&self, record: &Record, on_conflict: &str) -> session_store::Result<u64> {
        let sql = format!(
            "INSERT INTO sessions (id, user_id, data, expires_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) {on_conflict}"
        );
        write!(self, |pool| {
            sqlx::query(&sql)
                .bind(record.id.to_string())
                .bind(user_of(record))
                .bind(Json(&record.data))
                .bind(expiry(record))
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })
        .map_err(backend)
    }

    /// How many live sessions a user has (used by tests and the admin page).
    pub async fn count_sessions(&self, user_id: Uuid) -> super::StoreResult<i64> {
        let (n,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND expires_at >= $2")
                .bind(user_id)
                .bind(Utc::now())
                .fetch_one(pool)
                .await
        })?;
        Ok(n)
    }
}

#[async_trait]
impl SessionStore for Store {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // A collision of 128 random bits is next to impossible, but cheap to handle.
        loop {
            if self.put_session(record, "DO NOTHING").await? == 1 {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let update = "DO UPDATE SET user_id = excluded.user_id, data = excluded.data, \
                      expires_at = excluded.expires_at";
        self.put_session(record, update).await?;
        self.access_cache().forget_session(&record.id);
        Ok(())
    }

    /// Reads the access epoch (the one query of a request signed in by a cached
    /// session), then the record from the cache or the table.
    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        self.refresh_access().await.map_err(backend)?;
        let cache = self.access_cache();
        if let Some(record) = cache.session(id) {
            return Ok(Some(record));
        }
        let epoch = cache.epoch();
        let row: Option<(
            Json<std::collections::HashMap<String, serde_json::Value>>,
            DateTime<Utc>,
        )> = read!(self, |pool| {
            sqlx::query_as(
                "SELECT data, expires_at FROM sessions WHERE id = $1 AND expires_at >= $2",
            )
            .bind(id.to_string())
            .bind(Utc::now())
            .fetch_optional(pool)
            .await
        })
        .map_err(backend)?;
        let record = row.map(|(Json(data), expires_at)| Record {
            id: *id,
            data,
            expiry_date: time::OffsetDateTime::from_unix_timestamp(expires_at.timestamp())
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
        });
        if let Some(record) = &record {
            cache.keep_session(epoch, record);
        }
        Ok(record)
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        write!(self, |pool| {
            sqlx::query("DELETE FROM sessions WHERE id = $1")
                .bind(id.to_string())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })
        .map_err(backend)?;
        self.access_cache().forget_session(id);
        Ok(())
    }
}
