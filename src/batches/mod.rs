//! Batches: uploading tasks, settings, and who may work on them.

use std::collections::HashSet;

use axum::Router;
use serde::{Deserialize, Deserializer, Serialize};
use uuid::Uuid;

use crate::auth::Role;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::import;
use crate::rubric::{Classification, Subject};
use crate::state::AppState;
use crate::store::StoreError;
use crate::store::batches::{Batch, BatchChanges, BatchSummary, Imported, NewBatch, Progress};
use crate::store::users::User;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> Router<AppState> {
    pages::router()
}

pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_OVERLAP: i32 = 100;
pub const MAX_LEASE_MINUTES: i32 = 24 * 60;
pub const MAX_MIN_EXPLANATION: i32 = 1000;

/// A batch as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BatchView {
    pub id: Uuid,
    pub name: String,
    pub rubric: String,
    /// The version of the rubric the batch was created with; its ratings follow it.
    pub rubric_version: i32,
    /// `open` or `closed`.
    pub state: String,
    /// How many distinct raters must rate each task.
    pub overlap: i32,
    /// Show each assignment's A and B in a random order.
    pub randomize: bool,
    /// Minutes an untouched assignment is held before it returns to the pool.
    pub lease_minutes: i32,
    /// Shortest explanation accepted, in characters.
    pub min_explanation_len: i32,
    pub classifications: Vec<Classification>,
    /// Usernames the batch is restricted to; `null` means every rater (leads and admins
    /// only see this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raters: Option<Option<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads: Option<Option<Vec<String>>>,
    pub progress: Progress,
    /// Tasks this caller has completed or skipped.
    pub mine: i64,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// Builds the view of a batch; members are shown to leads and admins only.
pub async fn view(state: &AppState, summary: BatchSummary, viewer: &User) -> AppResult<BatchView> {
    let BatchSummary {
        batch,
        progress,
        mine,
    } = summary;
    let (raters, leads) = if viewer.can_lead() {
        let members = state.store().batch_members(batch.id).await?;
        let of = |role: &str, restricted: bool| {
            restricted.then(|| {
                members
                    .iter()
                    .filter(|(r, _)| r == role)
                    .map(|(_, u)| u.clone())
                    .collect()
            })
        };
        (
            Some(of("rater", batch.raters_restricted)),
            Some(of("lead", batch.leads_restricted)),
        )
    } else {
        (None, None)
    };
    Ok(BatchView {
        id: batch.id,
        name: batch.name,
        rubric: batch.rubric,
        rubric_version: batch.rubric_version,
        state: batch.state,
        overlap: batch.overlap,
        randomize: batch.randomize,
        lease_minutes: batch.lease_minutes,
        min_explanation_len: batch.min_explanation_len,
        classifications: batch.classifications.0,
        raters,
        leads,
        progress,
        mine,
        created_at: batch.created_at,
    })
}

/// The batch, if this user may see it (404 otherwise: its existence is not revealed).
pub async fn visible(state: &AppState, id: Uuid, user: &User) -> AppResult<BatchSummary> {
    state
        .store()
        .visible_batch(id, user.id, user.role)
        .await?
        .ok_or(AppError::NotFound)
}

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
    /// Randomise A/B per assignment in a new batch (default true); for an existing batch,
    /// if given, it must be the batch's.
    pub randomize: Option<bool>,
}

/// An upload's settings, checked.
pub async fn new_batch(
    store: &crate::store::Store,
    params: &UploadParams,
    creator: Option<&User>,
) -> AppResult<NewBatch> {
    let mut fields = FieldErrors::new();
    let name = params.name.as_deref().unwrap_or("").trim().to_owned();
    if let Some(why) = name_violation(&name) {
        fields.insert("name".into(), why);
    }
    let rubric = params.rubric.clone().unwrap_or_else(|| "blackhat".into());
    let latest = store.latest_rubric(&rubric).await?;
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
    if !fields.is_empty() {
        return Err(AppError::invalid(fields));
    }
    Ok(NewBatch {
        name,
        rubric,
        rubric_version: latest.map_or(1, |(v, _)| v),
        subject,
        overlap: params.overlap,
        randomize: match subject {
            Subject::Single => Some(false),
            Subject::Pair => params.randomize,
        },
        created_by: creator.map(|u| u.id),
    })
}

