//! The `verdict` command line: its arguments (here) and their commands, one file per
//! group: the server and its database (`server`), accounts and tokens (`accounts`),
//! rubrics (`rubrics`), a batch's tasks in and ratings out (`batches`), and LLM judges
//! (`judges`).

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::Store;

mod accounts;
mod batches;
mod judges;
mod reports;
mod rubrics;
mod server;

const DEFAULT_DATABASE_URL: &str = "sqlite://verdict.db";

/// verdict: human rating of AI answers to coding prompts.
#[derive(Debug, Parser)]
#[command(name = "verdict", version, about, long_about = None)]
pub struct Cli {
    /// Database: sqlite://FILE (created if missing) or postgres://USER@HOST/DB. Not used
    /// by `demo`, which keeps a database of its own in a temporary folder.
    #[arg(long, global = true, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    database_url: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the web server (migrates the database first).
    Serve(Box<ServeArgs>),
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
    /// Reports for programme leads.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Delete, restore and purge batches.
    #[command(subcommand)]
    Batch(BatchCommand),
    /// Write a consistent copy of a SQLite database to a new file, while it is in use
    /// (on PostgreSQL, use pg_dump; the error says how).
    Backup(BackupArgs),
    /// Run a demo: a fresh database with demo accounts and a demo batch, in a new
    /// temporary folder whose path it prints (--database-url is not used).
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
    /// An open run of the judge over the batch is resumed (after Ctrl-C, a kill or a
    /// pause): it asks only what it does not have yet. While another process works the
    /// run, it waits, counting down, until that one has been silent for the lease
    /// (`--judge-lease-s`), then takes the run over; at once if that process was of this
    /// machine and is gone. Exits non-zero unless the run ends finished: failed, paused
    /// or cancelled by someone else, stopped with Ctrl-C or SIGTERM, or held by another
    /// with `--no-wait`.
    Run {
        /// The batch's name.
        #[arg(long)]
        batch: String,
        /// The judge's name.
        #[arg(long)]
        judge: String,
        /// When another process works the run, exit (non-zero) saying so instead of
        /// waiting to take it over.
        #[arg(long)]
        no_wait: bool,
        #[command(flatten)]
        lease: JudgeLeaseArgs,
        #[command(flatten)]
        endpoints: JudgeEndpointArgs,
    },
}

/// How long a judge run's worker may fall silent before another takes its run over: for
/// `serve` and `judge run`, which both work runs.
#[derive(Debug, Args)]
struct JudgeLeaseArgs {
    /// A judge run whose worker has been silent this long is taken over (another
    /// instance, `verdict judge run`, or this one after a restart, works it on). A worker
    /// that was a process of this machine and is gone is taken over at once.
    #[arg(long, env = "VERDICT_JUDGE_LEASE_S",
          default_value_t = crate::config::DEFAULT_JUDGE_LEASE.as_secs(),
          value_parser = clap::value_parser!(u64).range(2..))]
    judge_lease_s: u64,
}

impl JudgeLeaseArgs {
    fn lease(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.judge_lease_s)
    }
}

/// Where judges may be sent, and how much of a reply they may be let send: for `serve`,
/// and for the judge commands, which configure and call judges themselves.
#[derive(Debug, Args)]
struct JudgeEndpointArgs {
    /// The only hosts judges may be sent to: names, addresses or CIDRs, comma-separated
    /// (e.g. 127.0.0.1,10.0.0.0/8,llm.internal). Checked when a judge is configured and,
    /// on the addresses a name resolves to, when it is called. Unset: any host, but
    /// link-local and metadata addresses (169.254.0.0/16, fe80::/10, 100.100.100.200, in
    /// every spelling), which never are.
    #[arg(long, env = "VERDICT_JUDGE_ALLOW_HOSTS", value_delimiter = ',')]
    judge_allow_hosts: Option<Vec<crate::services::judging::endpoint::AllowedHost>>,
    /// The largest reply a judge may be set to read, in MiB (a judge reads 4 MiB unless
    /// set otherwise, and never more than this).
    #[arg(long, env = "VERDICT_JUDGE_MAX_REPLY_MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    judge_max_reply_mib: u64,
}

