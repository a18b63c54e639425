//! Batches as admins make and change them: an upload checked and imported (a new batch
//! or more tasks for one), its settings (in [`settings`]), and its gold settings as its
//! leads set them. The API, the admin pages, the demo and the command line call these.

use serde::Deserialize;
use uuid::Uuid;

use super::audit::Actor;
use super::{FieldErrors, ServiceError, ServiceResult};
use crate::store::batches::{Imported, UploadEntry};
use crate::store::{Store, StoreError};
use verdict_core::batch::{Batch, NewBatch};
use verdict_core::import;
use verdict_core::qualification::Qualification;
use verdict_core::routing::{RouteBy, Routing};
use verdict_core::rubric::Subject;
use verdict_core::user::User;

pub mod settings;

/// The longest batch name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// The most raters a task of a batch may ask for.
pub const MAX_OVERLAP: i32 = 100;
/// The longest lease of an assignment, in minutes (a day).
pub const MAX_LEASE_MINUTES: i32 = 24 * 60;
/// The longest shortest explanation a batch may ask for, in characters.
pub const MAX_MIN_EXPLANATION: i32 = 1000;

/// Checks a batch name.
pub fn name_violation(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("is required".into())
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some(format!("must be at most {MAX_NAME_CHARS} characters"))
    } else if name.chars().any(char::is_control) {
        Some("may not contain control characters".into())
    } else {
        None
    }
}

/// What an upload asks for, as given in the query string or on the command line.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UploadParams {
    /// The batch to create, or to add tasks to if it exists (required).
    #[param(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f]*\S[^\x00-\x1f\x7f]*$"
    )]
    pub name: Option<String>,
    /// The rubric of a new batch: `blackhat` (default), `additive-5`, `pairwise-aspects`
    /// or one an admin added; the batch keeps its newest version.
    #[param(pattern = r"^[a-z][a-z0-9-]{0,63}$")]
    pub rubric: Option<String>,
    /// Raters per task for a new batch (default 1); for an existing batch, if given, it
    /// must be the batch's.
    #[param(minimum = 1, maximum = 100)]
    pub overlap: Option<i32>,
    /// The most raters a task of a new batch is asked of when its answers disagree
    /// (default: `overlap`, no escalation); for an existing batch, if given, it must be
    /// the batch's.
    #[param(minimum = 1, maximum = 100)]
    pub max_overlap: Option<i32>,
    /// When a task needs one more rater: `side`, `points:<n>`, `no_majority` or
    /// `spread:<n>`, each optionally naming its question after the rule
    /// (`points:sxs:3`); default: `side` on the rubric's first preference, else
    /// `no_majority` on its first choice.
    #[param(max_length = 200)]
    pub escalate: Option<String>,
    /// Randomise A/B per assignment in a new batch (default true); for an existing batch,
    /// if given, it must be the batch's.
    pub randomize: Option<bool>,
    /// Whether raters of a new batch see each task's external id (default false: each
    /// task is named to its rater by its number among theirs, `Task 17`); for an
    /// existing batch, if given, it must be the batch's.
    pub raters_see_external_ids: Option<bool>,
    /// The task field a new batch routes its tasks by, `metadata.<key>` (e.g.
    /// `metadata.language`): raters are offered the tasks whose value is one of their
    /// skills first, or only (`routing`). Default: no routing. For an existing batch, if
    /// given, it must be the batch's.
    #[param(pattern = r"^\s*(metadata\.[A-Za-z0-9_-]{1,64})?\s*$")]
    pub route_by: Option<String>,
    /// `prefer` (matching tasks first, default) or `strict` (matching tasks, and tasks
    /// without the field, only). For an existing batch, if given, it must be the batch's.
    #[param(pattern = r"^\s*(prefer|strict)?\s*$")]
    pub routing: Option<String>,
}

