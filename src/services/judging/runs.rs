//! Judge runs as admins start and move them: the plan a run keeps to, the one open run
//! per judge and batch, pausing, resuming and cancelling (with this process's worker
//! started or stopped to match), and the view of a run the API, the pages and the
//! command line show.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::Judging;
use crate::credentials::sealed::SealingKey;
use crate::services::{ServiceError, ServiceResult};
use crate::store::Store;
use crate::store::judges::{Judge, Run, RunCounts};
use verdict_core::batch::Batch;
use verdict_core::judge::{Plan, template};
use verdict_core::lifecycle::RunStatus;
use verdict_core::metrics::Accumulator;
use verdict_core::metrics::judges::Lean;
use verdict_core::user::User;

/// Tokens a run's calls used.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Tokens {
    pub prompt: i64,
    pub completion: i64,
}

/// A judge run and how far it has got.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunView {
    pub id: Uuid,
    pub judge: String,
    pub batch_id: Uuid,
    pub status: RunStatus,
    pub rubric: String,
    pub rubric_version: i32,
    pub model: String,
    /// Tasks asked about, and calls to make in all (two per task for a pair rubric).
    pub tasks: i32,
    pub calls: i32,
    /// Calls over so far, by what became of them.
    pub answered: i64,
    pub unparsed: i64,
    pub failed: i64,
    pub tokens: Tokens,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Whether a call of the running run waits to be asked again (its endpoint failed it).
    pub retrying: bool,
    /// While retrying, the attempt the call waits to make (the sixth is its last).
    pub attempt: Option<i32>,
    /// The latest error the run met, as one short line (an endpoint has a hand in it:
    /// show it as text), and when; kept when the run ends.
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    /// Tasks the run has a whole rating of so far.
    pub tasks_rated: u64,
    /// Tasks whose orders were both read but disagreed (`inconsistent`), so that they
    /// have no rating though both calls were answered.
    pub orders_disagreed: u64,
    /// For a pair: of the decisive preferences read in every call, the share for the
    /// response shown first (0.5: no lean), with a Wilson interval.
    pub first_shown_share: Option<Lean>,
    /// Whether the run's answers stand for its judge over the batch: its latest run that
    /// is not cancelled (the judge's figures, task pages and exports are this run's).
    pub stands: bool,
}

impl RunView {
    /// The view of `run`, by `judge` (its name), with its calls so far.
    pub fn new(run: Run, judge: &str, counts: RunCounts) -> Self {
        let plan = run.plan.0;
        let attempt = run
            .retry_attempt
            .filter(|_| run.status == RunStatus::Running);
        Self {
            id: run.id,
            judge: judge.to_owned(),
            batch_id: run.batch_id,
            status: run.status,
            rubric: plan.rubric,
            rubric_version: plan.rubric_version,
            model: plan.model,
            tasks: run.tasks,
            calls: run.calls,
            answered: counts.answered,
            unparsed: counts.unparsed,
            failed: counts.failed,
            tokens: Tokens {
                prompt: counts.prompt_tokens,
                completion: counts.completion_tokens,
            },
            started_at: run.started_at,
            finished_at: run.finished_at,
            retrying: attempt.is_some(),
            attempt,
            last_error: run.last_error,
            last_error_at: run.last_error_at,
            tasks_rated: 0,
            orders_disagreed: 0,
            first_shown_share: None,
            stands: false,
        }
    }

    /// What came of the run's tasks, in words, as its row, its calls page and the
    /// command line say it: `3 of 10 tasks rated, 7 orders disagreed, first shown 85%
    /// (70%–93%)`.
    pub fn tasks_text(&self) -> String {
        let mut text = format!(
            "{} of {} tasks rated, {} orders disagreed",
            self.tasks_rated, self.tasks, self.orders_disagreed
        );
        if let Some(share) = self.first_shown_share.as_ref().and_then(|l| l.share) {
            text.push_str(&format!(
                ", first shown {:.0}% ({:.0}%–{:.0}%) of {}",
                share.value * 100.0,
                share.low * 100.0,
                share.high * 100.0,
                self.first_shown_share.as_ref().map_or(0, |l| l.n),
            ));
        }
        text
    }

    /// Where the run stands, in words, as its row and the command line say it: its
    /// status, and while it retries the attempt and the error it retries after
    /// (`retrying · attempt 3 · connection failed: …`); a failed run says why.
    pub fn status_text(&self) -> String {
        let error = self
            .last_error
            .as_deref()
            .unwrap_or("no error was recorded");
        match (self.status, self.attempt) {
            (RunStatus::Running, Some(attempt)) => {
                format!("retrying · attempt {attempt} · {error}")
            }
            (RunStatus::Failed, _) => format!("failed · {error}"),
            (status, _) => status.label(),
        }
    }
}

