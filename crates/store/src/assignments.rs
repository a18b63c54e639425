//! Handing tasks to raters: leases, the pool, and the exactly-k rule.
//!
//! `tasks.claimed` counts a task's completed ratings plus its open assignments, and
//! `tasks.is_full` says it has reached the raters it needs: the batch's overlap plus the
//! ones it gained by escalating (`tasks.extra`, see [`verdict_core::overlap`]). Every
//! change to any of them happens in the same transaction as the assignment or rating
//! change that causes it.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};
use sqlx::types::Json;
use uuid::Uuid;

use super::{StoreError, StoreResult, read, transaction};
use verdict_core::assignment::{Assignment, Draft};
use verdict_core::batch::Batch;
use verdict_core::lifecycle::{AssignmentState, Outcome};
use verdict_core::overlap::Plan;
use verdict_core::routing::Routing;
use verdict_core::rubric::Answers;
use verdict_core::task::Task;

/// An assignment as its row holds it (see [`Assignment`]).
#[derive(sqlx::FromRow)]
pub(crate) struct AssignmentRow {
    id: Uuid,
    task_id: Uuid,
    batch_id: Uuid,
    rater_id: Uuid,
    swapped: bool,
    #[sqlx(try_from = "String")]
    state: AssignmentState,
    lease_expires_at: DateTime<Utc>,
    created_at: DateTime<Utc>,
}

impl From<AssignmentRow> for Assignment {
    fn from(row: AssignmentRow) -> Self {
        Assignment {
            id: row.id,
            task_id: row.task_id,
            batch_id: row.batch_id,
            rater_id: row.rater_id,
            swapped: row.swapped,
            state: row.state,
            lease_expires_at: row.lease_expires_at,
            created_at: row.created_at,
        }
    }
}

pub(crate) const ASSIGNMENT_COLUMNS: &str =
    "a.id, a.task_id, a.batch_id, a.rater_id, a.swapped, a.state, a.lease_expires_at, a.created_at";

/// The number of assignment `a` among its rater's assignments of its batch, from 1 in
/// the order they were handed out (a rater never has the same task twice): how a rater
/// who is not shown external ids knows a task. It says nothing of the task itself.
pub(crate) const TASK_NUMBER: &str = "(SELECT COUNT(*) FROM assignments n
     WHERE n.rater_id = a.rater_id AND n.batch_id = a.batch_id
       AND (n.created_at < a.created_at OR (n.created_at = a.created_at AND n.id <= a.id)))";

/// A task as its row holds it (see [`Task`]).
#[derive(sqlx::FromRow)]
struct TaskRow {
    id: Uuid,
    batch_id: Uuid,
    external_id: String,
    prompt: Json<Value>,
    response_a: String,
    response_b: String,
    model_a: Option<String>,
    model_b: Option<String>,
    metadata: Json<Map<String, Value>>,
    rendered: Option<Json<Value>>,
}

impl From<TaskRow> for Task {
    fn from(row: TaskRow) -> Self {
        Task {
            id: row.id,
            batch_id: row.batch_id,
            external_id: row.external_id,
            prompt: row.prompt.0,
            response_a: row.response_a,
            response_b: row.response_b,
            model_a: row.model_a,
            model_b: row.model_b,
            metadata: row.metadata.0,
            rendered: row.rendered.map(|Json(r)| r),
        }
    }
}

/// An assignment, its task and its draft, as the rating form reads them at once.
#[derive(sqlx::FromRow)]
pub struct AssignmentForm {
    #[sqlx(flatten)]
    assignment: AssignmentRow,
    external_id: String,
    prompt: Json<Value>,
    response_a: String,
    response_b: String,
    model_a: Option<String>,
    model_b: Option<String>,
    metadata: Json<Map<String, Value>>,
    rendered: Option<Json<Value>>,
    draft_answers: Option<Json<verdict_core::rubric::TaskAnswers>>,
    draft_evidence: Option<Json<verdict_core::evidence::Evidence>>,
    draft_time_spent_s: Option<i32>,
    /// See [`TASK_NUMBER`].
    task_number: i64,
}

