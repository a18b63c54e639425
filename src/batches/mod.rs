//! Batches: uploading tasks, settings, and who may work on them.

use axum::Router;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{AppError, AppResult, FieldErrors};
use crate::state::AppState;
use crate::store::Store;
use crate::store::StoreError;
use crate::store::batches::{BatchSummary, Imported, Progress};
use verdict_core::batch::{Batch, NewBatch};
use verdict_core::import;
use verdict_core::lifecycle::BatchState;
use verdict_core::rubric::{Classification, Subject};
use verdict_core::user::User;

pub mod api;
pub mod gold;
pub mod pages;
pub mod settings;

pub use settings::{SettingsRequest, preview, update};

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
    pub state: BatchState,
    /// How many distinct raters must rate each task.
    pub overlap: i32,
    /// Show each assignment's A and B in a random order.
    pub randomize: bool,
    /// Raters see each task's external id; otherwise each task is named to its rater by
    /// its number among theirs (`Task 17`). Leads and admins always see them.
    pub raters_see_external_ids: bool,
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
        raters_see_external_ids: batch.raters_see_external_ids,
        lease_minutes: batch.lease_minutes,
        min_explanation_len: batch.min_explanation_len,
        classifications: batch.classifications,
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
    /// Whether raters of a new batch see each task's external id (default false: each
    /// task is named to its rater by its number among theirs, `Task 17`); for an
    /// existing batch, if given, it must be the batch's.
    pub raters_see_external_ids: Option<bool>,
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
        raters_see_external_ids: params.raters_see_external_ids,
        created_by: creator.map(|u| u.id),
    })
}

/// How many times an upload is checked again when a concurrent upload changed its batch
/// between the check and the write.
const IMPORT_ATTEMPTS: usize = 5;

/// Imports an uploaded file: checks every record first (nothing is stored if any is
/// bad), then stores the new tasks in one transaction. `progress` hears bytes checked.
pub async fn import(
    store: &Store,
    new: NewBatch,
    format: import::Format,
    bytes: bytes::Bytes,
    progress: impl FnMut(u64) + Send + Clone + 'static,
    by: Option<crate::services::audit::Actor<'_>>,
) -> AppResult<Imported> {
    let entry = by.map(|actor| {
        let (actor_id, actor_name) = actor.ids();
        crate::store::batches::UploadEntry {
            actor_id,
            actor_name,
            bytes: bytes.len(),
        }
    });
    let mut attempt = 0;
    loop {
        attempt += 1;
        let existing = store.batch_by_name(&new.name).await?;
        if let Some(batch) = &existing {
            settings_differ(batch, &new)?;
        }
        let rubric = match &existing {
            Some(batch) => store.batch_rubric(batch).await?,
            None => store
                .rubric(&new.rubric, new.rubric_version)
                .await?
                .ok_or_else(|| AppError::field("rubric", format!("no rubric {:?}", new.rubric)))?,
        };
        let responses = match rubric.subject {
            Subject::Pair => import::Responses::Two,
            Subject::Single => import::Responses::One,
        };
        let hashes = match &existing {
            Some(batch) => store.task_hashes(batch.id).await?,
            None => Default::default(),
        };
        let (file, progress) = (bytes.clone(), progress.clone());
        let checked = tokio::task::spawn_blocking(move || {
            let gold =
                |expected: &serde_json::Value| verdict_core::gold::check_task(&rubric, expected);
            import::check(format, &file, responses, gold, &hashes, progress)
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
        match store.import_tasks(&new, seen, tasks, entry.as_ref()).await {
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
    if new
        .raters_see_external_ids
        .is_some_and(|r| r != batch.raters_see_external_ids)
    {
        differs(
            "raters_see_external_ids",
            batch.raters_see_external_ids.to_string(),
        );
    }
    Err(AppError::invalid(fields))
}
