//! What operators watch of the database (`/metrics`): how its connections are used, and
//! counts of the work in it, read at each scrape.

use crate::{Pools, Store, StoreResult, read};

/// One connection pool's use at this moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolUse {
    /// `read` and `write` on SQLite (the one writer connection), `main` on PostgreSQL.
    pub pool: &'static str,
    /// Connections open now.
    pub open: u32,
    /// Open connections nobody is using.
    pub idle: u32,
    /// The most the pool opens.
    pub max: u32,
    /// Callers waiting for a connection (known for SQLite's writer only).
    pub waiting: Option<u32>,
}

/// Counts of the work in the database, the same from every instance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkCounts {
    /// Ratings other than drafts, by outcome and review status.
    pub ratings: Vec<(String, String, i64)>,
    /// Tasks raters hold right now.
    pub open_assignments: i64,
    /// Judge calls by status (`answered`, `unparsed`, `failed`).
    pub judge_calls: Vec<(String, i64)>,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Store {
    /// How each connection pool is used right now.
    pub fn pool_use(&self) -> Vec<PoolUse> {
        match &self.pools {
            Pools::Sqlite { write, read, .. } => vec![
                PoolUse {
                    pool: "read",
                    open: read.size(),
                    idle: count(read.num_idle()),
                    max: read.options().get_max_connections(),
                    waiting: None,
                },
                PoolUse {
                    pool: "write",
                    open: 1,
                    idle: u32::from(write.waiting() == 0),
                    max: 1,
                    waiting: Some(count(write.waiting())),
                },
            ],
            Pools::Postgres(pool) => vec![PoolUse {
                pool: "main",
                open: pool.size(),
                idle: count(pool.num_idle()),
                max: pool.options().get_max_connections(),
                waiting: None,
            }],
        }
    }

    /// The database's counts of ratings, held tasks and judge calls; each is one scan of
    /// an index (`ratings_batch`, `assignments_one_open`, `judge_calls_run_status`).
    pub async fn work_counts(&self) -> StoreResult<WorkCounts> {
        let ratings = read!(self, |pool| sqlx::query_as::<_, (String, String, i64)>(
            "SELECT outcome, status, COUNT(*) AS n FROM ratings
             WHERE status <> 'draft' GROUP BY outcome, status ORDER BY outcome, status"
        )
        .fetch_all(pool)
        .await)?;
        let open_assignments: i64 = read!(self, |pool| sqlx::query_scalar(
            "SELECT COUNT(*) FROM assignments WHERE state = 'open'"
        )
        .fetch_one(pool)
        .await)?;
        let judge_calls = read!(self, |pool| sqlx::query_as::<_, (String, i64)>(
            "SELECT status, COUNT(*) AS n FROM judge_calls GROUP BY status ORDER BY status"
        )
        .fetch_all(pool)
        .await)?;
        Ok(WorkCounts {
            ratings,
            open_assignments,
            judge_calls,
        })
    }
}
