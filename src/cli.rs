//! The `verdict` command line: serve, migrate, and account administration.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use tokio::net::TcpListener;

use crate::audit::{self, Actor};
use crate::auth::Role;
use crate::users::{NewUser, username_violation};
use crate::{AppState, Config, Store, auth, users};

const DEFAULT_DATABASE_URL: &str = "sqlite://verdict.db";

/// verdict: human rating of AI answers to coding prompts.
#[derive(Debug, Parser)]
#[command(name = "verdict", version, about, long_about = None)]
pub struct Cli {
    /// Database: sqlite://FILE (created if missing) or postgres://USER@HOST/DB.
    #[arg(long, global = true, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    database_url: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the web server (migrates the database first).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate,
    /// Manage accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Manage rubric documents.
    #[command(subcommand)]
    Rubric(RubricCommand),
    /// Manage LLM judges and run them over batches.
    #[command(subcommand)]
    Judge(JudgeCommand),
    /// Import tasks from a file into a new or existing batch.
    Import(ImportArgs),
    /// Export a batch's ratings (canonical orientation, one row per rating).
    Export(ExportArgs),
    /// Write a consistent copy of a SQLite database to a new file, while it is in use
    /// (on PostgreSQL, use pg_dump; the error says how).
    Backup(BackupArgs),
    /// Run a demo: a fresh database with demo accounts and a demo batch.
    Demo(DemoArgs),
    /// Copy everything from one database into a new, empty one (SQLite to PostgreSQL
    /// when a team outgrows one machine, or back), then check each table's count. Stop
    /// every `verdict serve` on the source first.
    MigrateData(MigrateDataArgs),
}

#[derive(Debug, Args)]
struct MigrateDataArgs {
    /// The database to copy: sqlite://FILE or postgres://USER@HOST/DB.
    #[arg(long)]
    from: String,
    /// The new, empty database to copy into (created and migrated first; a SQLite file
    /// is created if missing).
    #[arg(long)]
    to: String,
}

#[derive(Debug, Subcommand)]
enum JudgeCommand {
    /// Configure a judge: an OpenAI-compatible endpoint (`--base-url
    /// http://127.0.0.1:8081/v1`) and model. Its API key is read from an environment
    /// variable of the server (`--api-key-env`); none for a local server.
    Add {
        #[arg(long)]
        name: String,
        #[arg(long)]
        base_url: String,
        #[arg(long)]
        model: String,
        /// The server's environment variable holding the key; its name must begin with
        /// VERDICT_JUDGE_KEY_ (e.g. VERDICT_JUDGE_KEY_OPENAI).
        #[arg(long)]
        api_key_env: Option<String>,
        #[arg(long)]
        temperature: Option<f64>,
        #[arg(long)]
        max_tokens: Option<u32>,
        #[arg(long)]
        seed: Option<i64>,
        /// Constrain outputs to the answer's JSON schema (`response_format`).
        #[arg(long)]
        structured_output: bool,
        #[arg(long)]
        concurrency: Option<u32>,
        #[arg(long)]
        requests_per_minute: Option<u32>,
        /// The most of a reply read, in bytes (default 4 MiB); a longer one fails the call.
        #[arg(long)]
        max_reply_bytes: Option<u64>,
        #[command(flatten)]
        endpoints: JudgeEndpointArgs,
    },
    /// List the judges.
    List,
    /// Run a judge over a batch here, with a progress bar, until every call is made.
    /// An open run of the judge over the batch is resumed (after Ctrl-C, or a pause):
    /// it asks only what it does not have yet.
    Run {
        /// The batch's name.
        #[arg(long)]
        batch: String,
        /// The judge's name.
        #[arg(long)]
        judge: String,
        #[command(flatten)]
        endpoints: JudgeEndpointArgs,
    },
}

/// Where judges may be sent, and how much of a reply they may be let send: for `serve`,
/// and for the judge commands, which configure and call judges themselves.
#[derive(Debug, Args)]
struct JudgeEndpointArgs {
    /// The only hosts judges may be sent to: names, addresses or CIDRs, comma-separated
    /// (e.g. 127.0.0.1,10.0.0.0/8,llm.internal). Checked when a judge is configured and,
    /// on the addresses a name resolves to, when it is called. Unset: any host, but
    /// link-local and metadata addresses (169.254.0.0/16, fe80::/10), which never are.
    #[arg(long, env = "VERDICT_JUDGE_ALLOW_HOSTS", value_delimiter = ',')]
    judge_allow_hosts: Option<Vec<crate::judge::endpoint::AllowedHost>>,
    /// The largest reply a judge may be set to read, in MiB (a judge reads 4 MiB unless
    /// set otherwise, and never more than this).
    #[arg(long, env = "VERDICT_JUDGE_MAX_REPLY_MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    judge_max_reply_mib: u64,
}

