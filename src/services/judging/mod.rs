//! Judge runs: asking a judge about every task of a batch, in both orders for a pair.
//!
//! A run is worked by one process at a time: the worker claims it in the database and
//! says so every few seconds; a worker that falls silent for the lease (its process died
//! or hangs) loses it to the next that looks ([`Judging::take_over`], run at start-up and
//! periodically by `serve`; [`Judging::claim`], by `verdict judge run`), and one that
//! was a process of this machine and is gone loses it at once ([`worker`]). Every call is stored as soon as it is over, so a resumed or taken-over run
//! asks only what it does not have yet. Requests are bounded by the judge's concurrency
//! and requests per minute, and retried with exponential backoff on 429, 5xx, time-outs
//! and dropped connections, waiting as long as a `Retry-After` asks; a refused port or a
//! server that does not speak HTTP fails the call at once ([`cause`] says why a request
//! got no reply). While a call waits to be asked again its run says so (the attempt, and
//! the error it met), and a run whose every call failed ends `failed`.
//!
//! What a judge's endpoint can send back is bounded: a reply is read up to the judge's
//! limit and dropped beyond it, redirects are never followed, addresses are checked as
//! they resolve ([`EndpointPolicy`]), and what is stored of an output or an error is
//! capped (see [`endpoint`], the rules of where a judge may be sent).

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use chrono::Utc;
use serde_json::{Value, json};
use sqlx::types::Json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::{ServiceError, ServiceResult};
use crate::credentials::sealed::SealingKey;
use crate::store::Store;
use crate::store::judges::{Call, Judge, Run, call_params};
use cause::{Cause, RefusedAddress};
use endpoint::EndpointPolicy;
use verdict_core::judge::{self, Asked, LastError, Plan, TaskText};
use verdict_core::lifecycle::{CallStatus, RunStatus};
use verdict_core::rubric::Rubric;

pub(crate) mod cause;
pub mod endpoint;
pub mod judges;
pub mod runs;
pub mod settings;
pub mod worker;

/// The most a `Retry-After` is waited for; a longer one fails the call (resume later).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Attempts per call before it is recorded as failed.
const MAX_RETRIES: usize = 6;

/// How judge runs are worked in this process.
#[derive(Clone)]
pub struct Judging(Arc<Inner>);

struct Inner {
    store: Store,
    /// This process, as the worker column names it.
    worker: String,
    /// A worker silent this long loses its run.
    lease: Duration,
    /// The first wait before a retry (then doubling, with jitter).
    retry_delay: Duration,
    /// Opens API keys stored sealed.
    key: Option<SealingKey>,
    /// Where judges may be sent and how much of a reply is read.
    policy: EndpointPolicy,
    /// Runs worked here, each with a flag that stops it.
    working: Mutex<HashMap<Uuid, Arc<AtomicBool>>>,
}

impl Judging {
    pub fn new(
        store: Store,
        lease: Duration,
        retry_delay: Duration,
        key: Option<SealingKey>,
        policy: EndpointPolicy,
    ) -> Self {
        Self(Arc::new(Inner {
            store,
            worker: worker::this_process(),
            lease,
            retry_delay,
            key,
            policy,
            working: Mutex::new(HashMap::new()),
        }))
    }

    pub fn sealing_key(&self) -> Option<&SealingKey> {
        self.0.key.as_ref()
    }

    pub fn policy(&self) -> &EndpointPolicy {
        &self.0.policy
    }

    fn working(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<AtomicBool>>> {
        self.0.working.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Works `run` in the background, unless this process already does.
    pub fn spawn(&self, run: Uuid) {
        let stop = Arc::new(AtomicBool::new(false));
        {
            let mut working = self.working();
            if working.contains_key(&run) {
                return;
            }
            working.insert(run, Arc::clone(&stop));
        }
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(err) = this.work(run, &stop, None).await {
                tracing::warn!(%run, %err, "judge run stopped on an error");
            }
            this.working().remove(&run);
        });
    }