impl AssignmentForm {
    /// The task's number among its rater's (see [`TASK_NUMBER`]).
    pub fn task_number(&self) -> i64 {
        self.task_number
    }

    /// The assignment; its task, as [`Store::task`](super::Store::task) reads it; and
    /// its draft, if the rater has saved one.
    pub fn split(self) -> (Assignment, Task, Option<Draft>) {
        // The task's columns come as a task row's do, so they become a task the one way.
        let task = Task::from(TaskRow {
            id: self.assignment.task_id,
            batch_id: self.assignment.batch_id,
            external_id: self.external_id,
            prompt: self.prompt,
            response_a: self.response_a,
            response_b: self.response_b,
            model_a: self.model_a,
            model_b: self.model_b,
            metadata: self.metadata,
            rendered: self.rendered,
        });
        let draft = self.draft_answers.map(|Json(answers)| Draft {
            answers,
            evidence: self.draft_evidence.map(|Json(e)| e),
            time_spent_s: self.draft_time_spent_s.unwrap_or(0),
        });
        (self.assignment.into(), task, draft)
    }
}

/// Gives one of a task's slots back to the pool (`$1` the task, `$2` the batch's
/// overlap, to which the task adds the raters it gained by escalating, `extra`): after
/// an expired lease, a skip, or a rejected rating. A gold task claims no slot (it is
/// never in the pool), so it has none to give back.
pub(crate) const RELEASE_SLOT: &str =
    "UPDATE tasks SET claimed = claimed - 1, is_full = (claimed - 1 >= $2 + extra) WHERE id = $1
       AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = $1)";

/// The task's escalation count, read under its lock on PostgreSQL (`{}` takes
/// [`Store::no_key_lock_clause`](super::Store::no_key_lock_clause): the rating just
/// inserted holds a key-share lock on the task, which a plain `FOR UPDATE` of two
/// finishing raters would each wait on), so that raters finishing a task's last slots at
/// once are taken in turn and the later one sees the earlier one's answers. Gold tasks
/// never escalate.
pub(crate) const TASK_EXTRA: &str = "SELECT extra FROM tasks WHERE id = $1
       AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = $1){}";

/// The condition on a rating for holding its slot to the end: a person's, finished,
/// neither skipped nor rejected, and of its task's present version (not stale). What an
/// escalation rule reads (a macro so that it can be
/// `concat!`ed into the statements below).
macro_rules! holds_its_slot {
    () => {
        "rater_kind = 'human' AND status IN ('submitted', 'returned', 'accepted') AND outcome <> 'skipped'
         AND stale = FALSE"
    };
}

/// A task's ratings that hold their slot, with their outcome and answers.
pub(crate) const FINISHED_OF_TASK: &str = concat!(
    "SELECT outcome, answers FROM ratings WHERE task_id = $1 AND ",
    holds_its_slot!()
);

/// A batch's ratings that hold their slot, by task.
const FINISHED_OF_BATCH: &str = concat!(
    "SELECT task_id, outcome, answers FROM ratings WHERE batch_id = $1 AND ",
    holds_its_slot!()
);

/// How many of a task's ratings hold their slot, and the answers of those rated, from
/// their (outcome, answers): what [`Plan::needs_one_more`] reads.
pub(crate) fn tally<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a Answers)>,
) -> (usize, Vec<&'a Answers>) {
    let mut count = 0;
    let mut rated = Vec::new();
    for (outcome, answers) in rows {
        count += 1;
        if outcome == Outcome::Rated.as_str() {
            rated.push(answers);
        }
    }
    (count, rated)
}

/// Asks one more rater of a task (`$1`; `$2` the batch's overlap).
pub(crate) const ESCALATE: &str =
    "UPDATE tasks SET extra = extra + 1, is_full = (claimed >= $2 + extra + 1) WHERE id = $1";