/// The judge a request names: by name, or by id.
pub async fn find_judge(store: &Store, given: &str) -> ServiceResult<Judge> {
    if let Ok(id) = Uuid::parse_str(given)
        && let Some(judge) = store.judge(id).await?
    {
        return Ok(judge);
    }
    store
        .judge_by_name(given)
        .await?
        .ok_or_else(|| ServiceError::field("judge", format!("there is no judge {given:?}")))
}

/// Starts a run of `judge` over `batch`: fixes the plan (the batch's rubric version, the
/// judge's template for it or the built-in one, model and parameters), checks the judge
/// can be called, and records the run. The caller sets a worker on it.
pub async fn start_run(
    store: &Store,
    key: Option<&SealingKey>,
    judge: &Judge,
    batch: &Batch,
    by: Option<Uuid>,
) -> ServiceResult<Run> {
    let rubric = store.batch_rubric(batch).await?;
    let template = judge
        .templates
        .0
        .get(&rubric.name)
        .cloned()
        .unwrap_or_else(|| template::built_in(&rubric));
    let problems = template::check(&template, &rubric);
    if !problems.is_empty() {
        let fields = problems
            .into_iter()
            .map(|(field, why)| {
                (
                    format!("judge.templates.{}.{field}", rubric.name),
                    format!("{why} (for version {} of the rubric)", batch.rubric_version),
                )
            })
            .collect();
        return Err(ServiceError::Invalid(fields));
    }
    super::api_key(judge, key).map_err(|why| ServiceError::field("judge", why))?;
    let tasks = store.task_ids(batch.id).await?.len();
    let orders = Plan::orders(rubric.subject).len();
    let plan = Plan {
        rubric: rubric.name.clone(),
        rubric_version: batch.rubric_version,
        template,
        model: judge.model.clone(),
        params: judge.params.0.clone(),
        min_explanation: batch.min_explanation(),
    };
    let tasks = i32::try_from(tasks).unwrap_or(i32::MAX);
    let calls = tasks.saturating_mul(orders as i32);
    store
        .create_run(judge.id, batch.id, &plan, tasks, calls, by)
        .await
        .map_err(|e| one_open_run(e, "resume or cancel it"))
}

/// The refusal of a second open run of a judge over a batch (`then` says what to do), or
/// the store's error as it is.
fn one_open_run(e: crate::store::StoreError, then: &str) -> ServiceError {
    match e {
        crate::store::StoreError::Duplicate(_) => {
            ServiceError::Refused(verdict_core::lifecycle::Refusal::Closed(
                format!("this judge already has an open run over this batch: {then}").into(),
            ))
        }
        other => other.into(),
    }
}

/// A run as the API shows it.
pub async fn run_view(store: &Store, run: Run) -> ServiceResult<RunView> {
    let judge = store
        .judge(run.judge_id)
        .await?
        .map(|j| j.name)
        .unwrap_or_default();
    let counts = store.run_counts(run.id).await?;
    let stands = store.standing_run(run.judge_id, run.batch_id).await? == Some(run.id);
    let plan = run.plan.0.clone();
    let calls = store.run_call_facts(run.id).await?;
    let mut view = RunView::new(run, &judge, counts);
    view.stands = stands;
    if let Some(rubric) = store.rubric(&plan.rubric, plan.rubric_version).await? {
        // The run's own figures, read as the batch's metrics read a judge's.
        let figures = Accumulator::new(&rubric, plan.rubric_version, &[])
            .judges(&rubric, plan.min_explanation, &calls)
            .into_values()
            .next();
        if let Some(figures) = figures {
            view.tasks_rated = figures.rated;
            view.orders_disagreed = figures.orders_disagreed;
            view.first_shown_share = figures.position_bias;
        }
    }
    Ok(view)
}

/// Starts a run of the judge named (or with the id) `judge` over `batch` for `admin`,
/// sets this process's worker (`judging`) on it, and records it in the audit log: the
/// API's and the batch page's Start.
pub async fn launch(
    store: &Store,
    judging: &Judging,
    admin: &User,
    batch: &Batch,
    judge: &str,
) -> ServiceResult<Run> {
    let judge = find_judge(store, judge).await?;
    let run = start_run(store, judging.sealing_key(), &judge, batch, Some(admin.id)).await?;
    judging.spawn(run.id);
    crate::services::audit::record(
        store,
        admin,
        "judge_run.start",
        &batch.name,
        serde_json::json!({"judge": judge.name, "run": run.id}),
    )
    .await;
    Ok(run)
}

/// The run the command line works in the foreground: `judge`'s open run over `batch`,
/// set running again if it was paused, or else a new one (not in the audit log: the
/// command line's runs never were). Says whether the run was already there.
pub async fn resume_or_start(
    store: &Store,
    key: Option<&SealingKey>,
    judge: &Judge,
    batch: &Batch,
) -> ServiceResult<(Run, bool)> {
    let open = store
        .runs_of_batch(batch.id)
        .await?
        .into_iter()
        .find(|r| r.judge_id == judge.id && r.status.is_open());
    match open {
        Some(run) => {
            store
                .set_run_status(run.id, &[RunStatus::Paused], RunStatus::Running)
                .await?;
            Ok((run, true))
        }
        None => Ok((start_run(store, key, judge, batch, None).await?, false)),
    }
}

