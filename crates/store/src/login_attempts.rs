//! Counters of login attempts, shared by every instance of the app on one database.

use super::{Store, StoreResult, transaction, write};

/// One key's count in its current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Attempts in the window, this one included.
    pub count: i64,
    /// When the window started (unix milliseconds).
    pub window_start: i64,
}

/// Counts one attempt for `key`, starting a new window when the key's last one started
/// at or before `expired_before`. One statement per key, so concurrent instances never
/// lose a count; on PostgreSQL it locks only that key's row.
const COUNT: &str = "INSERT INTO login_attempts (key, window_start, attempts) VALUES ($1, $2, 1)
     ON CONFLICT (key) DO UPDATE SET
       attempts = CASE WHEN login_attempts.window_start <= $3 THEN 1
                       ELSE login_attempts.attempts + 1 END,
       window_start = CASE WHEN login_attempts.window_start <= $3 THEN $2
                           ELSE login_attempts.window_start END
     RETURNING attempts, window_start";

impl Store {
    /// Counts one attempt for each key at `now` (unix milliseconds), in one transaction;
    /// windows that started at or before `expired_before` start again. Returns each key's
    /// count, in the order of `keys`.
    pub async fn count_login_attempts(
        &self,
        keys: &[String],
        now: i64,
        expired_before: i64,
    ) -> StoreResult<Vec<Attempts>> {
        let counts = transaction!(self, |tx| {
            let mut counts = Vec::with_capacity(keys.len());
            for key in keys {
                let (count, window_start): (i64, i64) = sqlx::query_as(COUNT)
                    .bind(key)
                    .bind(now)
                    .bind(expired_before)
                    .fetch_one(&mut *tx)
                    .await?;
                counts.push(Attempts {
                    count,
                    window_start,
                });
            }
            counts
        });
        Ok(counts)
    }

    /// Takes back one attempt of each key, in its window that started at the matching
    /// time of `window_starts` (a window that has ended since is left alone).
    pub async fn uncount_login_attempts(
        &self,
        keys: &[String],
        window_starts: &[i64],
    ) -> StoreResult<()> {
        transaction!(self, |tx| {
            for (key, window_start) in keys.iter().zip(window_starts) {
                sqlx::query(
                    "UPDATE login_attempts SET attempts = attempts - 1
                     WHERE key = $1 AND window_start = $2 AND attempts > 0",
                )
                .bind(key)
                .bind(window_start)
                .execute(&mut *tx)
                .await?;
            }
        });
        Ok(())
    }

    /// Forgets windows that started at or before `expired_before`; returns how many.
    pub async fn prune_login_attempts(&self, expired_before: i64) -> StoreResult<u64> {
        let done = write!(self, |pool| {
            sqlx::query("DELETE FROM login_attempts WHERE window_start <= $1")
                .bind(expired_before)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(done)
    }
}
