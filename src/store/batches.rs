//! Batches: what each person may see of them.

use uuid::Uuid;

use super::{StoreResult, read};
use crate::auth::Role;

/// A batch as listed on a landing page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BatchSummary {
    pub id: Uuid,
    pub name: String,
    pub state: String,
    pub tasks: i64,
}

impl super::Store {
    /// Batches this person may work on: as a rater the open ones opened to them, as a lead
    /// the ones they lead, as an admin all of them.
    pub async fn visible_batches(
        &self,
        user_id: Uuid,
        role: Role,
    ) -> StoreResult<Vec<BatchSummary>> {
        let filter = match role {
            Role::Rater => {
                "WHERE b.state = 'open' AND (NOT b.raters_restricted OR EXISTS (
                     SELECT 1 FROM batch_members m
                     WHERE m.batch_id = b.id AND m.user_id = $1 AND m.role = 'rater'))"
            }
            Role::Lead => {
                "WHERE NOT b.leads_restricted OR EXISTS (
                     SELECT 1 FROM batch_members m
                     WHERE m.batch_id = b.id AND m.user_id = $1 AND m.role = 'lead')"
            }
            Role::Admin => "",
        };
        let sql = format!(
            "SELECT b.id, b.name, b.state, (SELECT COUNT(*) FROM tasks t WHERE t.batch_id = b.id) AS tasks
             FROM batches b {filter} ORDER BY b.created_at DESC"
        );
        Ok(read!(self, |pool| {
            let query = sqlx::query_as::<_, BatchSummary>(&sql);
            let query = if role == Role::Admin {
                query
            } else {
                query.bind(user_id)
            };
            query.fetch_all(pool).await
        })?)
    }
}