impl JudgeEndpointArgs {
    fn policy(&self) -> crate::judge::endpoint::EndpointPolicy {
        crate::judge::endpoint::EndpointPolicy {
            allow_hosts: self.judge_allow_hosts.clone(),
            max_reply_bytes: self.judge_max_reply_mib * 1024 * 1024,
        }
    }
}

#[derive(Debug, Args)]
struct BackupArgs {
    /// The file to write; it must not exist yet.
    #[arg(long)]
    to: std::path::PathBuf,
}

#[derive(Debug, Args)]
struct ExportArgs {
    /// The batch's name.
    #[arg(long)]
    batch: String,
    /// csv or jsonl.
    #[arg(long, default_value = "csv")]
    format: String,
    /// Where to write (default: standard output).
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// Only this outcome: rated, skipped or out_of_scope.
    #[arg(long)]
    outcome: Option<String>,
    /// Only this status: submitted, returned, accepted or rejected.
    #[arg(long)]
    status: Option<String>,
    /// Only this rater's ratings.
    #[arg(long)]
    rater: Option<String>,
    /// Submitted at or after this date or RFC 3339 time.
    #[arg(long)]
    since: Option<String>,
    /// Submitted before this date or RFC 3339 time.
    #[arg(long)]
    until: Option<String>,
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// The batch to create, or to add tasks to if it exists.
    #[arg(long)]
    name: String,
    /// The rubric of a new batch.
    #[arg(long, default_value = "blackhat")]
    rubric: String,
    /// Raters per task in a new batch (default 1); when adding to an existing batch, it
    /// must be the batch's (change it with the batch's settings).
    #[arg(long)]
    overlap: Option<i32>,
    /// Show A and B in a fixed order (a new batch randomises by default); when adding to
    /// an existing batch, the batch must already show them so.
    #[arg(long)]
    no_randomize: bool,
    /// Let raters of a new batch see each task's external id (by default they see
    /// "Task 1", "Task 2", ... counting their own tasks); when adding to an existing
    /// batch, the batch must already show them.
    #[arg(long)]
    raters_see_external_ids: bool,
    /// jsonl, json or csv (default: from the file name).
    #[arg(long)]
    format: Option<String>,
    /// The file to import.
    file: std::path::PathBuf,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Address and port to listen on.
    #[arg(long, env = "VERDICT_BIND", default_value = "127.0.0.1:8080")]
    bind: String,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "VERDICT_BIND", default_value = "127.0.0.1:8080")]
    bind: String,
    /// Largest request body (uploads included), in MiB.
    #[arg(long, env = "VERDICT_MAX_UPLOAD_MB", default_value_t = 256)]
    max_upload_mb: u64,
    /// Mark the session cookie Secure; turn on when verdict is served over HTTPS.
    #[arg(long, env = "VERDICT_COOKIE_SECURE")]
    cookie_secure: bool,
    /// Seconds a connection has to send a request's headers, after opening or after its
    /// previous response (so idle kept-alive connections close after this too).
    #[arg(long, env = "VERDICT_HEADER_TIMEOUT_S", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    header_timeout_s: u64,
    /// Seconds a request body may send nothing before the request is abandoned.
    #[arg(long, env = "VERDICT_BODY_TIMEOUT_S", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    body_timeout_s: u64,
    /// Open connections at most; more wait until one closes (keep it well under the
    /// process's limit of open files, `ulimit -n`).
    #[arg(long, env = "VERDICT_MAX_CONNECTIONS", default_value_t = 512,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// Metrics and exports computed at once; more wait their turn, so leads' reports
    /// cannot starve raters (default: half the cores, at least one).
    #[arg(long, env = "VERDICT_MAX_HEAVY_READS",
          value_parser = clap::value_parser!(u64).range(1..))]
    max_heavy_reads: Option<u64>,
    /// A judge run whose worker has been silent this long is taken over (another
    /// instance, or this one after a restart, works it on).
    #[arg(long, env = "VERDICT_JUDGE_LEASE_S", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(2..))]
    judge_lease_s: u64,
    #[command(flatten)]
    judge_endpoints: JudgeEndpointArgs,
    /// The vendored Pyodide package the in-browser code runner serves (installed by
    /// scripts/vendor-pyodide); without it Python blocks cannot be run, JavaScript can.
    #[arg(long, env = "VERDICT_PYODIDE_DIR", default_value = crate::config::DEFAULT_PYODIDE_DIR)]
    pyodide_dir: std::path::PathBuf,
    /// Reverse proxies in front of verdict, as addresses or CIDR networks separated by
    /// commas (e.g. 172.30.80.10 or 10.0.0.0/8). A request from one of them comes from
    /// the right-most address of its X-Forwarded-For that is not a trusted proxy, and the
    /// login limits count it there. Unset: every request comes from its connection's peer.
    #[arg(long, env = "VERDICT_TRUSTED_PROXIES", default_value = "",
          value_parser = trusted_proxies)]
    trusted_proxies: TrustedProxies,
}

