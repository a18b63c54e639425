//! `GET /api/v1/batches/{id}/export`: a streamed download.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use uuid::Uuid;

use super::{ExportQuery, parse};
use crate::auth::RequireLead;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::web::{ApiPath, ApiQuery};
use utoipa_axum::routes;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(export))
        .routes(routes!(judge_export))
}

/// Chunks the export may run ahead of the client: this bounds its memory.
const CHUNKS_IN_FLIGHT: usize = 8;

/// A file name safe in a header: letters, digits, `-` and `_`.
fn slug(name: &str) -> String {
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let slug = slug.trim_matches('-').to_owned();
    if slug.is_empty() {
        "batch".into()
    } else {
        slug
    }
}

/// Every non-draft rating of the batch, one per row, answers in canonical orientation,
/// with `counts_in_metrics`. Streamed: memory stays flat however large the batch. With
/// `aggregate`, instead one row per task and question (`external_id`, `question`,
/// `answer`, `confidence`, `method`, `raters`): the answer majority vote or Dawid-Skene
/// gives from the ratings the metrics count.
#[utoipa::path(get, path = "/api/v1/batches/{id}/export", tag = "export", params(("id" = Uuid, Path, description = "batch id"), ExportQuery),
    responses((status = 200, description = "CSV (format=csv) or JSON Lines (format=jsonl)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn export(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> AppResult<Response> {
    let batch = crate::batches::visible_settings(&state, id, &lead).await?;
    let rubric = state.store().batch_rubric(&batch).await?;
    if query.final_set == Some(true) {
        return final_set(&state, &lead, &batch, &rubric, &query).await;
    }
    if query.final_set == Some(false) {
        let fields = crate::error::FieldErrors::from([(
            "final".to_owned(),
            "is true for the final dataset, or left out".to_owned(),
        )]);
        return Err(AppError::invalid(fields));
    }
    if let Some(aggregate) = &query.aggregate {
        return aggregated(&state, &lead, &batch, &rubric, &query, aggregate).await;
    }
    let (format, filter) = parse(&query)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let (finished, outcome) = tokio::sync::oneshot::channel::<Result<(), String>>();
    let writer_state = state.clone();
    tokio::spawn(async move {
        // Held until the last row is written (or the client goes away).
        let _turn = writer_state.heavy_reads().turn().await;
        let export = super::Export {
            batch_id: id,
            rubric,
            rubric_version: batch.rubric_version,
            format,
            filter: &filter,
        };
        let fault_after = writer_state.config().export_fault_after_rows;
        let written = super::write(writer_state.store(), export, fault_after, tx).await;
        if let Err(err) = &written {
            tracing::error!(%err, batch = %id, "export failed part way");
        }
        let _ = finished.send(written.map(|_| ()).map_err(|e| e.to_string()));
    });
    let stream = body_of(rx, outcome);
    tracing::info!(lead = %lead.username, batch = %batch.name, "export started");
    let mut detail = serde_json::to_value(&query).map_err(AppError::internal)?;
    detail["batch_id"] = serde_json::json!(id);
    crate::services::audit::record(state.store(), &lead, "batch.export", &batch.name, detail).await;
    let filename = format!(
        "{}-ratings-{}.{}",
        slug(&batch.name),
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        format.extension()
    );
    download(&filename, format, stream)
}

/// The aggregated export (`aggregate=majority|dawid_skene`): read whole under a heavy
/// read's turn, then sent.
async fn aggregated(
    state: &AppState,
    lead: &verdict_core::user::User,
    batch: &verdict_core::batch::Batch,
    rubric: &verdict_core::rubric::Rubric,
    query: &ExportQuery,
    aggregate: &str,
) -> AppResult<Response> {
    let (format, method) = super::aggregate::parse(query, aggregate)?;
    let turn = state.heavy_reads().turn().await;
    let gathered = super::aggregate::gather(state.store(), batch.id, rubric).await?;
    let body =
        tokio::task::spawn_blocking(move || super::aggregate::render(&gathered, method, format))
            .await
            .map_err(AppError::internal)??;
    drop(turn);
    tracing::info!(lead = %lead.username, batch = %batch.name, method = method.as_str(), "aggregated export");
    let mut detail = serde_json::to_value(query).map_err(AppError::internal)?;
    detail["batch_id"] = serde_json::json!(batch.id);
    crate::services::audit::record(state.store(), lead, "batch.export", &batch.name, detail).await;
    let filename = format!(
        "{}-{}-{}.{}",
        slug(&batch.name),
        method.as_str(),
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        format.extension()
    );
    let stream = futures_util::stream::once(async move { Ok(bytes::Bytes::from(body)) });
    download(&filename, format, stream)
}

/// The final dataset (`final=true`): read whole under a heavy read's turn, then sent.
async fn final_set(
    state: &AppState,
    lead: &verdict_core::user::User,
    batch: &verdict_core::batch::Batch,
    rubric: &verdict_core::rubric::Rubric,
    query: &ExportQuery,
) -> AppResult<Response> {
    let format = super::final_set::parse(query)?;
    let turn = state.heavy_reads().turn().await;
    let body = super::final_set::build(state.store(), batch, rubric, format).await?;
    drop(turn);
    tracing::info!(lead = %lead.username, batch = %batch.name, "final dataset exported");
    let mut detail = serde_json::to_value(query).map_err(AppError::internal)?;
    detail["batch_id"] = serde_json::json!(batch.id);
    crate::services::audit::record(state.store(), lead, "batch.export", &batch.name, detail).await;
    let filename = format!(
        "{}-final-{}.{}",
        slug(&batch.name),
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        format.extension()
    );
    let stream = futures_util::stream::once(async move { Ok(bytes::Bytes::from(body)) });
    download(&filename, format, stream)
}

/// The body of a streamed export: the chunks the writer sends, then its outcome. A
/// failure ends the body with an error, so the connection is cut before the body's proper
/// end and the client sees the download fail, not a shorter file that looks complete.
/// Fused: the compression layer polls the body again after its end, and an unfused
/// `unfold` panics on that.
fn body_of(
    rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
    outcome: tokio::sync::oneshot::Receiver<Result<(), String>>,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static {
    futures_util::stream::unfold((rx, Some(outcome)), |(mut rx, outcome)| async move {
        if let Some(chunk) = rx.recv().await {
            return Some((Ok(bytes::Bytes::from(chunk)), (rx, outcome)));
        }
        let failed = match outcome?.await {
            Ok(Ok(())) => return None,
            Ok(Err(why)) => why,
            Err(_) => "the export stopped".to_owned(),
        };
        Some((Err(std::io::Error::other(failed)), (rx, None)))
    })
    .fuse()
}

/// A download of `stream` named `filename`, never cached.
fn download(
    filename: &str,
    format: super::Format,
    stream: impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
) -> AppResult<Response> {
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\""))
        .map_err(AppError::internal)?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(format.content_type()),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The judge export's query.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct JudgeExportQuery {
    /// `csv` (default) or `jsonl`.
    #[param(schema_with = crate::web::openapi::export_formats)]
    pub format: Option<String>,
}