    /// Works `run` here until it is over, paused or cancelled; `progress` is told of every
    /// call stored (for the CLI's progress bar).
    pub async fn run_to_end(
        &self,
        run: Uuid,
        progress: Option<&(dyn Fn(&Call) + Sync)>,
    ) -> ServiceResult<()> {
        let stop = Arc::new(AtomicBool::new(false));
        self.working().insert(run, Arc::clone(&stop));
        let out = self.work(run, &stop, progress).await;
        self.working().remove(&run);
        out
    }

    /// Stops this process's worker of `run`, if any (after a pause or a cancel; in-flight
    /// calls finish and are stored).
    pub fn stop(&self, run: Uuid) {
        if let Some(flag) = self.working().get(&run) {
            flag.store(true, Ordering::SeqCst);
        }
    }

    /// The lease: a worker silent this long loses its run.
    pub fn lease(&self) -> Duration {
        self.0.lease
    }

    /// Takes `run` for this process if it may: nobody works it, its worker fell silent
    /// for the lease, or its worker is provably gone (a process of this machine that
    /// died: no waiting for the lease then). Otherwise says who holds it, or that the run
    /// is not running.
    pub async fn claim(&self, run: Uuid) -> ServiceResult<Claim> {
        let store = &self.0.store;
        let now = store.run(run).await?.ok_or(ServiceError::NotFound)?;
        if now.status != RunStatus::Running {
            return Ok(Claim::NotRunning(now.status));
        }
        if store.claim_run(run, &self.0.worker, self.0.lease).await? {
            return Ok(Claim::Claimed);
        }
        let now = store.run(run).await?.ok_or(ServiceError::NotFound)?;
        let Some(holder) = now.worker.filter(|_| now.status == RunStatus::Running) else {
            // It moved meanwhile: look again.
            return Box::pin(self.claim(run)).await;
        };
        if worker::gone(&holder) && store.take_run_from(run, &self.0.worker, &holder).await? {
            return Ok(Claim::TookFromGone(holder));
        }
        let silent = now
            .heartbeat_at
            .and_then(|at| (Utc::now() - at).to_std().ok())
            .unwrap_or_default();
        Ok(Claim::Held {
            worker: holder,
            silent,
            heard_at: now.heartbeat_at,
        })
    }

    /// Lets go of `run` if this process works it, so that the next to look takes it at
    /// once (a stopped `verdict judge run`).
    pub async fn let_go(&self, run: Uuid) -> ServiceResult<()> {
        Ok(self.0.store.let_go_run(run, &self.0.worker).await?)
    }

    /// Takes over the running runs whose worker fell silent, or is provably gone.
    pub async fn take_over(&self) -> ServiceResult<usize> {
        let store = &self.0.store;
        let mut runs = store.orphaned_runs(self.0.lease).await?;
        for (run, holder) in store.worked_runs().await? {
            if !runs.contains(&run)
                && worker::gone(&holder)
                && store.take_run_from(run, &self.0.worker, &holder).await?
            {
                runs.push(run);
            }
        }
        let n = runs.len();
        for run in runs {
            self.spawn(run);
        }
        Ok(n)
    }