/// The parsed `--trusted-proxies`.
#[derive(Debug, Clone)]
struct TrustedProxies(Vec<ipnet::IpNet>);

fn trusted_proxies(list: &str) -> Result<TrustedProxies, String> {
    crate::web::client::parse_trusted_proxies(list).map(TrustedProxies)
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Create an account (asks for the password, or reads it with --password-stdin). A
    /// password needs at least 10 characters and must be hard to guess: not a common
    /// password, word, name, date, keyboard pattern or repetition, and not the username.
    Add {
        #[arg(long)]
        username: String,
        /// rater, lead or admin.
        #[arg(long, default_value = "rater")]
        role: String,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// List accounts.
    List,
    /// Set a new password (ends the user's sessions); the same rules as `user add`.
    SetPassword {
        #[arg(long)]
        username: String,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Deactivate an account (ends its sessions; its tokens stop working).
    Deactivate {
        #[arg(long)]
        username: String,
    },
}

#[derive(Debug, Subcommand)]
enum RubricCommand {
    /// Add a rubric document (JSON): a new rubric, or the next version of the rubric of
    /// its name. Every broken rule is reported with its path in the document.
    Add {
        /// The document to read.
        file: std::path::PathBuf,
    },
    /// List the rubrics and their versions.
    List,
    /// Print a rubric's document (its newest version, or --version).
    Show {
        name: String,
        #[arg(long)]
        version: Option<i32>,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Create an API token for a user and print it (only the token, once).
    Create {
        #[arg(long)]
        username: String,
        /// What the token is for.
        #[arg(long, default_value = "cli")]
        name: String,
    },
}

/// Parses the command line and runs it.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(execute(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tower_sessions=warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
}

async fn open_store(url: &str) -> anyhow::Result<Store> {
    let store = Store::connect(url)
        .await
        .with_context(|| "cannot open the database")?;
    store
        .migrate()
        .await
        .context("cannot migrate the database")?;
    Ok(store)
}

async fn execute(cli: Cli) -> anyhow::Result<()> {
    if let Command::Demo(args) = cli.command {
        return crate::demo::run(&args.bind).await;
    }
    if let Command::MigrateData(args) = cli.command {
        return migrate_data(&args).await;
    }
    let store = open_store(&cli.database_url).await?;
    let result = match cli.command {
        Command::Serve(args) => serve(store.clone(), args, &cli.database_url).await,
        Command::Migrate => {
            println!("database is up to date");
            Ok(())
        }
        Command::User(cmd) => user(&store, cmd).await,
        Command::Token(cmd) => token(&store, cmd).await,
        Command::Rubric(cmd) => rubric(&store, cmd).await,
        Command::Judge(cmd) => judge(&store, cmd).await,
        Command::Import(args) => import(&store, args).await,
        Command::Export(args) => export(&store, args).await,
        Command::Backup(args) => backup(&store, &args, &cli.database_url).await,
        Command::Demo(_) | Command::MigrateData(_) => unreachable!("handled above"),
    };
    store.close().await;
    result
}

async fn migrate_data(args: &MigrateDataArgs) -> anyhow::Result<()> {
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

async fn backup(store: &Store, args: &BackupArgs, database_url: &str) -> anyhow::Result<()> {
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

async fn serve(store: Store, args: ServeArgs, database_url: &str) -> anyhow::Result<()> {
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
    let config = Config {
        judge_lease: std::time::Duration::from_secs(args.judge_lease_s),
        judge_endpoints: args.judge_endpoints.policy(),
        sealing_key: crate::credentials::sealed::SealingKey::from_env()
            .map_err(anyhow::Error::msg)?,
        max_heavy_reads: args.max_heavy_reads.map_or(config.max_heavy_reads, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        }),
        pyodide_dir: args.pyodide_dir,
        trusted_proxies: args.trusted_proxies.0,
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

async fn user(store: &Store, cmd: UserCommand) -> anyhow::Result<()> {
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
            let hasher = cli_hasher();
            let user = users::create(store, &hasher, new, None)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let detail = serde_json::json!({ "user_id": user.id, "role": user.role.as_str() });
            audit::record(store, Actor::Cli, "user.create", &user.username, detail).await;
            println!("created {} ({})", user.username, user.role);
        }
        UserCommand::List => {
            println!("{:<32} {:<6} {:<8} created", "username", "role", "active");
            for u in store.list_users().await? {
                let active = if u.active { "yes" } else { "no" };
                let created = u.created_at.format("%Y-%m-%d %H:%M");
                println!(
                    "{:<32} {:<6} {:<8} {created}",
                    u.username,
                    u.role.as_str(),
                    active
                );
            }
        }
        UserCommand::SetPassword {
            username,
            password_stdin,
        } => {
            let user = find_user(store, &username).await?;
            let password = read_password(password_stdin)?;
            if let Some(why) = auth::password::policy_violation(&password, &[&user.username]) {
                bail!("password {why}");
            }
            let hash = cli_hasher()
                .hash(password)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            store.set_password_hash(user.id, &hash).await?;
            let detail = serde_json::json!({
                "user_id": user.id, "changed": ["password"], "before": {}, "after": {}
            });
            audit::record(store, Actor::Cli, "user.update", &user.username, detail).await;
            println!(
                "password changed for {username}; their sessions have ended and their API \
                 tokens are revoked"
            );
        }
        UserCommand::Deactivate { username } => {
            let user = find_user(store, &username).await?;
            store.set_active(user.id, false).await?;
            if user.active {
                let detail = serde_json::json!({
                    "user_id": user.id, "changed": ["active"],
                    "before": {"active": true}, "after": {"active": false}
                });
                audit::record(store, Actor::Cli, "user.update", &user.username, detail).await;
            }
            println!(
                "deactivated {username}; their sessions have ended, their API tokens are \
                 revoked and the tasks they held went back to the pool"
            );
        }
    }
    Ok(())
}

/// The password hasher for account commands, with the server's default settings.
fn cli_hasher() -> auth::password::Hasher {
    let defaults = Config::default();
    auth::password::Hasher::new(defaults.max_concurrent_hashes, defaults.hash_wait)
}

async fn token(store: &Store, cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Create { username, name } => {
            let user = find_user(store, &username).await?;
            if !user.active {
                bail!("{username} is deactivated");
            }
            let (token, secret) = users::tokens::issue(store, &user, &name)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let detail = serde_json::json!({ "name": token.name });
            audit::record(store, Actor::Cli, "token.create", &user.username, detail).await;
            println!("{secret}");
        }
    }
    Ok(())
}

async fn rubric(store: &Store, cmd: RubricCommand) -> anyhow::Result<()> {
    match cmd {
        RubricCommand::Add { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let document: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid JSON", file.display()))?;
            let added = crate::rubrics::add(store, &document, Actor::Cli)
                .await
                .map_err(describe)?;
            if added.created {
                println!("added {} version {}", added.name, added.version);
            } else {
                println!(
                    "{} version {} is already this document; nothing changed",
                    added.name, added.version
                );
            }
        }
        RubricCommand::List => {
            for r in crate::rubrics::list(store).await.map_err(describe)? {
                let versions: Vec<String> =
                    r.versions.iter().map(|v| v.version.to_string()).collect();
                println!(
                    "{}\tversions {}\t{}{}",
                    r.name,
                    versions.join(","),
                    r.title,
                    if r.built_in { " (built in)" } else { "" }
                );
            }
        }
        RubricCommand::Show { name, version } => {
            let (_, rubric) = match crate::rubrics::get(store, &name, version).await {
                Err(crate::error::AppError::NotFound) => match version {
                    Some(v) => bail!("rubric {name:?} has no version {v}"),
                    None => bail!("no rubric named {name:?}"),
                },
                other => other.map_err(describe)?,
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&verdict_core::rubric::document::to_value(&rubric))?
            );
        }
    }
    Ok(())
}

async fn import(store: &Store, args: ImportArgs) -> anyhow::Result<()> {
    use verdict_core::import::Format;
    let format = match args.format.as_deref() {
        Some("jsonl" | "ndjson") => Format::Jsonl,
        Some("json") => Format::JsonArray,
        Some("csv") => Format::Csv,
        Some(other) => bail!("unknown format {other:?}: use jsonl, json or csv"),
        None => Format::from_file_name(&args.file.to_string_lossy()).context(
            "cannot tell the format from the file name; pass --format jsonl, json or csv",
        )?,
    };
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let params = crate::batches::UploadParams {
        name: Some(args.name),
        rubric: Some(args.rubric),
        overlap: args.overlap,
        randomize: args.no_randomize.then_some(false),
        raters_see_external_ids: args.raters_see_external_ids.then_some(true),
    };
    let new = crate::batches::new_batch(store, &params, None)
        .await
        .map_err(describe)?;
    let bar = indicatif::ProgressBar::new(bytes.len() as u64);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "checking {bar:40} {bytes}/{total_bytes} ({bytes_per_sec})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let ticker = bar.clone();
    let started = std::time::Instant::now();
    let size = bytes.len();
    let result = crate::batches::import(
        store,
        new,
        format,
        bytes.into(),
        move |done| ticker.set_position(done),
        Some(Actor::Cli),
    )
    .await;
    bar.finish_and_clear();
    let imported = result.map_err(describe)?;
    let seconds = started.elapsed().as_secs_f64().max(1e-6);
    println!(
        "{}: {} tasks added, {} unchanged ({:.1} MB in {:.2} s, {:.1} MB/s)",
        imported.batch.name,
        imported.created,
        imported.unchanged,
        size as f64 / 1e6,
        seconds,
        size as f64 / 1e6 / seconds
    );
    Ok(())
}

/// An application error as command-line text, with every bad field or record.
async fn judge(store: &Store, cmd: JudgeCommand) -> anyhow::Result<()> {
    use verdict_core::lifecycle::RunStatus;
    let key = crate::credentials::sealed::SealingKey::from_env().map_err(anyhow::Error::msg)?;
    match cmd {
        JudgeCommand::Add {
            name,
            base_url,
            model,
            api_key_env,
            temperature,
            max_tokens,
            seed,
            structured_output,
            concurrency,
            requests_per_minute,
            max_reply_bytes,
            endpoints,
        } => {
            let body = serde_json::json!({
                "name": name, "base_url": base_url, "model": model, "api_key_env": api_key_env,
                "temperature": temperature, "max_tokens": max_tokens, "seed": seed,
                "structured_output": structured_output, "concurrency": concurrency,
                "requests_per_minute": requests_per_minute, "max_reply_bytes": max_reply_bytes,
            });
            let (_, settings) =
                crate::judges::read_settings(store, key.as_ref(), &endpoints.policy(), &body, None)
                    .await
                    .map_err(|e| describe(e.into()))?;
            let judge = store.create_judge(&name, &settings).await?;
            crate::audit::record(
                store,
                crate::audit::Actor::Cli,
                "judge.create",
                &judge.name,
                serde_json::json!({"base_url": judge.base_url, "model": judge.model}),
            )
            .await;
            println!("created judge {} ({})", judge.name, judge.id);
        }
        JudgeCommand::List => {
            for judge in store.list_judges().await? {
                println!(
                    "{}\t{}\t{}\tconcurrency {}\t{}/min",
                    judge.name,
                    judge.base_url,
                    judge.model,
                    judge.concurrency,
                    judge.requests_per_minute
                );
            }
        }
        JudgeCommand::Run {
            batch,
            judge,
            endpoints,
        } => {
            let batch = store
                .batch_by_name(&batch)
                .await?
                .with_context(|| format!("no batch named {batch:?}"))?;
            let judge = crate::judges::find_judge(store, &judge)
                .await
                .map_err(|e| describe(e.into()))?;
            let open = store
                .runs_of_batch(batch.id)
                .await?
                .into_iter()
                .find(|r| r.judge_id == judge.id && r.status.is_open());
            let run = match open {
                Some(run) => {
                    store
                        .set_run_status(run.id, &[RunStatus::Paused], RunStatus::Running)
                        .await?;
                    eprintln!("resuming run {}", run.id);
                    run
                }
                None => crate::judges::start_run(store, key.as_ref(), &judge, &batch, None)
                    .await
                    .map_err(|e| describe(e.into()))?,
            };
            let judging = crate::services::judging::Judging::new(
                store.clone(),
                Config::default().judge_lease,
                Config::default().judge_retry_delay,
                key,
                endpoints.policy(),
            );
            let done = store.run_counts(run.id).await?;
            let bar = indicatif::ProgressBar::new(u64::try_from(run.calls).unwrap_or(0));
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} calls  {msg}  [{elapsed_precise}, {eta} left]",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_position(u64::try_from(done.answered + done.unparsed).unwrap_or(0));
            let counts = std::sync::Mutex::new((done.answered, done.unparsed, 0i64));
            let progress = |call: &crate::store::judges::Call| {
                let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
                match call.status {
                    verdict_core::lifecycle::CallStatus::Answered => c.0 += 1,
                    verdict_core::lifecycle::CallStatus::Unparsed => c.1 += 1,
                    verdict_core::lifecycle::CallStatus::Failed => c.2 += 1,
                }
                bar.set_message(format!(
                    "{} answered, {} unparsed, {} failed",
                    c.0, c.1, c.2
                ));
                bar.inc(1);
            };
            let work = judging.run_to_end(run.id, Some(&progress));
            tokio::select! {
                out = work => out.map_err(|e| describe(e.into()))?,
                () = crate::shutdown_signal() => {
                    bar.abandon_with_message("stopped; run the same command again to go on");
                    return Ok(());
                }
            }
            bar.finish();
            let view = crate::judges::run_view(
                store,
                store.run(run.id).await?.context("the run is gone")?,
            )
            .await
            .map_err(|e| describe(e.into()))?;
            println!(
                "run {}: {} — {} answered, {} unparsed, {} failed of {} calls; {} + {} tokens",
                view.id,
                view.status,
                view.answered,
                view.unparsed,
                view.failed,
                view.calls,
                view.tokens.prompt,
                view.tokens.completion
            );
        }
    }
    Ok(())
}