/// Every answer of a judge run's calls, per question and per order (A first, B first),
/// with its parse status, and per task what the orders combine into (`combined`), each row
/// naming the run, with the lengths of the task's responses (admin, or a lead of the
/// run's batch). With the batch's export, every judge figure of the batch's metrics can be
/// worked out from the two. Streamed.
#[utoipa::path(get, path = "/api/v1/judge-runs/{id}/export", tag = "export",
    params(("id" = Uuid, Path, description = "run id"), JudgeExportQuery),
    responses((status = 200, description = "CSV (format=csv) or JSON Lines (format=jsonl)",
            content((String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn judge_export(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<JudgeExportQuery>,
) -> AppResult<Response> {
    let store = state.store();
    let run = store.run(id).await?.ok_or(AppError::NotFound)?;
    let batch = crate::batches::visible_settings(&state, run.batch_id, &lead).await?;
    let mut fields = crate::error::FieldErrors::new();
    let format = super::format_of(query.format.as_deref(), &mut fields)
        .ok_or_else(|| AppError::invalid(fields))?;
    let judge = store
        .judge(run.judge_id)
        .await?
        .map_or_else(String::new, |j| j.name);
    let plan = run.plan.0;
    let rubric = store
        .rubric(&plan.rubric, plan.rubric_version)
        .await?
        .ok_or_else(|| AppError::internal(format!("rubric {} is gone", plan.rubric)))?;
    let export = super::judge::JudgeExport {
        run_id: run.id,
        judge: judge.clone(),
        batch: batch.name.clone(),
        rubric,
        min_explanation: plan.min_explanation,
        format,
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let (finished, outcome) = tokio::sync::oneshot::channel::<Result<(), String>>();
    let writer_state = state.clone();
    tokio::spawn(async move {
        let _turn = writer_state.heavy_reads().turn().await;
        let written = super::judge::write(writer_state.store(), export, tx).await;
        if let Err(err) = &written {
            tracing::error!(%err, run = %id, "judge export failed part way");
        }
        let _ = finished.send(written.map(|_| ()).map_err(|e| e.to_string()));
    });
    crate::services::audit::record(
        store,
        &lead,
        "judge_run.export",
        &batch.name,
        serde_json::json!({"run": id, "judge": judge, "format": format.extension()}),
    )
    .await;
    let filename = format!(
        "{}-judge-{}-{}.{}",
        slug(&batch.name),
        slug(&judge),
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        format.extension()
    );
    download(&filename, format, body_of(rx, outcome))
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn file_names_are_header_safe() {
        assert_eq!(slug("Demo: coding answers"), "demo--coding-answers");
        assert_eq!(slug("\"; rm -rf /\r\n"), "rm--rf");
        assert_eq!(slug("日本"), "batch");
    }
}