    async fn work(
        &self,
        run_id: Uuid,
        stop: &Arc<AtomicBool>,
        progress: Option<&(dyn Fn(&Call) + Sync)>,
    ) -> ServiceResult<()> {
        let store = &self.0.store;
        if !store
            .claim_run(run_id, &self.0.worker, self.0.lease)
            .await?
        {
            return Ok(());
        }
        let run = store.run(run_id).await?.ok_or(ServiceError::NotFound)?;
        let judge = store
            .judge(run.judge_id)
            .await?
            .ok_or(ServiceError::NotFound)?;
        let plan = run.plan.0.clone();
        let rubric = store
            .rubric(&plan.rubric, plan.rubric_version)
            .await?
            .ok_or_else(|| ServiceError::Internal(format!("rubric {} is gone", plan.rubric)))?;
        let api_key = api_key(&judge, self.0.key.as_ref())
            .map_err(|why| ServiceError::field("api_key", why))?;
        let settled: HashSet<(Uuid, bool)> =
            store.settled_calls(run_id).await?.into_iter().collect();
        let orders = Plan::orders(rubric.subject);
        let pending: Vec<(Uuid, bool)> = store
            .task_ids(run.batch_id)
            .await?
            .into_iter()
            .flat_map(|task| orders.iter().map(move |swapped| (task, *swapped)))
            .filter(|call| !settled.contains(call))
            .collect();

        // Stops saying the run is ours however this returns, so that a worker that fails
        // lets another take the run over after the lease.
        let _heartbeat = AbortOnDrop({
            let (store, worker, lease, stop) = (
                store.clone(),
                self.0.worker.clone(),
                self.0.lease,
                Arc::clone(stop),
            );
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(lease / 3);
                loop {
                    tick.tick().await;
                    // Paused, cancelled, or taken by another worker: stop asking.
                    if !matches!(store.claim_run(run_id, &worker, lease).await, Ok(true)) {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
            })
        });
        let asker = Arc::new(Asker::new(
            &judge,
            &plan,
            api_key,
            self.0.retry_delay,
            &self.0.policy,
        )?);
        let permits = Arc::new(Semaphore::new(
            usize::try_from(judge.concurrency.max(1)).unwrap_or(1),
        ));
        let mut calls = JoinSet::new();
        for (task_id, swapped) in pending {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let permit = Arc::clone(&permits)
                .acquire_owned()
                .await
                .map_err(|e| ServiceError::Internal(e.to_string()))?;
            asker.limiter.until_ready().await;
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let (store, asker, rubric, run) = (
                store.clone(),
                Arc::clone(&asker),
                Arc::clone(&rubric),
                run.clone(),
            );
            let judge_user = judge.user_id;
            calls.spawn(async move {
                let _permit = permit;
                let call = ask(&store, &asker, &rubric, &run, task_id, swapped).await?;
                let error = call.error.as_deref().map(LastError::new);
                store.record_call(&call, error.as_ref()).await?;
                if call.status != CallStatus::Failed {
                    rate_task(&store, &rubric, &run, judge_user, task_id).await?;
                }
                ServiceResult::Ok(call)
            });
            while let Some(done) = calls.try_join_next() {
                report(done, progress)?;
            }
        }
        while let Some(done) = calls.join_next().await {
            report(done, progress)?;
        }
        if !stop.load(Ordering::SeqCst) {
            // Every call was made: the run is over, failed if nothing came of any of them
            // (failed calls are asked again if it is resumed).
            let counts = store.run_counts(run_id).await?;
            let ended = RunStatus::ended(counts.answered, counts.unparsed, counts.failed);
            store
                .set_run_status(run_id, &[RunStatus::Running], ended)
                .await?;
        }
        Ok(())
    }
}

/// Whether a process may work a run ([`Judging::claim`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// It is this process's now: nobody worked it, or its worker fell silent.
    Claimed,
    /// It is this process's now, taken from this worker, which is provably gone.
    TookFromGone(String),
    /// Another worker holds it, silent for this long (its heartbeat, when it gave one).
    Held {
        worker: String,
        silent: Duration,
        heard_at: Option<chrono::DateTime<Utc>>,
    },
    /// The run is not running: over, paused or cancelled.
    NotRunning(RunStatus),
}

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn report(
    done: Result<ServiceResult<Call>, tokio::task::JoinError>,
    progress: Option<&(dyn Fn(&Call) + Sync)>,
) -> ServiceResult<()> {
    let call = done.map_err(|e| ServiceError::Internal(e.to_string()))??;
    if let Some(progress) = progress {
        progress(&call);
    }
    Ok(())
}