/// Asks one more rater of task `$task` when its batch's plan says its answers now call
/// for one (see [`verdict_core::overlap::Plan::needs_one_more`]); run in the transaction
/// that finished or changed one of its ratings, after that change. `$extra_sql` is
/// [`TASK_EXTRA`] with the store's no-key lock clause. Evaluates to whether it did. A macro for
/// the reason `insert_history!` is one.
macro_rules! escalate {
    ($tx:expr, $extra_sql:expr, $task:expr, $plan:expr) => {
        async {
            let plan: &verdict_core::overlap::Plan<'_> = $plan;
            if plan.max_extra() == 0 {
                return Ok::<bool, sqlx::Error>(false);
            }
            let Some((extra,)) = sqlx::query_as::<_, (i32,)>($extra_sql)
                .bind($task)
                .fetch_optional(&mut *$tx)
                .await?
            else {
                return Ok(false);
            };
            let finished: Vec<(String, sqlx::types::Json<verdict_core::rubric::Answers>)> =
                sqlx::query_as($crate::assignments::FINISHED_OF_TASK)
                    .bind($task)
                    .fetch_all(&mut *$tx)
                    .await?;
            let (count, rated) = $crate::assignments::tally(
                finished
                    .iter()
                    .map(|(outcome, answers)| (outcome.as_str(), &answers.0)),
            );
            if !plan.needs_one_more(extra, count, rated.into_iter()) {
                return Ok(false);
            }
            sqlx::query($crate::assignments::ESCALATE)
                .bind($task)
                .bind(plan.overlap)
                .execute(&mut *$tx)
                .await?;
            Ok(true)
        }
        .await
    };
}
pub(crate) use escalate;

/// An open assignment as a lead sees it on the batch page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Held {
    pub id: Uuid,
    pub rater: String,
    pub external_id: String,
    pub created_at: DateTime<Utc>,
    pub lease_expires_at: DateTime<Utc>,
    /// The rater has saved a draft.
    pub drafted: bool,
}

/// Gives back the slot of an assignment's task whatever its batch (`$1` the task).
const RELEASE_SLOT_OF_TASK: &str = "UPDATE tasks SET claimed = claimed - 1,
       is_full = (claimed - 1 >= (SELECT b.overlap FROM batches b WHERE b.id = tasks.batch_id) + extra)
     WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = $1)";

/// Which open assignments to end, their tasks going back to the pool.
#[derive(Debug, Clone, Copy)]
pub enum Release {
    /// One assignment (a lead or admin releasing it by hand).
    One(Uuid),
    /// Every one of a rater's (on deactivation).
    OfRater(Uuid),
    /// A batch's assignments held by raters no longer allowed in it (after its raters
    /// changed).
    NotAllowed { batch: Uuid },
    /// Every one whose lease ran out, drafted or not.
    LeaseOver,
}

/// How many times a pick is retried when a concurrent request took the same slot.
const PICK_ATTEMPTS: usize = 5;

impl super::Store {
    /// Ends the open assignments `which` names (their state becomes `expired`, any draft
    /// stays with them for the rater to read) and gives their slots back, in one
    /// transaction. Returns the assignments ended.
    pub async fn release(&self, which: Release) -> StoreResult<Vec<Assignment>> {
        let now = Utc::now();
        let filter = match which {
            Release::One(_) => "a.id = $2",
            Release::OfRater(_) => "a.rater_id = $2",
            Release::NotAllowed { .. } => {
                "a.batch_id = $2 AND EXISTS (SELECT 1 FROM batches b WHERE b.id = $2
                   AND b.raters_restricted AND NOT EXISTS (SELECT 1 FROM batch_members m
                     WHERE m.batch_id = $2 AND m.user_id = a.rater_id AND m.role = 'rater'))"
            }
            Release::LeaseOver => "a.lease_expires_at < $1",
        };
        let key = match which {
            Release::One(id) | Release::OfRater(id) | Release::NotAllowed { batch: id } => Some(id),
            Release::LeaseOver => None,
        };
        let select = format!(
            "SELECT {ASSIGNMENT_COLUMNS} FROM assignments a WHERE a.state = 'open' AND {filter}{}",
            self.lock_clause()
        );
        let released = transaction!(self, |tx| {
            // `$1` is now, `$2` the id the filter names (the lease's names none).
            let mut query = sqlx::query_as::<_, AssignmentRow>(&select).bind(now);
            if let Some(key) = key {
                query = query.bind(key);
            }
            let found: Vec<Assignment> = query
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .map(Assignment::from)
                .collect();
            for assignment in &found {
                sqlx::query(
                    "UPDATE assignments SET state = 'expired', updated_at = $2 WHERE id = $1",
                )
                .bind(assignment.id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                sqlx::query(RELEASE_SLOT_OF_TASK)
                    .bind(assignment.task_id)
                    .execute(&mut *tx)
                    .await?;
            }
            found
        });
        Ok(released)
    }

