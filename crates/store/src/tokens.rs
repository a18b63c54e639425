//! API bearer tokens. Only a digest of each secret is stored.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::users::UserRow;
use super::{StoreResult, read, write};
use verdict_core::user::User;

/// A token as listed (never with its secret).
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct ApiToken {
    pub id: Uuid,
    pub name: String,
    /// Whose token it is.
    pub username: String,
    pub created_at: DateTime<Utc>,
}

impl super::Store {
    pub async fn create_token(
        &self,
        owner: &User,
        name: &str,
        token_hash: &str,
    ) -> StoreResult<ApiToken> {
        let user_id = owner.id;
        let token = ApiToken {
            id: Uuid::now_v7(),
            name: name.to_owned(),
            username: owner.username.clone(),
            created_at: Utc::now(),
        };
        write!(self, |pool| {
            sqlx::query(
                "INSERT INTO api_tokens (id, user_id, name, token_hash, created_at)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(token.id)
            .bind(user_id)
            .bind(name)
            .bind(token_hash)
            .bind(token.created_at)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok(token)
    }

    /// The owner of an unrevoked token with this digest.
    pub async fn user_by_token_hash(&self, token_hash: &str) -> StoreResult<Option<User>> {
        let row = read!(self, |pool| {
            sqlx::query_as::<_, UserRow>(
                "SELECT u.id, u.username, u.role, u.active, u.created_at, u.password_changed_at, u.skills,
                        u.declared_skills
                 FROM api_tokens t JOIN users u ON u.id = t.user_id
                 WHERE t.token_hash = $1 AND t.revoked_at IS NULL",
            )
            .bind(token_hash)
            .fetch_optional(pool)
            .await
        })?;
        Ok(row.map(User::from))
    }

    /// The live tokens of one user, or of everyone (`None`), oldest first.
    pub async fn list_tokens(&self, user_id: Option<Uuid>) -> StoreResult<Vec<ApiToken>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, ApiToken>(
                "SELECT t.id, t.name, u.username, t.created_at
                 FROM api_tokens t JOIN users u ON u.id = t.user_id
                 WHERE ($1 IS NULL OR t.user_id = $1) AND t.revoked_at IS NULL
                 ORDER BY t.created_at, t.id",
            )
            .bind(user_id)
            .fetch_all(pool)
            .await
        })?)
    }

    /// Revokes a live token, of `user_id` only or of anyone (`None`). Returns the token
    /// as it was, `None` if there is no such live token (of that user).
    pub async fn revoke_token(
        &self,
        user_id: Option<Uuid>,
        token_id: Uuid,
    ) -> StoreResult<Option<ApiToken>> {
        let found = read!(self, |pool| {
            sqlx::query_as::<_, ApiToken>(
                "SELECT t.id, t.name, u.username, t.created_at
                 FROM api_tokens t JOIN users u ON u.id = t.user_id
                 WHERE t.id = $1 AND ($2 IS NULL OR t.user_id = $2) AND t.revoked_at IS NULL",
            )
            .bind(token_id)
            .bind(user_id)
            .fetch_optional(pool)
            .await
        })?;
        let Some(token) = found else {
            return Ok(None);
        };
        // Checked again as it is revoked: a token revoked meanwhile is not revoked twice.
        let done = write!(self, |pool| {
            sqlx::query(
                "UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
            )
            .bind(token_id)
            .bind(Utc::now())
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })?;
        Ok((done == 1).then_some(token))
    }
}
