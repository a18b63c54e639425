//! `GET /api/v1/reports/hours` (JSON or CSV) and `GET /api/v1/reports/flags`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa_axum::routes;
use uuid::Uuid;

use super::{FlagsReport, HoursFormat, HoursQuery, HoursReport};
use crate::auth::RequireLead;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::state::AppState;
use crate::web::ApiQuery;
use crate::web::openapi::ApiRouter;

pub fn router() -> ApiRouter {
    ApiRouter::new()
        .routes(routes!(hours_report))
        .routes(routes!(flags_report))
}

/// Per rater and per day or ISO week (UTC): finished ratings, tasks rated (and of them
/// gold), skips by reason, out of scope, active seconds (the sum of `time_spent_s`) and
/// the median seconds per rated task, from people's finished ratings (drafts never) by
/// the time they were submitted, in the batches you may see (or one of them). `format=csv`
/// is the file a team pays from, one row per rater and period.
#[utoipa::path(get, path = "/api/v1/reports/hours", tag = "reports", params(HoursQuery),
    responses((status = 200, description = "the report: JSON, or CSV with format=csv",
            content((HoursReport = "application/json"), (String = "text/csv"))),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn hours_report(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HoursQuery>,
) -> AppResult<Response> {
    let request = super::parse(&query)?;
    let report = super::hours(state.store(), lead.id, lead.role, &request).await?;
    if request.format == HoursFormat::Json {
        return Ok(Json(report).into_response());
    }
    let body = super::csv(&report)?;
    let filename = format!(
        "hours-by-{}-{}.csv",
        request.by.as_str(),
        chrono::Utc::now().format("%Y%m%d-%H%M%S")
    );
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\""))
        .map_err(AppError::internal)?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response())
}

/// The flags query: the batch, required.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FlagsQuery {
    /// The batch's id.
    #[param(format = Uuid)]
    pub batch: Option<String>,
}

/// A batch's work-quality flags over all its people's finished ratings: raters far
/// faster than the batch's median, straight-lining (from the batch's metrics), and
/// explanations repeated across a rater's own tasks; each with the ratings behind it
/// and their review pages.
#[utoipa::path(get, path = "/api/v1/reports/flags", tag = "reports", params(FlagsQuery),
    responses((status = 200, body = FlagsReport),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn flags_report(
    RequireLead(lead): RequireLead,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<FlagsQuery>,
) -> AppResult<Json<FlagsReport>> {
    let id = parse_batch(query.batch.as_deref())?;
    let summary = crate::batches::visible(&state, id, &lead).await?;
    Ok(Json(super::batch_flags(&state, &summary).await?))
}

/// The batch a flags request names.
fn parse_batch(text: Option<&str>) -> AppResult<Uuid> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Err(AppError::field("batch", "is required: a batch's id")),
        Some(t) => Uuid::parse_str(t)
            .map_err(|_| AppError::field("batch", "must be a batch's id (a UUID)")),
    }
}