    /// Asks one more rater of each task of a batch whose finished answers call for one
    /// under `plan` now (after its settings changed: a higher most, another rule), in
    /// one transaction holding the batch's tasks. Returns how many tasks escalated.
    pub async fn escalate_batch(&self, batch_id: Uuid, plan: &Plan<'_>) -> StoreResult<u64> {
        if plan.max_extra() == 0 {
            return Ok(0);
        }
        let tasks_sql = format!(
            "SELECT id, extra FROM tasks WHERE batch_id = $1 AND withdrawn_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = tasks.id)
             ORDER BY id{}",
            self.no_key_lock_clause()
        );
        let escalated = transaction!(self, |tx| {
            let tasks: Vec<(Uuid, i32)> = sqlx::query_as(&tasks_sql)
                .bind(batch_id)
                .fetch_all(&mut *tx)
                .await?;
            let finished: Vec<(Uuid, String, Json<Answers>)> = sqlx::query_as(FINISHED_OF_BATCH)
                .bind(batch_id)
                .fetch_all(&mut *tx)
                .await?;
            let mut by_task: HashMap<Uuid, Vec<(&str, &Answers)>> = HashMap::new();
            for (task, outcome, answers) in &finished {
                by_task
                    .entry(*task)
                    .or_default()
                    .push((outcome.as_str(), &answers.0));
            }
            let mut escalated = 0u64;
            for (task, extra) in tasks {
                let Some(rows) = by_task.remove(&task) else {
                    continue;
                };
                let (count, rated) = tally(rows);
                if plan.needs_one_more(extra, count, rated.into_iter()) {
                    sqlx::query(ESCALATE)
                        .bind(task)
                        .bind(plan.overlap)
                        .execute(&mut *tx)
                        .await?;
                    escalated += 1;
                }
            }
            escalated
        });
        Ok(escalated)
    }

    /// A batch's tasks (gold aside), how many escalated, and the raters they gained.
    pub async fn escalation_counts(&self, batch_id: Uuid) -> StoreResult<(i64, i64, i64)> {
        let (tasks, escalated, added): (i64, i64, i64) = read!(self, |pool| {
            sqlx::query_as(
                "SELECT COUNT(*),
                        COALESCE(SUM(CASE WHEN extra > 0 THEN 1 ELSE 0 END), 0),
                        COALESCE(SUM(extra), 0)
                 FROM tasks WHERE batch_id = $1
                   AND NOT EXISTS (SELECT 1 FROM gold_tasks g WHERE g.task_id = tasks.id)",
            )
            .bind(batch_id)
            .fetch_one(pool)
            .await
        })?;
        Ok((tasks, escalated, added))
    }

    /// A batch's open assignments, oldest first (at most `limit`).
    pub async fn held(&self, batch_id: Uuid, limit: i64) -> StoreResult<Vec<Held>> {
        Ok(read!(self, |pool| {
            sqlx::query_as::<_, Held>(
                "SELECT a.id, u.username AS rater, t.external_id, a.created_at, a.lease_expires_at,
                        EXISTS (SELECT 1 FROM ratings r WHERE r.assignment_id = a.id) AS drafted
                 FROM assignments a JOIN users u ON u.id = a.rater_id JOIN tasks t ON t.id = a.task_id
                 WHERE a.batch_id = $1 AND a.state = 'open' ORDER BY a.created_at LIMIT $2",
            )
            .bind(batch_id)
            .bind(limit)
            .fetch_all(pool)
            .await
        })?)
    }

