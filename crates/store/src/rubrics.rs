//! Rubric documents by name and version. A version never changes once stored, so each is
//! read from the database once per process and kept: a cache that needs no invalidation,
//! across instances too.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{StoreError, StoreResult, read, transaction};
use verdict_core::rubric::{self, Rubric};

/// One stored version of a rubric, as listed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RubricVersion {
    pub name: String,
    pub version: i32,
    pub created_at: DateTime<Utc>,
    /// Who added it; `None` for a built-in one or the command line.
    pub created_by: Option<String>,
}

/// What adding a rubric did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    pub version: i32,
    /// `false` when the document equals the newest version, which is kept as it is.
    pub created: bool,
}

/// The stored text of a document: its canonical JSON, so equal documents have equal text.
fn text_of(rubric: &Rubric) -> String {
    serde_json::to_string(rubric).expect("a rubric serialises")
}

impl super::Store {
    /// The rubric `name` at `version`.
    pub async fn rubric(&self, name: &str, version: i32) -> StoreResult<Option<Arc<Rubric>>> {
        let key = (name.to_owned(), version);
        if let Some(found) = self.rubric_cache().get(&key) {
            return Ok(Some(found.clone()));
        }
        let text: Option<(String,)> = read!(self, |pool| {
            sqlx::query_as("SELECT document FROM rubrics WHERE name = $1 AND version = $2")
                .bind(name)
                .bind(version)
                .fetch_optional(pool)
                .await
        })?;
        let Some((text,)) = text else {
            return Ok(None);
        };
        let rubric = Arc::new(parse_stored(&text)?);
        self.rubric_cache_mut().insert(key, rubric.clone());
        Ok(Some(rubric))
    }

    /// The rubric a batch pinned.
    pub async fn batch_rubric(
        &self,
        batch: &verdict_core::batch::Batch,
    ) -> StoreResult<Arc<Rubric>> {
        self.rubric(&batch.rubric, batch.rubric_version)
            .await?
            .ok_or(StoreError::Db(sqlx::Error::RowNotFound))
    }

    /// The newest version of the rubric `name`, with its number.
    pub async fn latest_rubric(&self, name: &str) -> StoreResult<Option<(i32, Arc<Rubric>)>> {
        let version: Option<(i32,)> = read!(self, |pool| {
            sqlx::query_as("SELECT MAX(version) FROM rubrics WHERE name = $1 HAVING COUNT(*) > 0")
                .bind(name)
                .fetch_optional(pool)
                .await
        })?;
        let Some((version,)) = version else {
            return Ok(None);
        };
        Ok(self.rubric(name, version).await?.map(|r| (version, r)))
    }

    /// The names of the rubrics a batch can use: the built-in ones first, in the order
    /// they are offered, then the others by name.
    pub async fn rubric_names(&self) -> StoreResult<Vec<String>> {
        let stored: Vec<(String,)> = read!(self, |pool| {
            sqlx::query_as("SELECT DISTINCT name FROM rubrics ORDER BY name")
                .fetch_all(pool)
                .await
        })?;
        let built_in = rubric::names();
        let mut names: Vec<String> = built_in.iter().map(|n| (*n).to_owned()).collect();
        names.extend(
            stored
                .into_iter()
                .map(|(n,)| n)
                .filter(|n| !built_in.contains(&n.as_str())),
        );
        Ok(names)
    }

    /// Every version of every rubric, by name then version.
    pub async fn rubric_versions(&self) -> StoreResult<Vec<RubricVersion>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, RubricVersion>(
                "SELECT r.name, r.version, r.created_at, u.username AS created_by
                 FROM rubrics r LEFT JOIN users u ON u.id = r.created_by
                 ORDER BY r.name, r.version",
            )
            .fetch_all(pool)
            .await
        })?)
    }

    /// Stores `rubric` as the next version of its name, unless it equals the newest one.
    pub async fn add_rubric(&self, rubric: &Rubric, by: Option<Uuid>) -> StoreResult<Added> {
        let text = text_of(rubric);
        let lock = self.lock_clause();
        let added = transaction!(self, |tx| {
            // The newest version, locked so that two additions take turns (PostgreSQL;
            // SQLite has one writer). With no version yet, two first additions race on
            // the primary key instead, and one of them is told to retry.
            let newest: Option<(i32, String)> = sqlx::query_as(&format!(
                "SELECT version, document FROM rubrics WHERE name = $1
                 ORDER BY version DESC LIMIT 1{lock}"
            ))
            .bind(&rubric.name)
            .fetch_optional(&mut *tx)
            .await?;
            match newest {
                Some((version, document)) if document == text => Added {
                    version,
                    created: false,
                },
                newest => {
                    let version = newest.map_or(1, |(v, _)| v + 1);
                    sqlx::query(
                        "INSERT INTO rubrics (name, version, document, created_by, created_at)
                         VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(&rubric.name)
                    .bind(version)
                    .bind(&text)
                    .bind(by)
                    .bind(Utc::now())
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| {
                        match super::on_unique(e, "rubric version") {
                            StoreError::Duplicate(_) => StoreError::Retry,
                            other => other,
                        }
                    })?;
                    Added {
                        version,
                        created: true,
                    }
                }
            }
        });
        Ok(added)
    }

    /// Makes the newest version of each built-in rubric the one this binary ships: a new
    /// database gets version 1 of each, and a release that changed a built-in document
    /// adds it as a new version (batches made before keep theirs).
    pub(crate) async fn install_built_in_rubrics(&self) -> StoreResult<()> {
        for rubric in rubric::built_in() {
            match self.add_rubric(rubric, None).await {
                Ok(_) => {}
                // Another instance starting at the same moment added it.
                Err(StoreError::Retry) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(())
    }
}

/// Reads a stored document. It was checked when it was added; one that no longer passes
/// (a rule added to the format since) is still served as stored; warnings stored before
/// they had ids get theirs.
fn parse_stored(text: &str) -> StoreResult<Rubric> {
    serde_json::from_str(text)
        .map(Rubric::name_warnings)
        .map_err(|e| {
            StoreError::Db(sqlx::Error::Decode(
                format!("a stored rubric document does not read: {e}").into(),
            ))
        })
}