/// What an admin does to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAction {
    /// Stop asking for now: calls under way finish and are kept.
    Pause,
    /// Go on asking what the run does not have yet.
    Resume,
    /// Stop for good; what the run has is kept.
    Cancel,
}

impl RunAction {
    fn allows(self, status: RunStatus) -> bool {
        match self {
            RunAction::Pause => status.can_pause(),
            RunAction::Resume => status.can_resume(),
            RunAction::Cancel => status.can_cancel(),
        }
    }

    fn to(self) -> RunStatus {
        match self {
            RunAction::Pause => RunStatus::Paused,
            RunAction::Resume => RunStatus::Running,
            RunAction::Cancel => RunStatus::Cancelled,
        }
    }

    fn verb(self) -> &'static str {
        match self {
            RunAction::Pause => "pause",
            RunAction::Resume => "resume",
            RunAction::Cancel => "cancel",
        }
    }
}

/// Pauses, resumes or cancels a run for `admin`: starts or stops this process's worker
/// (`judging`) and records it; a run whose status does not allow it (now) is refused,
/// saying why.
pub async fn move_run(
    store: &Store,
    judging: &Judging,
    admin: &User,
    id: Uuid,
    action: RunAction,
) -> ServiceResult<Run> {
    let run = store.run(id).await?.ok_or(ServiceError::NotFound)?;
    let from: Vec<RunStatus> = RunStatus::ALL
        .iter()
        .copied()
        .filter(|s| action.allows(*s))
        .collect();
    let to = action.to();
    let moved = action.allows(run.status)
        && store
            .set_run_status(id, &from, to)
            .await
            .map_err(|e| one_open_run(e, "cancel it before resuming this one"))?;
    if !moved {
        let now = store.run(id).await?.map_or(run.status, |r| r.status);
        return Err(verdict_core::lifecycle::Refusal::Closed(
            format!("the run is {now}: it cannot be {}d now", action.verb()).into(),
        )
        .into());
    }
    match to {
        RunStatus::Running => judging.spawn(id),
        _ => judging.stop(id),
    }
    if to == RunStatus::Cancelled {
        // A cancelled run no longer stands: the run before it does again, ratings too.
        super::restore_ratings(store, run.judge_id, run.batch_id).await?;
    }
    crate::services::audit::record(
        store,
        admin,
        &format!("judge_run.{}", action.verb()),
        &id.to_string(),
        serde_json::json!({"from": run.status, "to": to}),
    )
    .await;
    store.run(id).await?.ok_or(ServiceError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(status: RunStatus, attempt: Option<i32>, last_error: Option<&str>) -> RunView {
        RunView {
            id: Uuid::nil(),
            judge: "j".into(),
            batch_id: Uuid::nil(),
            status,
            rubric: "additive-5".into(),
            rubric_version: 1,
            model: "m".into(),
            tasks: 3,
            calls: 3,
            answered: 0,
            unparsed: 0,
            failed: 0,
            tokens: Tokens {
                prompt: 0,
                completion: 0,
            },
            started_at: Utc::now(),
            finished_at: None,
            retrying: attempt.is_some(),
            attempt,
            last_error: last_error.map(str::to_owned),
            last_error_at: None,
            tasks_rated: 0,
            orders_disagreed: 3,
            first_shown_share: None,
            stands: true,
        }
    }

    #[test]
    fn a_run_says_how_many_tasks_it_rated_and_how_many_orders_disagreed() {
        let mut run = view(RunStatus::Finished, None, None);
        assert_eq!(run.tasks_text(), "0 of 3 tasks rated, 3 orders disagreed");
        run.first_shown_share = Some(Lean {
            n: 6,
            share: verdict_core::metrics::stats::share(6, 6),
        });
        assert_eq!(
            run.tasks_text(),
            "0 of 3 tasks rated, 3 orders disagreed, first shown 100% (61%–100%) of 6"
        );
    }

    #[test]
    fn a_run_says_while_it_retries_and_why_it_failed() {
        let refused = Some("connection failed: refused");
        assert_eq!(
            view(RunStatus::Running, Some(3), refused).status_text(),
            "retrying · attempt 3 · connection failed: refused"
        );
        assert_eq!(
            view(RunStatus::Running, None, refused).status_text(),
            "running"
        );
        assert_eq!(
            view(RunStatus::Failed, None, refused).status_text(),
            "failed · connection failed: refused"
        );
        assert_eq!(
            view(RunStatus::Failed, None, None).status_text(),
            "failed · no error was recorded"
        );
        // A finished run's last error is in its JSON; its words are its status.
        assert_eq!(
            view(RunStatus::Finished, None, refused).status_text(),
            "finished"
        );
    }
}