/// The API key a judge's calls send: from its environment variable, or opened from the
/// database; none for a local server that asks for none.
pub fn api_key(judge: &Judge, key: Option<&SealingKey>) -> Result<Option<String>, String> {
    if let Some(name) = &judge.api_key_env {
        // A judge stored before the rule held is not let read the server's own secrets.
        if !name.starts_with(verdict_core::judge::KEY_ENV_PREFIX) {
            return Err(format!(
                "its key variable {name} does not begin with {}: only those are sent to judges",
                verdict_core::judge::KEY_ENV_PREFIX
            ));
        }
        return std::env::var(name)
            .map(Some)
            .map_err(|_| format!("the server's environment has no {name}"));
    }
    match (&judge.api_key_sealed, key) {
        (None, _) => Ok(None),
        (Some(sealed), Some(key)) => key
            .open(sealed)
            .map(Some)
            .ok_or_else(|| "the stored key does not open under this server's secret".into()),
        (Some(_), None) => Err(format!(
            "the key is stored sealed and this server has no {}",
            crate::credentials::sealed::SECRET_ENV
        )),
    }
}

/// What every call of a run sends with, and the limits it keeps.
struct Asker {
    client: reqwest::Client,
    url: String,
    /// Where the requests go, as `host:port` (what a connection error names).
    at: String,
    /// The time-outs of a connection, and of a whole request.
    connect_timeout: Duration,
    timeout: Duration,
    /// Where judges may be sent (a look at what an address answers keeps to it too).
    policy: EndpointPolicy,
    /// Why the judge's URL may not be called under this server's policy, if so.
    refused: Option<String>,
    /// The most of a reply read.
    reply_limit: u64,
    api_key: Option<String>,
    plan: Plan,
    retry_delay: Duration,
    limiter: governor::DefaultDirectRateLimiter,
}

impl Asker {
    fn new(
        judge: &Judge,
        plan: &Plan,
        api_key: Option<String>,
        retry_delay: Duration,
        policy: &EndpointPolicy,
    ) -> ServiceResult<Self> {
        let timeout = Duration::from_secs(u64::from(plan.params.timeout_s.unwrap_or(120)));
        let connect_timeout = Duration::from_secs(10);
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(CheckedResolver(policy.clone())))
            .build()
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        let url = chat_url(&judge.base_url);
        let (refused, at) = match reqwest::Url::parse(&url) {
            Ok(parsed) => (
                policy.check_url(&parsed).err(),
                format!(
                    "{}:{}",
                    parsed.host_str().unwrap_or(""),
                    parsed.port_or_known_default().unwrap_or(0)
                ),
            ),
            Err(e) => (Some(format!("is not a URL: {e}")), String::new()),
        };
        let rpm = NonZeroU32::new(u32::try_from(judge.requests_per_minute).unwrap_or(1).max(1))
            .unwrap_or(NonZeroU32::MIN);
        Ok(Self {
            client,
            url,
            at,
            connect_timeout,
            timeout,
            policy: policy.clone(),
            refused,
            reply_limit: policy.reply_limit(plan.params.max_reply_bytes),
            api_key,
            plan: plan.clone(),
            retry_delay,
            limiter: governor::RateLimiter::direct(governor::Quota::per_minute(rpm)),
        })
    }
}