impl JudgeEndpointArgs {
    fn policy(&self) -> crate::services::judging::endpoint::EndpointPolicy {
        crate::services::judging::endpoint::EndpointPolicy {
            allow_hosts: self.judge_allow_hosts.clone(),
            max_reply_bytes: self.judge_max_reply_mib * 1024 * 1024,
            ..Default::default()
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
    /// Only the rows that count in the metrics (no skips, out-of-scope marks, gold,
    /// rejected or unreviewed review-first ratings): the rows to average.
    #[arg(long)]
    counted: bool,
    /// The final dataset instead: one row per task (gold and withdrawn ones left out),
    /// its answer and source (adjudicated, else the batch's final method over the
    /// ratings that count, else none). No other filter then.
    #[arg(long = "final")]
    final_set: bool,
}

#[derive(Debug, Subcommand)]
enum BatchCommand {
    /// Delete a batch: it leaves every list, page and metric at once, and the
    /// assignments raters hold on it end. It can be restored for the retention
    /// (`--deleted-retention-days` of the server, 30 by default), then it is purged.
    Delete {
        /// The batch's name.
        #[arg(long)]
        batch: String,
    },
    /// Bring a deleted batch back, as it was, while its retention lasts.
    Restore {
        /// The deleted batch's name.
        #[arg(long)]
        batch: String,
        #[command(flatten)]
        retention: RetentionArgs,
    },
    /// List the deleted batches, with when each will be purged.
    Deleted {
        #[command(flatten)]
        retention: RetentionArgs,
    },
    /// Remove for good, with their tasks and ratings, the deleted batches whose
    /// retention is over (what the server does every minute), or with --batch that one
    /// deleted batch now.
    Purge {
        /// Only this deleted batch (its name), whatever its age.
        #[arg(long)]
        batch: Option<String>,
        #[command(flatten)]
        retention: RetentionArgs,
    },
}

/// How long deleted batches can be restored: for `serve` and the batch commands.
#[derive(Debug, Args)]
struct RetentionArgs {
    /// Days a deleted batch can be restored; after them it is purged with its tasks and
    /// ratings.
    #[arg(long, env = "VERDICT_DELETED_RETENTION_DAYS",
          default_value_t = crate::services::corrections::DEFAULT_RETENTION_DAYS,
          value_parser = clap::value_parser!(u64).range(0..=36500))]
    deleted_retention_days: u64,
}

impl RetentionArgs {
    fn retention(&self) -> crate::services::corrections::Retention {
        crate::services::corrections::Retention::days(self.deleted_retention_days)
    }
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// The team's hours: per rater and per day or ISO week (UTC), finished ratings,
    /// tasks rated, skips by reason, out of scope, active seconds and the median seconds
    /// per rated task, from people's finished ratings by the time they were submitted
    /// (what `GET /api/v1/reports/hours` answers).
    Hours(HoursArgs),
    /// Where each rater stands with a batch's qualification (what a lead sees at
    /// `GET /api/v1/batches/{id}/qualification`): passed, failed or in progress, with
    /// each try's tasks right of those rated.
    Qualification {
        /// The batch's name.
        #[arg(long)]
        batch: String,
    },
}

#[derive(Debug, Args)]
struct HoursArgs {
    /// Only this batch (its name); by default every batch.
    #[arg(long)]
    batch: Option<String>,
    /// Ratings submitted at or after this time, or from the start of this date (UTC).
    #[arg(long)]
    from: Option<String>,
    /// Ratings submitted before this time, or up to the end of this date (UTC).
    #[arg(long)]
    to: Option<String>,
    /// day or week (ISO weeks, from Monday).
    #[arg(long, default_value = "day")]
    by: String,
    /// json or csv (the file a team pays from).
    #[arg(long, default_value = "json")]
    format: String,
    /// Where to write (default: standard output).
    #[arg(long)]
    output: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// The batch to create, or to add tasks to if it exists.
    #[arg(long)]
    name: String,
    /// The rubric of a new batch (default blackhat); tasks added to an existing batch
    /// take its rubric, and if given, it must be the batch's.
    #[arg(long)]
    rubric: Option<String>,
    /// Raters per task in a new batch (default 1); when adding to an existing batch, it
    /// must be the batch's (change it with the batch's settings).
    #[arg(long)]
    overlap: Option<i32>,
    /// The most raters a task of a new batch is asked of, one more at a time while its
    /// answers disagree (default: --overlap, no escalation).
    #[arg(long)]
    max_overlap: Option<i32>,
    /// When a task needs one more rater: side, points:<n>, no_majority or spread:<n>,
    /// each optionally naming its question (points:sxs:3); default: side on the
    /// rubric's first preference, else no_majority on its first choice.
    #[arg(long)]
    escalate: Option<String>,
    /// Route a new batch's tasks by this task field, metadata.<key> (e.g.
    /// metadata.language): raters are offered the tasks whose value is one of their
    /// skills (`verdict user skills`) first, or only with --routing strict.
    #[arg(long)]
    route_by: Option<String>,
    /// prefer (matching tasks first, the default) or strict (matching tasks, and tasks
    /// without the field, only).
    #[arg(long)]
    routing: Option<String>,
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
    #[command(flatten)]
    pyodide: PyodideArgs,
}

