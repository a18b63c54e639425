//! Accounts and their API tokens: `verdict user` and `verdict token`.

use std::io::{BufRead, IsTerminal};

use anyhow::{Context, bail};

use super::{TokenCommand, UserCommand};
use crate::auth::Role;
use crate::credentials::password::Hasher;
use crate::error::AppError;
use crate::services::ServiceError;
use crate::services::accounts::{self, Changes, NewUser, username_violation};
use crate::services::audit::Actor;
use crate::{Store, config};

/// Reads a password without it ever touching argv: the first line of standard input
/// with `--password-stdin`, otherwise asked twice on the terminal without echo.
fn read_password(from_stdin: bool) -> anyhow::Result<String> {
    if from_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("cannot read standard input")?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_owned());
    }
    if !std::io::stdin().is_terminal() {
        bail!("no terminal to ask for the password on; pipe it in with --password-stdin");
    }
    let first = rpassword::prompt_password("Password: ")?;
    let second = rpassword::prompt_password("Password again: ")?;
    if first != second {
        bail!("the passwords differ");
    }
    Ok(first)
}

async fn find_user(store: &Store, username: &str) -> anyhow::Result<verdict_core::user::User> {
    store
        .user_by_name(username)
        .await?
        .with_context(|| format!("no user named {username:?}"))
}

pub(super) async fn user(store: &Store, cmd: UserCommand) -> anyhow::Result<()> {
    match cmd {
        UserCommand::Add {
            username,
            role,
            password_stdin,
        } => {
            if let Some(why) = username_violation(username.trim()) {
                bail!("username {why}");
            }
            if Role::parse(&role).is_none() {
                bail!("unknown role {role:?}: use rater, lead or admin");
            }
            let password = read_password(password_stdin)?;
            let new = NewUser::parse(Some(&username), Some(&role), Some(&password)).map_err(
                |fields| {
                    let reasons: Vec<String> =
                        fields.iter().map(|(f, why)| format!("{f} {why}")).collect();
                    anyhow::anyhow!(reasons.join("; "))
                },
            )?;
            let user = accounts::create_user(store, &cli_hasher(), new, Some(Actor::Cli))
                .await
                .map_err(|e| anyhow::anyhow!("{}", AppError::from(e)))?;
            println!("created {} ({})", user.username, user.role);
        }
        UserCommand::List => {
            println!(
                "{:<32} {:<6} {:<8} {:<17} skills",
                "username", "role", "active", "created"
            );
            for u in store.list_users().await? {
                let active = if u.active { "yes" } else { "no" };
                let created = u.created_at.format("%Y-%m-%d %H:%M").to_string();
                println!(
                    "{:<32} {:<6} {:<8} {created:<17} {}",
                    u.username,
                    u.role.as_str(),
                    active,
                    u.skills.join(", ")
                );
            }
        }
        UserCommand::SetPassword {
            username,
            password_stdin,
        } => {
            let user = find_user(store, &username).await?;
            let password = read_password(password_stdin)?;
            let changes = Changes {
                password: Some(password),
                ..Changes::default()
            };
            accounts::update_user(store, &cli_hasher(), Actor::Cli, user.id, changes)
                .await
                .map_err(refused)?;
            println!(
                "password changed for {username}; their sessions have ended and their API \
                 tokens are revoked"
            );
        }
        UserCommand::Skills { username, skills } => {
            let user = find_user(store, &username).await?;
            let skills = verdict_core::routing::parse_skills_text(&skills)
                .map_err(|why| anyhow::anyhow!("skills {why}"))?;
            let changes = Changes {
                skills: Some(skills),
                ..Changes::default()
            };
            let user = accounts::update_user(store, &cli_hasher(), Actor::Cli, user.id, changes)
                .await
                .map_err(refused)?;
            if user.skills.is_empty() {
                println!("{username} has no skills now");
            } else {
                println!("{username}'s skills: {}", user.skills.join(", "));
            }
        }
        UserCommand::Deactivate { username } => {
            let user = find_user(store, &username).await?;
            let changes = Changes {
                active: Some(false),
                ..Changes::default()
            };
            accounts::update_user(store, &cli_hasher(), Actor::Cli, user.id, changes)
                .await
                .map_err(refused)?;
            println!(
                "deactivated {username}; their sessions have ended, their API tokens are \
                 revoked and the tasks they held went back to the pool"
            );
        }
    }
    Ok(())
}

/// The password hasher for account commands: one thread, as a command hashes one
/// password, waiting as long as the server does by default.
fn cli_hasher() -> Hasher {
    Hasher::new(1, config::DEFAULT_HASH_WAIT)
}

/// Why an account change was refused, in the words the command line prints: each bad
/// field as `field why`.
fn refused(err: ServiceError) -> anyhow::Error {
    match err {
        ServiceError::Invalid(fields) => {
            let reasons: Vec<String> = fields.iter().map(|(f, why)| format!("{f} {why}")).collect();
            anyhow::anyhow!(reasons.join("; "))
        }
        other => anyhow::anyhow!("{other}"),
    }
}

pub(super) async fn token(store: &Store, cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Create { username, name } => {
            let user = find_user(store, &username).await?;
            if !user.active {
                bail!("{username} is deactivated");
            }
            let (_, secret) = accounts::issue_token_for(store, Actor::Cli, &user, &name)
                .await
                .map_err(|e| anyhow::anyhow!("{}", AppError::from(e)))?;
            println!("{secret}");
        }
    }
    Ok(())
}
