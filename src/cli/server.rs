//! Running the server and looking after its database: `verdict serve`, `backup` and
//! `migrate-data`.

use anyhow::Context;
use tokio::net::TcpListener;

use super::{BackupArgs, DEFAULT_DATABASE_URL, MigrateDataArgs, ServeArgs};
use crate::{AppState, Config, Store};

pub(super) async fn migrate_data(args: &MigrateDataArgs) -> anyhow::Result<()> {
    eprintln!("copying every table; the destination stays empty if anything fails");
    let counted = crate::migrate_data::run(&args.from, &args.to, |c| {
        eprintln!("{:<16} {:>10} rows", c.table, c.destination);
    })
    .await?;
    let rows: i64 = counted.iter().map(|c| c.destination).sum();
    println!(
        "copied {rows} rows in {} tables; every table's count matches the source",
        counted.len()
    );
    Ok(())
}

pub(super) async fn backup(
    store: &Store,
    args: &BackupArgs,
    database_url: &str,
) -> anyhow::Result<()> {
    if store.backend() == crate::store::Backend::Postgres {
        anyhow::bail!(
            "verdict backup copies SQLite databases; for PostgreSQL run \
             `pg_dump --format=custom --file {} '{database_url}'` (restore with pg_restore)",
            args.to.display()
        );
    }
    if args.to.exists() {
        anyhow::bail!(
            "{} already exists: choose a new file name",
            args.to.display()
        );
    }
    let to = args
        .to
        .to_str()
        .context("the backup path must be valid UTF-8")?;
    store
        .backup_into(to)
        .await
        .with_context(|| format!("cannot write the backup to {to}"))?;
    eprintln!("backup written to {to}");
    Ok(())
}

pub(super) async fn serve(store: Store, args: ServeArgs, database_url: &str) -> anyhow::Result<()> {
    if store.count_active_admins().await? == 0 {
        let database = if database_url == DEFAULT_DATABASE_URL {
            String::new()
        } else {
            " (with the same DATABASE_URL or --database-url)".to_owned()
        };
        tracing::warn!("no admin account exists yet");
        eprintln!(
            "\nNo admin account exists yet. Create the first one{database} with:\n\n    \
             verdict user add --username admin --role admin\n"
        );
    }
    let config = Config {
        max_upload_bytes: args.max_upload_mb.saturating_mul(1024 * 1024),
        cookie_secure: args.cookie_secure,
        header_timeout: std::time::Duration::from_secs(args.header_timeout_s),
        body_idle_timeout: std::time::Duration::from_secs(args.body_timeout_s),
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        ..Config::default()
    };
    let sealing_key =
        crate::credentials::sealed::SealingKey::from_env().map_err(anyhow::Error::msg)?;
    let config = Config {
        judge_lease: args.judge_lease.lease(),
        deleted_retention: args.retention.retention(),
        judge_endpoints: args.judge_endpoints.policy(),
        max_heavy_reads: args.max_heavy_reads.map_or(config.max_heavy_reads, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        }),
        pyodide_dir: args.pyodide.ensure().await,
        trusted_proxies: args.trusted_proxies.0,
        webhooks: crate::config::Delivering {
            timeout: std::time::Duration::from_secs(args.webhook_timeout_s),
            retries: verdict_core::webhook::Retries {
                attempts: args.webhook_attempts,
                ..Default::default()
            },
            endpoints: crate::services::judging::endpoint::EndpointPolicy::webhooks(
                args.webhook_allow_hosts.clone(),
            ),
            max_per_owner: args.webhook_max_per_owner,
            max_per_batch: args.webhook_max_per_batch,
            stall_check: std::time::Duration::from_secs(args.stall_check_s),
            ..Default::default()
        },
        oidc: args
            .oidc
            .config(sealing_key.is_some())
            .map_err(anyhow::Error::msg)?,
        sealing_key,
        password_sign_in: !args.oidc.no_password_sign_in,
        metrics: crate::config::MetricsAccess::from_settings(
            args.metrics_token.as_deref(),
            args.metrics_open,
        )
        .map_err(anyhow::Error::msg)?,
        ..config
    };
    let listener = TcpListener::bind(&args.bind)
        .await
        .with_context(|| format!("cannot listen on {}", args.bind))?;
    let addr = listener.local_addr()?;
    tracing::info!(backend = ?store.backend(), "listening on http://{addr}");
    crate::serve(
        listener,
        AppState::new(store, config),
        crate::shutdown_signal(),
    )
    .await?;
    tracing::info!("stopped");
    Ok(())
}