/// Where the Python code runner's Pyodide is, and whether to install it when missing.
#[derive(Debug, Args)]
struct PyodideArgs {
    /// The vendored Pyodide package the in-browser code runner serves. When the default
    /// folder has none and npm is there, verdict installs the pinned version into it at
    /// start-up (what scripts/vendor-pyodide does); without it Python blocks cannot be
    /// run, JavaScript can.
    #[arg(long, env = "VERDICT_PYODIDE_DIR", default_value = crate::config::DEFAULT_PYODIDE_DIR)]
    pyodide_dir: std::path::PathBuf,
    /// Never run npm to install a missing Pyodide at start-up (the variable takes 1, true,
    /// yes or on, and 0, false, no or off).
    #[arg(long, env = "VERDICT_NO_PYODIDE_INSTALL", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    no_pyodide_install: bool,
}

impl PyodideArgs {
    /// Pyodide in its folder, installed first where it is missing and may be.
    async fn ensure(&self) -> std::path::PathBuf {
        crate::runner::install::ensure(&self.pyodide_dir, !self.no_pyodide_install).await;
        self.pyodide_dir.clone()
    }
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
    #[command(flatten)]
    judge_lease: JudgeLeaseArgs,
    #[command(flatten)]
    judge_endpoints: JudgeEndpointArgs,
    #[command(flatten)]
    pyodide: PyodideArgs,
    #[command(flatten)]
    retention: RetentionArgs,
    /// Reverse proxies in front of verdict, as addresses or CIDR networks separated by
    /// commas (e.g. 172.30.80.10 or 10.0.0.0/8). A request from one of them comes from
    /// the right-most address of its X-Forwarded-For that is not a trusted proxy, and the
    /// login limits count it there. Unset: every request comes from its connection's peer.
    #[arg(long, env = "VERDICT_TRUSTED_PROXIES", default_value = "",
          value_parser = trusted_proxies)]
    trusted_proxies: TrustedProxies,
    /// Serve /metrics (Prometheus text format) to requests carrying this token as
    /// `Authorization: Bearer <token>`; at least 24 characters. Set it through the
    /// environment, not the command line, so it stays out of the process list.
    #[arg(long, env = "VERDICT_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    /// Serve /metrics to anyone who can reach it, without a token (for a scraper on a
    /// private network); cannot be combined with --metrics-token.
    #[arg(long, env = "VERDICT_METRICS_OPEN", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    metrics_open: bool,
    /// Seconds a webhook receiver has to answer an attempt; a delivery held by an
    /// instance that died is sent again after twice this and a second.
    #[arg(long, env = "VERDICT_WEBHOOK_TIMEOUT_S", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    webhook_timeout_s: u64,
    /// Attempts at a webhook delivery before it is marked failed (5 s after the first
    /// failure, doubling up to an hour apart: 16 take about six and a half hours); a
    /// failed one is sent again only by hand.
    #[arg(long, env = "VERDICT_WEBHOOK_ATTEMPTS", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=30))]
    webhook_attempts: u32,
    /// Internal hosts webhook receivers may be at: names, addresses or CIDRs,
    /// comma-separated (e.g. hooks.internal,10.1.0.0/16). Unset: public addresses only;
    /// loopback, private, unique local and carrier-grade NAT addresses are refused (any lead
    /// may subscribe a URL), and link-local and metadata addresses always are.
    #[arg(long, env = "VERDICT_WEBHOOK_ALLOW_HOSTS", value_delimiter = ',')]
    webhook_allow_hosts: Option<Vec<crate::services::judging::endpoint::AllowedHost>>,
    /// Seconds between looks at the open batches a webhook asks `batch.stalled` of: a
    /// stall is sent at most this long after it happens.
    #[arg(long, env = "VERDICT_STALL_CHECK_S", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    stall_check_s: u64,
    /// The most webhook subscriptions one person may make.
    #[arg(long, env = "VERDICT_WEBHOOK_MAX_PER_OWNER", default_value_t = 50,
          value_parser = clap::value_parser!(i64).range(1..=10_000))]
    webhook_max_per_owner: i64,
    /// The most webhook subscriptions one batch may have.
    #[arg(long, env = "VERDICT_WEBHOOK_MAX_PER_BATCH", default_value_t = 100,
          value_parser = clap::value_parser!(i64).range(1..=10_000))]
    webhook_max_per_batch: i64,
    #[command(flatten)]
    oidc: OidcArgs,
}