/// Resolves a judge's host name, keeping only the addresses the policy lets a judge
/// reach: a name cannot resolve its way around the checks made when it was configured.
pub(crate) struct CheckedResolver(pub(crate) EndpointPolicy);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let allowed = cause::checked_addrs(&policy, name.as_str(), 0).await?;
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// `/chat/completions` under a base URL in the usual form (`http://host:port/v1`).
pub fn chat_url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// Why one request did not give an output.
#[derive(Debug)]
enum Failure {
    /// The endpoint answered with an error status; `body` is the start of its reply.
    Status {
        code: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// The endpoint answered with a redirect, which is not followed.
    Redirect(u16),
    /// No HTTP reply came, or not a whole one.
    Connection(Cause),
    /// A 2xx whose body is not a chat completion.
    BadBody(String),
    /// The reply went on past the limit (in bytes) and was dropped.
    TooLarge(u64),
    /// The judge may not be sent where it points (the policy says why).
    Refused(String),
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Status { code, .. } => *code == 429 || *code >= 500,
            Failure::Connection(cause) => cause.retryable(),
            Failure::BadBody(_)
            | Failure::Redirect(_)
            | Failure::TooLarge(_)
            | Failure::Refused(_) => false,
        }
    }

    /// The status and the cause, for whoever may read the run's calls.
    fn describe(&self) -> String {
        match self {
            Failure::Status { code, .. } => {
                let reason = reqwest::StatusCode::from_u16(*code)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("error");
                format!("HTTP {code} {reason} from the endpoint")
            }
            Failure::Redirect(code) => format!(
                "HTTP {code}: the endpoint answered with a redirect, and redirects are not followed"
            ),
            Failure::Connection(cause) => cause.describe(),
            Failure::BadBody(why) => format!("not a chat completion: {why}"),
            Failure::TooLarge(limit) => format!(
                "the reply went on past {} (the judge's max_reply_bytes), so it was dropped",
                endpoint::size_text(*limit)
            ),
            Failure::Refused(why) => format!("not sent: the base URL {why}"),
        }
    }

    /// What the endpoint said with its error status, kept short: it may carry what the
    /// endpoint knows (admins only read it).
    fn detail(&self) -> Option<String> {
        match self {
            Failure::Status { body, .. } if !body.trim().is_empty() => Some(
                body.trim()
                    .chars()
                    .take(endpoint::MAX_ERROR_BODY_CHARS)
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// A failure to send the request or to get a reply's body, and why.
fn transport(asker: &Asker, e: &reqwest::Error) -> Failure {
    let chain = std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |err| {
        err.source()
    });
    for err in chain {
        if let Some(refused) = err.downcast_ref::<RefusedAddress>() {
            return Failure::Refused(refused.0.clone());
        }
    }
    Failure::Connection(Cause::of(
        e,
        &asker.at,
        asker.connect_timeout,
        asker.timeout,
    ))
}

/// Reads a reply's body up to `limit` bytes; past that the reply (and its connection)
/// is dropped and the call fails saying so.
async fn read_limited(asker: &Asker, mut response: reqwest::Response) -> Result<Vec<u8>, Failure> {
    let limit = asker.reply_limit;
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(Failure::TooLarge(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport(asker, &e))? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(Failure::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of an error reply (enough for [`Failure::detail`]); the rest is not read.
async fn read_start(mut response: reqwest::Response) -> String {
    const ENOUGH: usize = 4 * endpoint::MAX_ERROR_BODY_CHARS;
    let mut body = Vec::new();
    while body.len() < ENOUGH {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ENOUGH);
    String::from_utf8_lossy(&body).into_owned()
}

/// A `Retry-After` header: seconds, or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(text).ok()?;
    (at.with_timezone(&Utc) - Utc::now()).to_std().ok()
}

/// What a chat completion gave.
struct Output {
    content: String,
    finish_reason: Option<String>,
    prompt_tokens: Option<i32>,
    completion_tokens: Option<i32>,
}

/// The request body for `prompt`.
fn request_body(asker: &Asker, rubric: &Rubric, prompt: &str) -> Value {
    let plan = &asker.plan;
    let mut body = json!({
        "model": plan.model,
        "messages": [{"role": "user", "content": prompt}],
    });
    let params = &plan.params;
    if let Some(t) = params.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = params.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(seed) = params.seed {
        body["seed"] = json!(seed);
    }
    if params.structured_output {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {
                "name": "verdict_answer",
                "strict": true,
                "schema": judge::schema::schema(
                    rubric,
                    plan.template.format,
                    plan.min_explanation,
                    params.max_text_chars,
                    params.max_tokens,
                ),
            }
        });
    }
    body
}

async fn post(asker: &Asker, body: &Value) -> Result<Output, Failure> {
    if let Some(why) = &asker.refused {
        return Err(Failure::Refused(why.clone()));
    }
    let mut request = asker.client.post(&asker.url).json(body);
    if let Some(key) = &asker.api_key {
        request = request.bearer_auth(key);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => {
            return Err(match transport(asker, &e) {
                Failure::Connection(cause) => match reqwest::Url::parse(&asker.url) {
                    Ok(url) => Failure::Connection(cause.look_closer(&url, &asker.policy).await),
                    Err(_) => Failure::Connection(cause),
                },
                other => other,
            });
        }
    };
    let status = response.status();
    if status.is_redirection() {
        return Err(Failure::Redirect(status.as_u16()));
    }
    if !status.is_success() {
        let retry_after = retry_after(response.headers());
        return Err(Failure::Status {
            code: status.as_u16(),
            retry_after,
            body: read_start(response).await,
        });
    }
    let bytes = read_limited(asker, response).await?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| Failure::BadBody(e.to_string()))?;
    let choice = &value["choices"][0];
    let content = choice["message"]["content"]
        .as_str()
        .ok_or_else(|| Failure::BadBody("no choices[0].message.content".into()))?;
    let tokens = |key: &str| {
        value["usage"][key]
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
    };
    Ok(Output {
        content: content.to_owned(),
        finish_reason: choice["finish_reason"].as_str().map(str::to_owned),
        prompt_tokens: tokens("prompt_tokens"),
        completion_tokens: tokens("completion_tokens"),
    })
}

/// Asks about one task in one order, with retries, and reads the answer.
async fn ask(
    store: &Store,
    asker: &Asker,
    rubric: &Rubric,
    run: &Run,
    task_id: Uuid,
    swapped: bool,
) -> ServiceResult<Call> {
    let content = store
        .task_content(task_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let plan = &asker.plan;
    let text = TaskText {
        prompt: &content.prompt.0,
        response_a: &content.response_a,
        response_b: &content.response_b,
    };
    let mut prompt = judge::render(rubric, &plan.template, text, swapped);
    if plan.params.structured_output
        && let Some(note) = judge::schema::structured_note(rubric, plan.template.format)
    {
        prompt.push_str(&note);
    }
    let body = request_body(asker, rubric, &prompt);
    let attempts = AtomicU32::new(0);
    // While the call waits to be asked again, its run says so: `notify` (which sees the
    // failure) leaves the note here, and the wait stores it before it sleeps, so that it
    // is stored before the call is over and in the order the failures came.
    let waiting: Arc<Mutex<Option<(i32, LastError)>>> = Arc::default();
    let wait = {
        let (store, waiting, run_id) = (store.clone(), Arc::clone(&waiting), run.id);
        move |delay: Duration| {
            let note = waiting.lock().unwrap_or_else(|p| p.into_inner()).take();
            let store = store.clone();
            async move {
                if let Some((attempt, error)) = note
                    && let Err(err) = store.note_retry(run_id, attempt, &error).await
                {
                    // Only what the run shows is lost: the call goes on.
                    tracing::warn!(run = %run_id, %err, "could not note a judge call's retry");
                }
                tokio::time::sleep(delay).await;
            }
        }
    };
    let started = Instant::now();
    let backoff = ExponentialBuilder::default()
        .with_min_delay(asker.retry_delay)
        .with_max_delay(Duration::from_secs(60))
        .with_max_times(MAX_RETRIES - 1)
        .with_jitter();
    let result = (|| async {
        attempts.fetch_add(1, Ordering::SeqCst);
        post(asker, &body).await
    })
    .retry(backoff)
    .sleep(wait)
    .when(Failure::retryable)
    .adjust(|failure, delay| match failure {
        Failure::Status {
            retry_after: Some(wait),
            ..
        } => delay.and((*wait <= MAX_RETRY_AFTER).then_some(*wait)),
        _ => delay,
    })
    .notify(|failure, delay| {
        let why = failure.describe();
        tracing::info!(%task_id, swapped, ?delay, failure = %why, "judge call retried");
        let next = i32::try_from(attempts.load(Ordering::SeqCst) + 1).unwrap_or(i32::MAX);
        *waiting.lock().unwrap_or_else(|p| p.into_inner()) = Some((next, LastError::new(&why)));
    })
    .await;
    let latency_ms = i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX);
    let mut call = Call {
        id: Uuid::now_v7(),
        run_id: run.id,
        task_id,
        swapped,
        status: CallStatus::Failed,
        prompt_sha256: judge::prompt_hash(&prompt),
        model: plan.model.clone(),
        params: Json(call_params(plan)),
        raw_output: None,
        finish_reason: None,
        error: None,
        error_body: None,
        fields: Json(Default::default()),
        answers: Json(Default::default()),
        prompt_tokens: None,
        completion_tokens: None,
        latency_ms: Some(latency_ms),
        attempts: i32::try_from(attempts.load(Ordering::SeqCst)).unwrap_or(i32::MAX),
        created_at: Utc::now(),
    };
    match result {
        Ok(output) => {
            let truncated = output.finish_reason.as_deref() == Some("length");
            let parsed = judge::parse(
                rubric,
                plan.template.format,
                &output.content,
                truncated,
                plan.min_explanation,
            );
            call.status = if parsed.answered() {
                CallStatus::Answered
            } else {
                CallStatus::Unparsed
            };
            call.fields = Json(parsed.fields);
            call.answers = Json(parsed.answers);
            call.raw_output = Some(endpoint::cap(output.content, endpoint::MAX_STORED_BYTES));
            call.finish_reason = output.finish_reason;
            call.prompt_tokens = output.prompt_tokens;
            call.completion_tokens = output.completion_tokens;
        }
        Err(failure) => {
            call.error = Some(endpoint::cap(
                failure.describe(),
                endpoint::MAX_STORED_BYTES,
            ));
            call.error_body = failure.detail();
        }
    }
    Ok(call)
}

/// Stores again the ratings of the run that now stands for `judge` over `batch` (once
/// a later run is cancelled, the one before it stands again, and the ratings the
/// cancelled run replaced must be its again).
pub async fn restore_ratings(store: &Store, judge: Uuid, batch: Uuid) -> ServiceResult<()> {
    let Some(run) = store.standing_run(judge, batch).await? else {
        return Ok(());
    };
    let run = store.run(run).await?.ok_or(ServiceError::NotFound)?;
    let judge = store.judge(judge).await?.ok_or(ServiceError::NotFound)?;
    let plan = &run.plan.0;
    let rubric = store
        .rubric(&plan.rubric, plan.rubric_version)
        .await?
        .ok_or_else(|| ServiceError::Internal(format!("rubric {} is gone", plan.rubric)))?;
    for task in store.task_ids(batch).await? {
        rate_task(store, &rubric, &run, judge.user_id, task).await?;
    }
    Ok(())
}

/// Once every order of a task is read, stores the judge's rating of it when its
/// answers make a whole one (and the run stands for the judge over the batch).
async fn rate_task(
    store: &Store,
    rubric: &Rubric,
    run: &Run,
    judge_user: Uuid,
    task_id: Uuid,
) -> ServiceResult<()> {
    let calls = store.calls_of_task(run.id, task_id).await?;
    let orders = Plan::orders(rubric.subject);
    let read: Vec<&Call> = calls
        .iter()
        .filter(|c| c.status != CallStatus::Failed)
        .collect();
    if read.len() < orders.len() {
        return Ok(());
    }
    let asked: Vec<Asked<'_>> = read
        .iter()
        .map(|c| Asked {
            swapped: c.swapped,
            answers: &c.answers.0,
            fields: &c.fields.0,
        })
        .collect();
    let combined = judge::combine(rubric, &asked, run.plan.0.min_explanation);
    if combined.complete() {
        // A gold task's rating is graded as a rater's is (it counts in no figure but the
        // judge's accuracy on gold).
        let grade = store
            .gold_expected(task_id)
            .await?
            .map(|expected| verdict_core::gold::grade(&expected, &combined.answers));
        let save = || {
            store.save_judge_rating(
                judge_user,
                run.id,
                run.batch_id,
                task_id,
                &combined.answers,
                grade.as_ref(),
            )
        };
        match save().await {
            // Both orders finished at once and the other call's rating landed first (on
            // PostgreSQL, transactions do not queue behind an insert): it is the same
            // answer, which the second try finds and leaves as it is.
            Err(crate::store::StoreError::Duplicate(_)) => {
                save().await?;
            }
            other => {
                other?;
            }
        }
    }
    Ok(())
}
