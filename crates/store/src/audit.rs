//! The audit log: what admins and leads did, who, when.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use uuid::Uuid;

use super::page::{Cursor, Page};
use super::{StoreResult, read, write};

/// One entry, with the actor's username (empty once the account is gone).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuditEntry {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub actor: Option<String>,
    pub action: String,
    pub target: Option<String>,
    pub detail: Json<Value>,
}

/// Adds one entry: id, actor's account, actor's other name, action, target, detail, time.
pub(super) const INSERT_ENTRY: &str =
    "INSERT INTO audit_log (id, actor_id, actor_name, action, target, detail, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)";

impl super::Store {
    /// Records an action by an account (`actor`), or by someone named otherwise
    /// (`actor_name`, e.g. `cli`).
    pub async fn record_audit(
        &self,
        actor: Option<Uuid>,
        actor_name: Option<&str>,
        action: &str,
        target: &str,
        detail: &Value,
    ) -> StoreResult<()> {
        write!(self, |pool| {
            sqlx::query(INSERT_ENTRY)
                .bind(Uuid::now_v7())
                .bind(actor)
                .bind(actor_name)
                .bind(action)
                .bind(target)
                .bind(Json(detail))
                .bind(Utc::now())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(())
    }

    /// A page of entries, newest first, after `cursor`; `action` keeps one kind.
    pub async fn audit_entries(
        &self,
        action: Option<&str>,
        cursor: Option<Cursor>,
        limit: i64,
    ) -> StoreResult<Page<AuditEntry>> {
        let rows = read!(self, |pool| {
            sqlx::query_as::<_, AuditEntry>(
                "SELECT l.id, l.at, COALESCE(u.username, l.actor_name) AS actor, l.action, l.target, l.detail
                 FROM audit_log l LEFT JOIN users u ON u.id = l.actor_id
                 WHERE ($1 IS NULL OR l.action = $1)
                   AND ($2 IS NULL OR l.at < $2 OR (l.at = $2 AND l.id < $3))
                 ORDER BY l.at DESC, l.id DESC LIMIT $4",
            )
            .bind(action)
            .bind(cursor.map(|c| c.at))
            .bind(cursor.map(|c| c.id))
            .bind(limit + 1)
            .fetch_all(pool)
            .await
        })?;
        let (total,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT COUNT(*) FROM audit_log WHERE ($1 IS NULL OR action = $1)")
                .bind(action)
                .fetch_one(pool)
                .await
        })?;
        Ok(Page::of(rows, limit, total, |e| Cursor {
            at: e.at,
            id: e.id,
        }))
    }
}