/// Sign-in through the team's identity provider (OpenID Connect, authorization code with
/// PKCE).
#[derive(Debug, Args)]
struct OidcArgs {
    /// The identity provider's issuer URL (its discovery document is at
    /// ISSUER/.well-known/openid-configuration); turns sign-in through it on.
    #[arg(long, env = "VERDICT_OIDC_ISSUER")]
    oidc_issuer: Option<String>,
    /// The client id verdict is registered under at the provider.
    #[arg(long, env = "VERDICT_OIDC_CLIENT_ID")]
    oidc_client_id: Option<String>,
    /// The client secret (set it through the environment, not the command line).
    #[arg(long, env = "VERDICT_OIDC_CLIENT_SECRET", hide_env_values = true)]
    oidc_client_secret: Option<String>,
    /// verdict's callback as the provider knows it:
    /// https://verdict.example.com/auth/oidc/callback.
    #[arg(long, env = "VERDICT_OIDC_REDIRECT_URL")]
    oidc_redirect_url: Option<String>,
    /// Scopes asked for besides openid, separated by spaces.
    #[arg(long, env = "VERDICT_OIDC_SCOPES", default_value = "email profile")]
    oidc_scopes: String,
    /// The claim that names the verdict account: email (verified), sub or
    /// preferred_username; it is compared with usernames.
    #[arg(long, env = "VERDICT_OIDC_MATCH", default_value = "email")]
    oidc_match: String,
    /// A claim (a string or a list, e.g. groups) whose values give each person's role at
    /// every sign-in, through --oidc-role-map; unset: admins set roles.
    #[arg(long, env = "VERDICT_OIDC_ROLE_CLAIM")]
    oidc_role_claim: Option<String>,
    /// VALUE=ROLE pairs separated by commas (verdict-admins=admin,verdict-leads=lead);
    /// the highest role matched wins, no match is a rater.
    #[arg(long, env = "VERDICT_OIDC_ROLE_MAP", default_value = "")]
    oidc_role_map: String,
    /// Email domains, separated by commas, whose people get an account at their first
    /// sign-in; unset: nobody does, an admin makes accounts.
    #[arg(long, env = "VERDICT_OIDC_CREATE_DOMAINS", default_value = "")]
    oidc_create_domains: String,
    /// The provider's name on the sign-in page's button ("Sign in with ...").
    #[arg(long, env = "VERDICT_OIDC_LABEL", default_value = "single sign-on")]
    oidc_label: String,
    /// Turn password sign-in off: everyone signs in through the identity provider (API
    /// tokens still work); needs --oidc-issuer.
    #[arg(long, env = "VERDICT_NO_PASSWORD_SIGN_IN", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    no_password_sign_in: bool,
}

