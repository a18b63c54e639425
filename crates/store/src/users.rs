//! Users: accounts, roles and activation. Judges' accounts (kind `judge`) are not
//! people's: every lookup here passes them over, so they never sign in, take a token,
//! join a batch or show in user management.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{StoreResult, on_unique, read, transaction, write};
use verdict_core::role::Role;
use verdict_core::user::User;

/// An account as its row holds it (see [`User`]).
#[derive(sqlx::FromRow)]
pub(crate) struct UserRow {
    id: Uuid,
    username: String,
    #[sqlx(try_from = "String")]
    role: Role,
    active: bool,
    created_at: DateTime<Utc>,
    password_changed_at: DateTime<Utc>,
    /// A JSON array of strings (migration 0021).
    skills: String,
    /// A JSON array of strings (migration 0026).
    declared_skills: String,
}

impl From<UserRow> for User {
    fn from(row: UserRow) -> Self {
        User {
            id: row.id,
            username: row.username,
            role: row.role,
            active: row.active,
            created_at: row.created_at,
            password_changed_at: row.password_changed_at,
            skills: skills_of(&row.skills),
            declared_skills: skills_of(&row.declared_skills),
        }
    }
}

/// A person's skills as `users.skills` holds them: a JSON array of strings, written only
/// by `set_skills` from checked skills (`users.declared_skills` alike, by
/// `set_declared_skills`).
pub(crate) fn skills_of(column: &str) -> Vec<String> {
    serde_json::from_str(column).unwrap_or_default()
}

pub(crate) const USER_COLUMNS: &str =
    "id, username, role, active, created_at, password_changed_at, skills, declared_skills";

impl super::Store {
    /// Creates an account; `Duplicate("username")` when the name is taken.
    pub async fn create_user(
        &self,
        username: &str,
        role: Role,
        password_hash: &str,
    ) -> StoreResult<User> {
        let now = Utc::now();
        let user = User {
            id: Uuid::now_v7(),
            username: username.to_owned(),
            role,
            active: true,
            created_at: now,
            password_changed_at: now,
            skills: Vec::new(),
            declared_skills: Vec::new(),
        };
        write!(self, |pool| {
            sqlx::query(
                "INSERT INTO users (id, username, password_hash, role, active, created_at, password_changed_at)
                 VALUES ($1, $2, $3, $4, TRUE, $5, $5)",
            )
            .bind(user.id)
            .bind(&user.username)
            .bind(password_hash)
            .bind(role.as_str())
            .bind(now)
            .execute(pool)
            .await
            .map(|done| done.rows_affected())
        })
        .map_err(|e| on_unique(e, "username"))?;
        Ok(user)
    }

    pub async fn user_by_id(&self, id: Uuid) -> StoreResult<Option<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1 AND kind = 'human'");
        let row = read!(self, |pool| {
            sqlx::query_as::<_, UserRow>(&sql)
                .bind(id)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(User::from))
    }