    pub async fn assignment(&self, id: Uuid) -> StoreResult<Option<Assignment>> {
        let sql = format!("SELECT {ASSIGNMENT_COLUMNS} FROM assignments a WHERE a.id = $1");
        let row = read!(self, |pool| sqlx::query_as::<_, AssignmentRow>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Assignment::from))
    }

    /// An assignment with its task and the draft saved on it, in one query: what the
    /// rating form shows.
    pub async fn assignment_form(&self, id: Uuid) -> StoreResult<Option<AssignmentForm>> {
        let sql = format!(
            "SELECT {ASSIGNMENT_COLUMNS}, t.external_id, t.prompt, t.response_a, t.response_b,
                    t.model_a, t.model_b, t.metadata, t.rendered,
                    r.answers AS draft_answers, r.evidence AS draft_evidence,
                    r.time_spent_s AS draft_time_spent_s, {TASK_NUMBER} AS task_number
             FROM assignments a JOIN tasks t ON t.id = a.task_id
             LEFT JOIN ratings r ON r.assignment_id = a.id
             WHERE a.id = $1"
        );
        Ok(read!(self, |pool| sqlx::query_as::<_, AssignmentForm>(
            &sql
        )
        .bind(id)
        .fetch_optional(pool)
        .await)?)
    }

    /// The rater's open assignment in a batch, if there is one; claims nothing.
    pub async fn open_assignment(
        &self,
        batch_id: Uuid,
        rater_id: Uuid,
    ) -> StoreResult<Option<Assignment>> {
        let sql = format!(
            "SELECT {ASSIGNMENT_COLUMNS} FROM assignments a
             WHERE a.rater_id = $1 AND a.batch_id = $2 AND a.state = 'open'"
        );
        let row = read!(self, |pool| sqlx::query_as::<_, AssignmentRow>(&sql)
            .bind(rater_id)
            .bind(batch_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Assignment::from))
    }

    /// The number of an assignment's task among its rater's tasks of the batch (see
    /// [`TASK_NUMBER`]).
    pub async fn task_number(&self, assignment_id: Uuid) -> StoreResult<i64> {
        let sql = format!("SELECT {TASK_NUMBER} FROM assignments a WHERE a.id = $1");
        let (number,): (i64,) = read!(self, |pool| {
            sqlx::query_as(&sql)
                .bind(assignment_id)
                .fetch_one(pool)
                .await
        })?;
        Ok(number)
    }

    pub async fn task(&self, id: Uuid) -> StoreResult<Option<Task>> {
        let row = read!(self, |pool| {
            sqlx::query_as::<_, TaskRow>(
                "SELECT id, batch_id, external_id, prompt, response_a, response_b, model_a, model_b, metadata, rendered
                 FROM tasks WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(pool)
            .await
        })?;
        Ok(row.map(Task::from))
    }

    /// The rater's open assignment in `batch` (its lease renewed), or else a new one on
    /// the first task in upload order that has room and that this rater has never had;
    /// `None` when nothing is left for them. `swap` decides the orientation of a new one,
    /// and `gold` whether it is a gold task the rater has not had instead (while the
    /// pool still holds work for them, so that gold never outlasts the real tasks).
    /// `qualifying` hands out only gold tasks the rater has not had, and nothing when
    /// none is left (see [`verdict_core::qualification`]).
    pub async fn next_assignment(
        &self,
        batch: &Batch,
        rater_id: Uuid,
        skills: &[String],
        swap: impl Fn() -> bool,
        gold: impl Fn() -> bool,
        qualifying: bool,
    ) -> StoreResult<Option<Assignment>> {
        for _ in 0..PICK_ATTEMPTS {
            let gold = if qualifying {
                Gold::Only
            } else {
                Gold::Mixed(gold())
            };
            match self
                .try_next_assignment(batch, rater_id, skills, swap(), gold)
                .await
            {
                // Two requests of the same rater raced to open an assignment, or two
                // raters to fill the last slot: the loser looks again.
                Err(StoreError::Db(sqlx::Error::Database(e))) if e.is_unique_violation() => {
                    continue;
                }
                Ok(Pick::Raced) => continue,
                Ok(Pick::Found(found)) => return Ok(found),
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Db(sqlx::Error::Protocol(
            "no task could be claimed; try again".into(),
        )))
    }

    async fn try_next_assignment(
        &self,
        batch: &Batch,
        rater_id: Uuid,
        skills: &[String],
        swapped: bool,
        gold: Gold,
    ) -> StoreResult<Pick> {
        let now = Utc::now();
        let lease = now + Duration::minutes(i64::from(batch.lease_minutes));
        let own_sql = format!(
            "SELECT {ASSIGNMENT_COLUMNS} FROM assignments a
             WHERE a.rater_id = $1 AND a.batch_id = $2 AND a.state = 'open'"
        );
        // `is_full = FALSE`, not `NOT is_full`: SQLite only walks the `tasks_pool` index
        // (batch, is_full, seq) for an equality, and would otherwise step over every
        // full task before the first open one. `route` is a pass's condition on the
        // task's route key, its skills bound from `$3`.
        let pick = |lock: &str, route: &str| {
            format!(
                "SELECT t.id FROM tasks t
                 WHERE t.batch_id = $1 AND t.is_full = FALSE{route}
                   AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.task_id = t.id AND a.rater_id = $2)
                 ORDER BY t.seq LIMIT 1{lock}"
            )
        };
        // On PostgreSQL the pick passes over tasks other pickers hold locked; when it
        // finds nothing, the tasks left may all be held so. It then waits for the first
        // one (which may have filled up meanwhile), and, finding none that way, asks
        // whether any task is still open to this rater at all before saying none is.
        let postgres = self.backend() == super::Backend::Postgres;
        let passes: Vec<PassSql> = Pass::of(batch, skills)
            .into_iter()
            .filter_map(|pass| {
                let route = pass.condition(skills.len(), 3)?;
                // Its skills follow the claim's own `$3`, the overlap.
                let claim_route = pass.condition(skills.len(), 4)?;
                Some(PassSql {
                    skills: pass.binds_skills(),
                    pick: pick(self.skip_locked_clause(), &route),
                    claim_first: format!(
                        "UPDATE tasks SET claimed = claimed + 1, is_full = (claimed + 1 >= $3 + extra)
                         WHERE id = ({}) AND claimed < $3 + extra RETURNING id",
                        pick("", &claim_route)
                    ),
                    wait: pick(self.lock_clause(), &route),
                    any: pick("", &route),
                })
            })
            .collect();
        let bound = |pass: &PassSql| if pass.skills { skills } else { &[] };
        let pick = transaction!(self, |tx| {
            let own = sqlx::query_as::<_, AssignmentRow>(&own_sql)
                .bind(rater_id)
                .bind(batch.id)
                .fetch_optional(&mut *tx)
                .await?
                .map(Assignment::from);
            if let Some(mut own) = own {
                sqlx::query("UPDATE assignments SET lease_expires_at = $2 WHERE id = $1")
                    .bind(own.id)
                    .bind(lease)
                    .execute(&mut *tx)
                    .await?;
                own.lease_expires_at = lease;
                Pick::Found(Some(own))
            } else {
                // Leases that ran out go back to the pool (a draft renews its lease, so
                // these are untouched for a whole lease; the draft stays with the rater).
                let expired: Vec<(Uuid,)> = sqlx::query_as(
                    "UPDATE assignments SET state = 'expired', updated_at = $2
                     WHERE batch_id = $1 AND state = 'open' AND lease_expires_at < $2
                     RETURNING task_id",
                )
                .bind(batch.id)
                .bind(now)
                .fetch_all(&mut *tx)
                .await?;
                for (task_id,) in expired {
                    sqlx::query(RELEASE_SLOT)
                        .bind(task_id)
                        .bind(batch.overlap)
                        .execute(&mut *tx)
                        .await?;
                }
                // SQLite, without gold: one writer, so nobody else can be claiming the
                // first open task; it is picked and claimed in one statement.
                // Each pass in turn (matching tasks first, when the batch prefers them)
                // until one finds a task.
                let (candidate, claimed, held_elsewhere) = if gold == Gold::Only {
                    // Qualifying: a gold task the rater has not had, and nothing else.
                    let gold_task: Option<(Uuid,)> = sqlx::query_as(GOLD_PICK)
                        .bind(batch.id)
                        .bind(rater_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                    (gold_task, gold_task.map(|(id,)| id), false)
                } else if !postgres && gold == Gold::Mixed(false) {
                    let mut claimed: Option<(Uuid,)> = None;
                    for pass in &passes {
                        let mut claim = sqlx::query_as(&pass.claim_first)
                            .bind(batch.id)
                            .bind(rater_id)
                            .bind(batch.overlap);
                        for skill in bound(pass) {
                            claim = claim.bind(skill);
                        }
                        claimed = claim.fetch_optional(&mut *tx).await?;
                        if claimed.is_some() {
                            break;
                        }
                    }
                    (claimed, claimed.map(|(id,)| id), false)
                } else {
                    let mut candidate: Option<(Uuid,)> = None;
                    let mut held_elsewhere = false;
                    for pass in &passes {
                        let mut query = sqlx::query_as(&pass.pick).bind(batch.id).bind(rater_id);
                        for skill in bound(pass) {
                            query = query.bind(skill);
                        }
                        candidate = query.fetch_optional(&mut *tx).await?;
                        if candidate.is_none() && postgres {
                            let mut query =
                                sqlx::query_as(&pass.wait).bind(batch.id).bind(rater_id);
                            for skill in bound(pass) {
                                query = query.bind(skill);
                            }
                            candidate = query.fetch_optional(&mut *tx).await?;
                            if candidate.is_none() {
                                let mut query = sqlx::query_as::<_, (Uuid,)>(&pass.any)
                                    .bind(batch.id)
                                    .bind(rater_id);
                                for skill in bound(pass) {
                                    query = query.bind(skill);
                                }
                                held_elsewhere = query.fetch_optional(&mut *tx).await?.is_some();
                            }
                        }
                        if candidate.is_some() || held_elsewhere {
                            break;
                        }
                    }
                    // A gold task in place of the pool's, in no fixed order; it claims no
                    // slot, as it never counts towards the overlap.
                    let gold_task: Option<(Uuid,)> =
                        if gold == Gold::Mixed(true) && candidate.is_some() {
                            sqlx::query_as(GOLD_PICK)
                                .bind(batch.id)
                                .bind(rater_id)
                                .fetch_optional(&mut *tx)
                                .await?
                        } else {
                            None
                        };
                    let claimed = match (gold_task, candidate) {
                        (Some((task_id,)), _) => Some(task_id),
                        (None, None) => None,
                        (None, Some((task_id,))) => {
                            let claimed = sqlx::query(
                                "UPDATE tasks SET claimed = claimed + 1, is_full = (claimed + 1 >= $2 + extra)
                                 WHERE id = $1 AND claimed < $2 + extra",
                            )
                            .bind(task_id)
                            .bind(batch.overlap)
                            .execute(&mut *tx)
                            .await?;
                            (claimed.rows_affected() == 1).then_some(task_id)
                        }
                    };
                    (candidate, claimed, held_elsewhere)
                };
                match claimed {
                    None if held_elsewhere => Pick::Raced,
                    None if candidate.is_none() => Pick::Found(None),
                    None => Pick::Raced,
                    Some(task_id) => {
                        let assignment = Assignment {
                            id: Uuid::now_v7(),
                            task_id,
                            batch_id: batch.id,
                            rater_id,
                            swapped,
                            state: AssignmentState::Open,
                            lease_expires_at: lease,
                            created_at: now,
                        };
                        sqlx::query(
                            "INSERT INTO assignments
                               (id, task_id, batch_id, rater_id, swapped, state, lease_expires_at, created_at, updated_at)
                             VALUES ($1, $2, $3, $4, $5, 'open', $6, $7, $7)",
                        )
                        .bind(assignment.id)
                        .bind(task_id)
                        .bind(batch.id)
                        .bind(rater_id)
                        .bind(swapped)
                        .bind(lease)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                        Pick::Found(Some(assignment))
                    }
                }
            }
        });
        Ok(pick)
    }
}

/// A gold task of batch `$1` that rater `$2` has not had, in no fixed order. It claims
/// no slot, as it never counts towards the overlap.
const GOLD_PICK: &str = "SELECT g.task_id FROM gold_tasks g WHERE g.batch_id = $1
       AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.task_id = g.task_id AND a.rater_id = $2)
     ORDER BY RANDOM() LIMIT 1";