/// An upload's settings, checked.
pub async fn new_batch(
    store: &Store,
    params: &UploadParams,
    creator: Option<&User>,
) -> ServiceResult<NewBatch> {
    let mut fields = FieldErrors::new();
    let name = params.name.as_deref().unwrap_or("").trim().to_owned();
    if let Some(why) = name_violation(&name) {
        fields.insert("name".into(), why);
    }
    // Without a rubric, tasks added to a batch take its rubric (and version), and a new
    // batch takes blackhat's newest.
    let existing = match params.rubric {
        Some(_) => None,
        None if name.is_empty() => None,
        None => store.batch_by_name(&name).await?,
    };
    let (rubric, latest) = match existing {
        Some(batch) => {
            let pinned = store.batch_rubric(&batch).await?;
            (batch.rubric, Some((batch.rubric_version, pinned)))
        }
        None => {
            let rubric = params.rubric.clone().unwrap_or_else(|| "blackhat".into());
            let latest = store.latest_rubric(&rubric).await?;
            (rubric, latest)
        }
    };
    let subject = latest.as_ref().map_or(Subject::Pair, |(_, r)| r.subject);
    if subject == Subject::Single && params.randomize == Some(true) {
        fields.insert(
            "randomize".into(),
            format!("{rubric} judges one response: there are no sides to show in random order"),
        );
    }
    if latest.is_none() {
        fields.insert(
            "rubric".into(),
            format!(
                "unknown rubric {rubric:?}: use {}",
                store.rubric_names().await?.join(", ")
            ),
        );
    }
    if params
        .overlap
        .is_some_and(|overlap| !(1..=MAX_OVERLAP).contains(&overlap))
    {
        fields.insert("overlap".into(), format!("must be from 1 to {MAX_OVERLAP}"));
    }
    if params
        .max_overlap
        .is_some_and(|most| !(1..=MAX_OVERLAP).contains(&most))
    {
        fields.insert(
            "max_overlap".into(),
            format!("must be from 1 to {MAX_OVERLAP}"),
        );
    } else if let Some(most) = params.max_overlap
        && most < params.overlap.unwrap_or(1)
    {
        fields.insert(
            "max_overlap".into(),
            format!(
                "must be at least the raters per task ({})",
                params.overlap.unwrap_or(1)
            ),
        );
    }
    // A rule is checked against the rubric and kept as read, its defaults written out.
    let mut escalate = None;
    if let Some((_, rubric)) = &latest {
        match params.escalate.as_deref().map(str::trim) {
            Some(text) if !text.is_empty() => {
                match verdict_core::overlap::Escalation::parse(text, rubric) {
                    Ok(rule) => escalate = Some(rule.to_string()),
                    Err(why) => {
                        fields.insert("escalate".into(), why);
                    }
                }
            }
            _ => {
                let escalates = params
                    .max_overlap
                    .is_some_and(|most| most > params.overlap.unwrap_or(1));
                if escalates && verdict_core::overlap::Escalation::default_for(rubric).is_none() {
                    fields.insert(
                        "escalate".into(),
                        format!(
                            "the rubric {rubric_name} has no preference or choice to escalate on by default: name a rule, e.g. spread:<n>",
                            rubric_name = rubric.name
                        ),
                    );
                }
            }
        }
    }
    let route_by = match params.route_by.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => RouteBy::parse(text)
            .map_err(|why| fields.insert("route_by".into(), why))
            .ok(),
        _ => None,
    };
    let routing = match params.routing.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => text
            .parse::<Routing>()
            .map_err(|why| fields.insert("routing".into(), why))
            .ok(),
        _ => None,
    };
    if !fields.is_empty() {
        return Err(ServiceError::Invalid(fields));
    }
    Ok(NewBatch {
        name,
        rubric,
        rubric_version: latest.map_or(1, |(v, _)| v),
        subject,
        overlap: params.overlap,
        max_overlap: params.max_overlap,
        escalate,
        randomize: match subject {
            Subject::Single => Some(false),
            Subject::Pair => params.randomize,
        },
        raters_see_external_ids: params.raters_see_external_ids,
        route_by,
        routing,
        created_by: creator.map(|u| u.id),
    })
}

/// Tasks handed from the check to the store at a time.
const PIECE: usize = 256;

/// How many times an upload is checked again when a concurrent upload changed its batch
/// between the check and the write.
const IMPORT_ATTEMPTS: usize = 5;