    pub async fn user_by_name(&self, username: &str) -> StoreResult<Option<User>> {
        let sql =
            format!("SELECT {USER_COLUMNS} FROM users WHERE username = $1 AND kind = 'human'");
        let row = read!(self, |pool| {
            sqlx::query_as::<_, UserRow>(&sql)
                .bind(username)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(User::from))
    }

    /// The user and their password hash, for a login attempt.
    pub async fn credentials(&self, username: &str) -> StoreResult<Option<(User, String)>> {
        #[derive(sqlx::FromRow)]
        struct Credentials {
            #[sqlx(flatten)]
            user: UserRow,
            password_hash: String,
        }
        let sql = format!(
            "SELECT {USER_COLUMNS}, password_hash FROM users WHERE username = $1 AND kind = 'human'"
        );
        let row = read!(self, |pool| {
            sqlx::query_as::<_, Credentials>(&sql)
                .bind(username)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(|c| (c.user.into(), c.password_hash)))
    }

    /// The account an identity provider's subject id was linked to.
    pub async fn user_by_oidc_subject(&self, subject: &str) -> StoreResult<Option<User>> {
        let sql =
            format!("SELECT {USER_COLUMNS} FROM users WHERE oidc_subject = $1 AND kind = 'human'");
        let row = read!(self, |pool| {
            sqlx::query_as::<_, UserRow>(&sql)
                .bind(subject)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(User::from))
    }

    /// The account named `username`, compared without case (an email address), with the
    /// subject id it is linked to, if any.
    pub async fn sign_in_candidate(
        &self,
        username: &str,
    ) -> StoreResult<Option<(User, Option<String>)>> {
        #[derive(sqlx::FromRow)]
        struct Candidate {
            #[sqlx(flatten)]
            user: UserRow,
            oidc_subject: Option<String>,
        }
        let sql = format!(
            "SELECT {USER_COLUMNS}, oidc_subject FROM users
             WHERE LOWER(username) = LOWER($1) AND kind = 'human' ORDER BY username LIMIT 1"
        );
        let row = read!(self, |pool| {
            sqlx::query_as::<_, Candidate>(&sql)
                .bind(username)
                .fetch_optional(pool)
                .await
        })?;
        Ok(row.map(|c| (c.user.into(), c.oidc_subject)))
    }

    /// Links an account to an identity provider's subject id, if it has none yet; false
    /// when it already had one. `Duplicate("identity")` when another account has it.
    pub async fn link_oidc_subject(&self, id: Uuid, subject: &str) -> StoreResult<bool> {
        let linked = write!(self, |pool| {
            sqlx::query("UPDATE users SET oidc_subject = $2 WHERE id = $1 AND oidc_subject IS NULL")
                .bind(id)
                .bind(subject)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })
        .map_err(|e| on_unique(e, "identity"))?;
        Ok(linked == 1)
    }

    pub async fn list_users(&self) -> StoreResult<Vec<User>> {
        let sql =
            format!("SELECT {USER_COLUMNS} FROM users WHERE kind = 'human' ORDER BY username");
        let rows = read!(self, |pool| sqlx::query_as::<_, UserRow>(&sql)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(User::from).collect())
    }

    /// How many active admins exist (an empty database has none).
    pub async fn count_active_admins(&self) -> StoreResult<i64> {
        let (n,): (i64,) = read!(self, |pool| {
            sqlx::query_as("SELECT COUNT(*) FROM users WHERE role = 'admin' AND active = TRUE")
                .fetch_one(pool)
                .await
        })?;
        Ok(n)
    }

    /// Changes a user's role. Returns the updated user, `None` if there is no such user.
    pub async fn set_role(&self, id: Uuid, role: Role) -> StoreResult<Option<User>> {
        write!(self, |pool| {
            sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
                .bind(id)
                .bind(role.as_str())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        self.user_by_id(id).await
    }

    /// Sets a user's skills (checked by [`verdict_core::routing::parse_skills`]).
    pub async fn set_skills(&self, id: Uuid, skills: &[String]) -> StoreResult<()> {
        self.set_skill_list(id, "UPDATE users SET skills = $2 WHERE id = $1", skills)
            .await
    }

    /// Sets the skills a user declared themself (checked like [`Self::set_skills`]'s).
    pub async fn set_declared_skills(&self, id: Uuid, skills: &[String]) -> StoreResult<()> {
        let sql = "UPDATE users SET declared_skills = $2 WHERE id = $1";
        self.set_skill_list(id, sql, skills).await
    }

    /// Writes `skills` as JSON with `sql`, one of the two statements above.
    async fn set_skill_list(&self, id: Uuid, sql: &str, skills: &[String]) -> StoreResult<()> {
        let skills = serde_json::to_string(skills).unwrap_or_else(|_| "[]".into());
        write!(self, |pool| {
            sqlx::query(sql)
                .bind(id)
                .bind(&skills)
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(())
    }

    /// Activates or deactivates a user. Deactivation ends every session of the user and
    /// revokes their API tokens in the same transaction (reactivation brings neither
    /// back), then gives the tasks they held open back to the pool.
    pub async fn set_active(&self, id: Uuid, active: bool) -> StoreResult<Option<User>> {
        let now = Utc::now();
        transaction!(self, |tx| {
            sqlx::query("UPDATE users SET active = $2 WHERE id = $1")
                .bind(id)
                .bind(active)
                .execute(&mut *tx)
                .await?;
            if !active {
                sqlx::query("DELETE FROM sessions WHERE user_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                revoke_tokens!(&mut *tx, id, now)?;
            }
        });
        if !active {
            self.release(super::assignments::Release::OfRater(id))
                .await?;
        }
        self.user_by_id(id).await
    }

    /// Replaces a password hash, ends every session of the user and revokes their API
    /// tokens, so neither a stolen session nor a stolen token outlives a password change.
    pub async fn set_password_hash(&self, id: Uuid, password_hash: &str) -> StoreResult<bool> {
        let now = Utc::now();
        let changed = transaction!(self, |tx| {
            let done = sqlx::query(
                "UPDATE users SET password_hash = $2, password_changed_at = $3 WHERE id = $1",
            )
            .bind(id)
            .bind(password_hash)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM sessions WHERE user_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            revoke_tokens!(&mut *tx, id, now)?;
            done.rows_affected() == 1
        });
        Ok(changed)
    }
}

/// Revokes every live API token of a user.
macro_rules! revoke_tokens {
    ($tx:expr, $user:expr, $now:expr) => {
        sqlx::query(
            "UPDATE api_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
        )
        .bind($user)
        .bind($now)
        .execute($tx)
        .await
    };
}
use revoke_tokens;