impl OidcArgs {
    /// The settings, checked: everything a sign-in needs is there and reads.
    fn config(
        &self,
        sealing: bool,
    ) -> Result<Option<crate::credentials::oidc::OidcConfig>, String> {
        let Some(issuer) = self
            .oidc_issuer
            .as_deref()
            .map(str::trim)
            .filter(|i| !i.is_empty())
        else {
            if self.no_password_sign_in {
                return Err(
                    "--no-password-sign-in needs --oidc-issuer: nobody could sign in".into(),
                );
            }
            return Ok(None);
        };
        let client_id = self
            .oidc_client_id
            .clone()
            .filter(|c| !c.trim().is_empty())
            .ok_or("--oidc-issuer needs --oidc-client-id")?;
        let redirect_url = self
            .oidc_redirect_url
            .clone()
            .filter(|r| !r.trim().is_empty())
            .ok_or("--oidc-issuer needs --oidc-redirect-url (verdict's /auth/oidc/callback)")?;
        if !sealing {
            return Err(format!(
                "--oidc-issuer needs {} (it seals the sign-in under way in its cookie)",
                crate::credentials::sealed::SECRET_ENV
            ));
        }
        let role_map = verdict_core::sign_in::parse_role_map(&self.oidc_role_map)
            .map_err(|why| format!("--oidc-role-map: {why}"))?;
        if !role_map.is_empty() && self.oidc_role_claim.is_none() {
            return Err("--oidc-role-map needs --oidc-role-claim".into());
        }
        let list = |text: &str| -> Vec<String> {
            text.split([',', ' '])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        Ok(Some(crate::credentials::oidc::OidcConfig {
            issuer: issuer.to_owned(),
            client_id,
            client_secret: self.oidc_client_secret.clone().filter(|s| !s.is_empty()),
            redirect_url,
            scopes: list(&self.oidc_scopes),
            role_claim: self.oidc_role_claim.clone(),
            policy: verdict_core::sign_in::Policy {
                match_by: self
                    .oidc_match
                    .parse()
                    .map_err(|why| format!("--oidc-match: {why}"))?,
                role_claim: self.oidc_role_claim.is_some(),
                role_map,
                create_domains: list(&self.oidc_create_domains),
            },
            label: self.oidc_label.clone(),
        }))
    }
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
    /// Set what a person knows (languages, subjects), as a lead or an admin would: a batch
    /// routed by a task field offers them the tasks whose value is one of these first, or
    /// only (what a rater declares themself widens only the first).
    Skills {
        #[arg(long)]
        username: String,
        /// Comma-separated (e.g. "rust, python"); "" for none. Compared trimmed and in
        /// lower case.
        skills: String,
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
    // One worker per core, as tokio would choose; named so that a profile (`top -H`, the
    // benchmark's processor table) tells the workers from the blocking pool. The workers
    // are the first threads the runtime starts, as it is built.
    let workers = crate::config::cores();
    let started = std::sync::atomic::AtomicUsize::new(0);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name_fn(move || {
            let n = started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n < workers {
                "verdict-async".to_owned()
            } else {
                "verdict-block".to_owned()
            }
        })
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
        let pyodide_dir = args.pyodide.ensure().await;
        return crate::demo::run(&args.bind, pyodide_dir).await;
    }
    if let Command::MigrateData(args) = cli.command {
        return server::migrate_data(&args).await;
    }
    let store = open_store(&cli.database_url).await?;
    let result = match cli.command {
        Command::Serve(args) => server::serve(store.clone(), *args, &cli.database_url).await,
        Command::Migrate => {
            println!("database is up to date");
            Ok(())
        }
        Command::User(cmd) => accounts::user(&store, cmd).await,
        Command::Token(cmd) => accounts::token(&store, cmd).await,
        Command::Rubric(cmd) => rubrics::rubric(&store, cmd).await,
        Command::Judge(cmd) => judges::judge(&store, cmd).await,
        Command::Import(args) => batches::import(&store, args).await,
        Command::Export(args) => batches::export(&store, args).await,
        Command::Report(ReportCommand::Hours(args)) => reports::hours(&store, args).await,
        Command::Batch(command) => batches::batch(&store, command).await,
        Command::Report(ReportCommand::Qualification { batch }) => {
            reports::qualification(&store, &batch).await
        }
        Command::Backup(args) => server::backup(&store, &args, &cli.database_url).await,
        Command::Demo(_) | Command::MigrateData(_) => unreachable!("handled above"),
    };
    store.close().await;
    result
}

/// An application error as command-line text, with every bad field or record.
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