/// How many times an upload is checked again when a concurrent upload changed its batch
/// between the check and the write.
const IMPORT_ATTEMPTS: usize = 5;

/// Imports an uploaded file: checks every record first (nothing is stored if any is
/// bad), then stores the new tasks in one transaction. `progress` hears bytes checked.
pub async fn import(
    state: &AppState,
    new: NewBatch,
    format: import::Format,
    bytes: bytes::Bytes,
    progress: impl FnMut(u64) + Send + Clone + 'static,
) -> AppResult<Imported> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let existing = state.store().batch_by_name(&new.name).await?;
        if let Some(batch) = &existing {
            settings_differ(batch, &new)?;
        }
        let subject = match &existing {
            Some(batch) => state.store().batch_rubric(batch).await?.subject,
            None => new.subject,
        };
        let responses = match subject {
            Subject::Pair => import::Responses::Two,
            Subject::Single => import::Responses::One,
        };
        let hashes = match &existing {
            Some(batch) => state.store().task_hashes(batch.id).await?,
            None => Default::default(),
        };
        let (file, progress) = (bytes.clone(), progress.clone());
        let checked = tokio::task::spawn_blocking(move || {
            import::check(format, &file, responses, &hashes, progress)
        })
        .await
        .map_err(AppError::internal)?;
        if checked.error_count > 0 {
            return Err(AppError::BadRecords {
                count: checked.error_count,
                errors: checked.errors,
            });
        }
        let records = import::records(format, &bytes, responses)
            .map_err(|e| AppError::internal(e.message))?;
        let tasks = records.filter_map(|(_, task)| task.ok());
        let seen = existing.as_ref().map(|b| b.id);
        match state.store().import_tasks(&new, seen, tasks).await {
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
fn settings_differ(batch: &Batch, new: &NewBatch) -> AppResult<()> {
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
    if new.randomize.is_some_and(|r| r != batch.randomize) {
        differs("randomize", batch.randomize.to_string());
    }
    Err(AppError::invalid(fields))
}

/// Settings as a PATCH body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsRequest {
    /// `open` or `closed`.
    #[schema(schema_with = crate::web::openapi::batch_states)]
    pub state: Option<String>,
    #[schema(minimum = 1, maximum = 100)]
    pub overlap: Option<i32>,
    pub randomize: Option<bool>,
    /// Minutes a task stays with its rater without activity (1 to 1440).
    #[schema(minimum = 1, maximum = 1440)]
    pub lease_minutes: Option<i32>,
    #[schema(minimum = 0, maximum = 1000)]
    pub min_explanation_len: Option<i32>,
    pub classifications: Option<Vec<Classification>>,
    /// Usernames who may rate; `null` opens the batch to every rater.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub raters: Option<Option<Vec<String>>>,
    /// Usernames who may lead; `null` lets every lead lead it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub leads: Option<Option<Vec<String>>>,
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Checks a settings change (every broken field reported) and applies it.
/// `actor` is the admin who asked (recorded in the audit log), `None` from the demo.
pub async fn update(
    state: &AppState,
    id: Uuid,
    request: SettingsRequest,
    actor: Option<&User>,
) -> AppResult<Batch> {
    let changed: Vec<&str> = [
        ("state", request.state.is_some()),
        ("overlap", request.overlap.is_some()),
        ("randomize", request.randomize.is_some()),
        ("lease_minutes", request.lease_minutes.is_some()),
        ("min_explanation_len", request.min_explanation_len.is_some()),
        ("classifications", request.classifications.is_some()),
        ("raters", request.raters.is_some()),
        ("leads", request.leads.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect();
    let mut fields = FieldErrors::new();
    if let Some(s) = request.state.as_deref()
        && s != "open"
        && s != "closed"
    {
        fields.insert(
            "state".into(),
            format!("unknown state {s:?}: use open or closed"),
        );
    }
    let ranges = [
        ("overlap", request.overlap, 1, MAX_OVERLAP),
        ("lease_minutes", request.lease_minutes, 1, MAX_LEASE_MINUTES),
        (
            "min_explanation_len",
            request.min_explanation_len,
            0,
            MAX_MIN_EXPLANATION,
        ),
    ];
    for (name, value, min, max) in ranges {
        if let Some(v) = value
            && !(min..=max).contains(&v)
        {
            fields.insert(name.into(), format!("must be from {min} to {max}"));
        }
    }
    if let Some(questions) = &request.classifications {
        check_questions(questions, &mut fields);
    }
    let raters = members(state, "raters", request.raters, Role::Rater, &mut fields).await?;
    let leads = members(state, "leads", request.leads, Role::Lead, &mut fields).await?;
    if !fields.is_empty() {
        return Err(AppError::invalid(fields));
    }
    let changes = BatchChanges {
        state: request.state,
        overlap: request.overlap,
        randomize: request.randomize,
        lease_minutes: request.lease_minutes,
        min_explanation_len: request.min_explanation_len,
        classifications: request.classifications,
        raters,
        leads,
    };
    let batch = state
        .store()
        .update_batch(id, &changes)
        .await?
        .ok_or(AppError::NotFound)?;
    if changes.raters.is_some() {
        // Raters taken off the batch lose the tasks they held; their drafts stay theirs.
        let released = state
            .store()
            .release(crate::store::assignments::Release::NotAllowed { batch: batch.id })
            .await?;
        if !released.is_empty() {
            tracing::info!(batch = %batch.name, count = released.len(), "assignments of removed raters released");
        }
    }
    if let Some(actor) = actor {
        let detail = serde_json::json!({ "changed": changed });
        crate::audit::record(state, actor, "batch.settings", &batch.name, detail).await;
    }
    Ok(batch)
}

fn check_questions(questions: &[Classification], fields: &mut FieldErrors) {
    let mut keys = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let at = format!("classifications[{i}]");
        let key_ok = !q.key.is_empty()
            && q.key.len() <= 64
            && q.key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !key_ok {
            fields.insert(format!("{at}.key"), "must be 1-64 of a-z, 0-9 and _".into());
        } else if !keys.insert(q.key.as_str()) {
            fields.insert(format!("{at}.key"), format!("{:?} is used twice", q.key));
        }
        if q.label.trim().is_empty() {
            fields.insert(format!("{at}.label"), "is required".into());
        }
        let unique: HashSet<&String> = q.options.iter().collect();
        if q.options.is_empty()
            || unique.len() != q.options.len()
            || q.options.iter().any(|o| o.trim().is_empty())
        {
            fields.insert(
                format!("{at}.options"),
                "must be a list of distinct, non-empty options".into(),
            );
        } else if q.options.len() > crate::rubric::MAX_OPTIONS {
            fields.insert(
                format!("{at}.options"),
                format!(
                    "must be at most {} options (each has a key on the form)",
                    crate::rubric::MAX_OPTIONS
                ),
            );
        }
    }
}

/// Resolves a members list of usernames to ids, reporting unknown or unfit users.
async fn members(
    state: &AppState,
    field: &str,
    requested: Option<Option<Vec<String>>>,
    least: Role,
    fields: &mut FieldErrors,
) -> AppResult<Option<Option<Vec<Uuid>>>> {
    let Some(Some(names)) = requested else {
        return Ok(requested.map(|_| None));
    };
    let mut ids = Vec::with_capacity(names.len());
    let mut problems = Vec::new();
    for name in &names {
        match state.store().user_by_name(name).await? {
            // A user named twice is one member.
            Some(user) if user.active && user.role >= least => {
                if !ids.contains(&user.id) {
                    ids.push(user.id);
                }
            }
            Some(user) if user.active => problems.push(format!("{name} is a {}", user.role)),
            Some(_) => problems.push(format!("{name} is deactivated")),
            None => problems.push(format!("no user named {name:?}")),
        }
    }
    if !problems.is_empty() {
        fields.insert(field.into(), problems.join("; "));
    }
    Ok(Some(Some(ids)))
}