/// Imports an uploaded file: stores the new tasks in one transaction while it checks
/// every record, and keeps them only if every record passed (nothing is stored if any is
/// bad), with the upload's audit entry when `by` is given. `progress` hears bytes
/// checked.
pub async fn import(
    store: &Store,
    new: NewBatch,
    format: import::Format,
    bytes: bytes::Bytes,
    progress: impl FnMut(u64) + Send + Clone + 'static,
    by: Option<Actor<'_>>,
) -> ServiceResult<Imported> {
    let entry = by.map(|actor| {
        let (actor_id, actor_name) = actor.ids();
        UploadEntry {
            actor_id,
            actor_name,
            bytes: bytes.len(),
        }
    });
    let mut attempt = 0;
    loop {
        attempt += 1;
        let existing = store.batch_by_name(&new.name).await?;
        if existing.is_none() && store.deleted_batch_named(&new.name).await?.is_some() {
            return Err(ServiceError::field(
                "name",
                format!(
                    "a deleted batch is named {:?}: restore it to add tasks to it, purge it, \
                     or choose another name",
                    new.name
                ),
            ));
        }
        if let Some(batch) = &existing {
            settings_differ(batch, &new)?;
        }
        let rubric = match &existing {
            Some(batch) => store.batch_rubric(batch).await?,
            None => store
                .rubric(&new.rubric, new.rubric_version)
                .await?
                .ok_or_else(|| {
                    ServiceError::field("rubric", format!("no rubric {:?}", new.rubric))
                })?,
        };
        let responses = match rubric.subject {
            Subject::Pair => import::Responses::Two,
            Subject::Single => import::Responses::One,
        };
        let hashes = match &existing {
            Some(batch) => store.task_hashes(batch.id).await?,
            None => Default::default(),
        };
        // The file is checked on a blocking thread, which hands on each task that
        // passed while the store writes them in its transaction; the transaction keeps
        // them only if the whole file passed.
        let (file, progress) = (bytes.clone(), progress.clone());
        let (sender, tasks) = tokio::sync::mpsc::channel::<Vec<import::NewTask>>(4);
        let (verdict, passed) = tokio::sync::oneshot::channel::<bool>();
        let checker = tokio::task::spawn_blocking(move || {
            let gold =
                |expected: &serde_json::Value| verdict_core::gold::check_task(&rubric, expected);
            let mut sender = Some(sender);
            let mut piece = Vec::with_capacity(PIECE);
            let mut hand_on = move |piece: Vec<import::NewTask>| {
                // A store that stopped (an error, a concurrent upload) takes no more;
                // the check goes on, to report every bad record.
                if sender
                    .as_ref()
                    .is_some_and(|s| s.blocking_send(piece).is_err())
                {
                    sender = None;
                }
            };
            let checked =
                import::check_each(format, &file, responses, gold, &hashes, progress, |task| {
                    piece.push(task);
                    if piece.len() == PIECE {
                        hand_on(std::mem::replace(&mut piece, Vec::with_capacity(PIECE)));
                    }
                });
            if checked.error_count == 0 && !piece.is_empty() {
                hand_on(piece);
            }
            // The store hears the verdict once it has read every task handed on.
            drop(hand_on);
            let _ = verdict.send(checked.error_count == 0);
            checked
        });
        let seen = existing.as_ref().map(|b| b.id);
        let passed = async { passed.await.unwrap_or(false) };
        let stored = store
            .import_tasks(&new, seen, tasks, passed, entry.as_ref())
            .await;
        let checked = checker
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        if checked.error_count > 0 {
            return Err(ServiceError::BadRecords {
                count: checked.error_count,
                errors: checked.errors,
            });
        }
        match stored {
            Err(StoreError::Retry) if attempt < IMPORT_ATTEMPTS => {
                // The other upload's commit may not be visible yet: give it a moment.
                let pause = 20 * u64::try_from(attempt).unwrap_or(1);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
            Ok(imported) => {
                tracing::info!(
                    batch = %imported.batch.name, created = imported.created,
                    unchanged = imported.unchanged, bytes = bytes.len(), "batch imported"
                );
                return Ok(imported);
            }
        }
    }
}

/// An upload adds tasks to an existing batch and never changes its settings: settings
/// it gives that differ from the batch's are refused, naming each (PATCH changes them).
fn settings_differ(batch: &Batch, new: &NewBatch) -> ServiceResult<()> {
    if new.fits(batch) {
        return Ok(());
    }
    let mut fields = FieldErrors::new();
    if batch.rubric != new.rubric {
        fields.insert(
            "rubric".into(),
            format!("batch {:?} uses the {} rubric", batch.name, batch.rubric),
        );
    }
    let mut differs = |setting: &str, has: String| {
        fields.insert(
            setting.into(),
            format!(
                "batch {:?} has {setting} {has}: leave it out to add tasks, or change it in \
                 the batch's settings (PATCH /api/v1/batches/{})",
                batch.name, batch.id
            ),
        );
    };
    if new.overlap.is_some_and(|o| o != batch.overlap) {
        differs("overlap", batch.overlap.to_string());
    }
    let most = batch.most_raters();
    if new.max_overlap.is_some_and(|m| m != most) {
        differs("max_overlap", most.to_string());
    }
    if new
        .escalate
        .as_ref()
        .is_some_and(|e| Some(e) != batch.escalate.as_ref())
    {
        differs(
            "escalate",
            batch
                .escalate
                .clone()
                .unwrap_or_else(|| "the rubric's default rule".into()),
        );
    }
    if new.randomize.is_some_and(|r| r != batch.randomize) {
        differs("randomize", batch.randomize.to_string());
    }
    if new
        .route_by
        .as_ref()
        .is_some_and(|r| Some(r) != batch.route_by.as_ref())
    {
        differs(
            "route_by",
            batch
                .route_by
                .as_ref()
                .map_or_else(|| "no routing".into(), ToString::to_string),
        );
    }
    if new.routing.is_some_and(|r| r != batch.routing) {
        differs("routing", batch.routing.to_string());
    }
    if new
        .raters_see_external_ids
        .is_some_and(|r| r != batch.raters_see_external_ids)
    {
        differs(
            "raters_see_external_ids",
            batch.raters_see_external_ids.to_string(),
        );
    }
    Err(ServiceError::Invalid(fields))
}

/// The batch, if `lead` leads it; not found for anyone else (its existence is not
/// revealed).
pub async fn led(store: &Store, batch_id: Uuid, lead: &User) -> ServiceResult<Batch> {
    if !crate::access::can_review(store, batch_id, lead).await? {
        return Err(ServiceError::NotFound);
    }
    store.batch(batch_id).await?.ok_or(ServiceError::NotFound)
}

/// A change to a batch's qualification: `tasks` `Some(None)` asks for none; any other
/// absent setting keeps its value (a new qualification's defaults: a pass mark of 0.8,
/// one try, answers not revealed).
#[derive(Debug, Default, Clone, Copy)]
pub struct QualificationChange {
    pub tasks: Option<Option<i32>>,
    pub pass_mark: Option<f64>,
    pub tries: Option<i32>,
    pub reveal: Option<bool>,
}

/// Changes the gold settings of a batch `lead` leads: how often gold tasks are handed
/// out (`gold_rate`), the accuracy below which ratings wait for review first
/// (`review_first_below`, `Some(None)` for never) and its qualification; an absent value
/// keeps the batch's. Every bad value is named and nothing changes.
pub async fn set_gold(
    store: &Store,
    batch_id: Uuid,
    lead: &User,
    gold_rate: Option<f64>,
    review_first_below: Option<Option<f64>>,
    qualification: QualificationChange,
) -> ServiceResult<()> {
    let batch = led(store, batch_id, lead).await?;
    let mut errors = FieldErrors::new();
    let gold_rate = gold_rate.unwrap_or(batch.gold_rate);
    if !(0.0..=1.0).contains(&gold_rate) {
        errors.insert(
            "gold_rate".into(),
            "must be a share from 0 to 1, e.g. 0.1 for one task in ten".into(),
        );
    }
    let review_first_below = review_first_below.unwrap_or(batch.review_first_below);
    if review_first_below.is_some_and(|t| !(t > 0.0 && t <= 1.0)) {
        errors.insert(
            "review_first_below".into(),
            "must be an accuracy above 0 and at most 1, e.g. 0.7, or null for never".into(),
        );
    }
    // A qualification keeps the settings not given, or takes a new one's defaults. The
    // settings are checked whether or not one is asked for, so that a bad value given
    // alone is named too.
    let now = batch.qualification;
    let tasks = qualification.tasks.unwrap_or(now.map(|q| q.tasks));
    let checked = Qualification::check(
        tasks.unwrap_or(1),
        qualification
            .pass_mark
            .or(now.map(|q| q.pass_mark))
            .unwrap_or(0.8),
        qualification.tries.or(now.map(|q| q.tries)).unwrap_or(1),
        qualification
            .reveal
            .or(now.map(|q| q.reveal))
            .unwrap_or(false),
    );
    let qualification = match checked {
        Ok(q) => tasks.map(|_| q),
        Err(fields) => {
            errors.extend(fields);
            None
        }
    };
    if !errors.is_empty() {
        return Err(ServiceError::Invalid(errors));
    }
    store
        .set_gold_settings(batch_id, gold_rate, review_first_below, qualification)
        .await?;
    let detail = serde_json::json!({
        "batch_id": batch_id, "gold_rate": gold_rate, "review_first_below": review_first_below,
        "qualification": qualification,
    });
    super::audit::record(store, lead, "batch.gold", &batch.name, detail).await;
    Ok(())
}