fn describe(err: crate::error::AppError) -> anyhow::Error {
    use crate::error::AppError;
    match err {
        AppError::Validation { message, fields } => {
            let lines: Vec<String> = fields
                .iter()
                .map(|(f, why)| format!("  {f}: {why}"))
                .collect();
            anyhow::anyhow!("{message}\n{}", lines.join("\n"))
        }
        AppError::BadRecords { count, errors } => {
            let mut lines: Vec<String> = errors
                .iter()
                .map(|e| format!("  line {}: {}", e.line, e.message))
                .collect();
            if count > errors.len() as u64 {
                lines.push(format!("  ... and {} more", count - errors.len() as u64));
            }
            anyhow::anyhow!(
                "{count} records are invalid; nothing was imported\n{}",
                lines.join("\n")
            )
        }
        // Whoever runs the command line holds the database: the cause is theirs to see.
        AppError::Internal(cause) => anyhow::anyhow!("internal error: {cause}"),
        other => anyhow::anyhow!("{other}"),
    }
}

async fn export(store: &Store, args: ExportArgs) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt;
    let query = crate::export::ExportQuery {
        format: Some(args.format),
        outcome: args.outcome,
        status: args.status,
        rater: args.rater,
        since: args.since,
        until: args.until,
    };
    let (format, filter) = crate::export::parse(&query).map_err(describe)?;
    let batch = store
        .batch_by_name(&args.batch)
        .await?
        .with_context(|| format!("no batch named {:?}", args.batch))?;
    let rubric = store.batch_rubric(&batch).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let output = args.output.clone();
    let writer = tokio::spawn(async move {
        let mut out: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = match &output {
            Some(path) => Box::new(tokio::fs::File::create(path).await?),
            None => Box::new(tokio::io::stdout()),
        };
        while let Some(chunk) = rx.recv().await {
            out.write_all(&chunk).await?;
        }
        out.flush().await?;
        Ok::<(), std::io::Error>(())
    });
    let export = crate::export::Export {
        batch_id: batch.id,
        rubric,
        rubric_version: batch.rubric_version,
        format,
        filter: &filter,
    };
    let rows = crate::export::write(store, export, None, tx)
        .await
        .map_err(describe)?;
    writer
        .await
        .context("the writer stopped")?
        .context("cannot write the export")?;
    if let Some(path) = args.output {
        eprintln!("{rows} ratings written to {}", path.display());
    }
    Ok(())
}