/// Whether a pick hands out gold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gold {
    /// A gold task in place of the pool's, or not, while the pool holds work.
    Mixed(bool),
    /// Only gold tasks: the rater is qualifying (see [`verdict_core::qualification`]).
    Only,
}

/// One pass of a pick over the pool (see [`verdict_core::routing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Any task.
    Any,
    /// Tasks whose route key is one of the rater's skills.
    Matching,
    /// Those, and tasks without a route key.
    MatchingOrUnkeyed,
}

impl Pass {
    /// The passes a rater with `skills` makes over `batch`'s pool, in order.
    fn of(batch: &Batch, skills: &[String]) -> Vec<Pass> {
        match (&batch.route_by, batch.routing) {
            (None, _) => vec![Pass::Any],
            (Some(_), Routing::Prefer) if skills.is_empty() => vec![Pass::Any],
            (Some(_), Routing::Prefer) => vec![Pass::Matching, Pass::Any],
            (Some(_), Routing::Strict) => vec![Pass::MatchingOrUnkeyed],
        }
    }

    fn binds_skills(self) -> bool {
        self != Pass::Any
    }

    /// The pass's condition on a task `t`, its `skills` skills bound from `$first`;
    /// `None` when it can find nothing (matching, without skills).
    fn condition(self, skills: usize, first: usize) -> Option<String> {
        let list = (first..first + skills)
            .map(|n| format!("${n}"))
            .collect::<Vec<_>>()
            .join(", ");
        match (self, skills) {
            (Pass::Any, _) => Some(String::new()),
            (Pass::Matching, 0) => None,
            (Pass::Matching, _) => Some(format!(" AND t.route_key IN ({list})")),
            (Pass::MatchingOrUnkeyed, 0) => Some(" AND t.route_key IS NULL".into()),
            (Pass::MatchingOrUnkeyed, _) => Some(format!(
                " AND (t.route_key IS NULL OR t.route_key IN ({list}))"
            )),
        }
    }
}

/// A pass's statements.
struct PassSql {
    /// Whether they bind the rater's skills after their own parameters.
    skills: bool,
    pick: String,
    claim_first: String,
    wait: String,
    any: String,
}

enum Pick {
    Found(Option<Assignment>),
    /// The chosen task filled up between the pick and the claim (cannot happen under
    /// the row lock, kept as a guard).
    Raced,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_binds_each_skill_after_the_statements_own_parameters() {
        assert_eq!(Pass::Any.condition(2, 3).as_deref(), Some(""));
        assert_eq!(
            Pass::Matching.condition(2, 4).as_deref(),
            Some(" AND t.route_key IN ($4, $5)")
        );
        assert_eq!(Pass::Matching.condition(0, 3), None);
        assert_eq!(
            Pass::MatchingOrUnkeyed.condition(0, 3).as_deref(),
            Some(" AND t.route_key IS NULL")
        );
        assert_eq!(
            Pass::MatchingOrUnkeyed.condition(1, 3).as_deref(),
            Some(" AND (t.route_key IS NULL OR t.route_key IN ($3))")
        );
        assert!(!Pass::Any.binds_skills() && Pass::Matching.binds_skills());
    }
}
