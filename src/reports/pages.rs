//! The leads' hours page: the hours report's filters as a form, its table, a link to
//! download it as CSV, and, for a picked batch, its flags with links to the ratings.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{FlagsReport, HoursQuery, HoursReport};
use crate::auth::{PageUser, RequireLead};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::web::{ApiQuery, Layout, render};
use verdict_core::report::hours::Period;

pub fn router() -> Router<AppState> {
    Router::new().route("/reports/hours", get(hours_page))
}

/// An option of a `<select>`: value, label, whether it is the one picked.
type Pick = (String, String, bool);

/// One row of the table, as shown.
struct Line {
    rater: String,
    period: String,
    ratings: u64,
    rated: u64,
    gold: u64,
    skipped: String,
    out_of_scope: u64,
    active: String,
    median: String,
}

#[derive(Template)]
#[template(path = "reports/hours.html")]
struct HoursPage {
    layout: Layout,
    batches: Vec<Pick>,
    from: String,
    to: String,
    periods: Vec<Pick>,
    lines: Vec<Line>,
    /// The same report as CSV, for the download link.
    csv_href: String,
    flags: Option<FlagsReport>,
    error: Option<String>,
}

/// `h:mm:ss` of a number of seconds.
fn clock(seconds: u64) -> String {
    format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

fn lines(report: &HoursReport) -> Vec<Line> {
    report
        .rows
        .iter()
        .map(|row| Line {
            rater: row.rater.clone(),
            period: row.period.clone(),
            ratings: row.ratings,
            rated: row.rated,
            gold: row.gold,
            skipped: if row.skip_reasons.is_empty() {
                row.skipped.to_string()
            } else {
                let reasons: Vec<String> = row
                    .skip_reasons
                    .iter()
                    .map(|(reason, n)| format!("{reason} {n}"))
                    .collect();
                format!("{} ({})", row.skipped, reasons.join(", "))
            },
            out_of_scope: row.out_of_scope,
            active: clock(row.active_s),
            median: row
                .median_s
                .map_or_else(|| "–".to_owned(), |m| format!("{m:.0} s")),
        })
        .collect()
}

async fn hours_page(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HoursQuery>,
) -> AppResult<Response> {
    let text = |v: &Option<String>| v.as_deref().map(str::trim).unwrap_or("").to_owned();
    let picked_batch = text(&query.batch);
    let visible = state.store().visible_batches(lead.id, lead.role).await?;
    let batches = visible
        .iter()
        .map(|b| {
            let id = b.batch.id.to_string();
            let chosen = id == picked_batch;
            (id, b.batch.name.clone(), chosen)
        })
        .collect();
    let picked_by = text(&query.by);
    let periods = [Period::Day, Period::Week]
        .map(|p| {
            let chosen = p.as_str() == picked_by || (picked_by.is_empty() && p == Period::Day);
            (p.as_str().to_owned(), p.as_str().to_owned(), chosen)
        })
        .to_vec();
    let csv_query = HoursQuery {
        format: Some("csv".into()),
        ..query.clone()
    };
    let csv_href = format!(
        "/api/v1/reports/hours?{}",
        serde_urlencoded::to_string(&csv_query).map_err(AppError::internal)?
    );
    let mut page = HoursPage {
        layout: page_user.layout,
        batches,
        from: text(&query.from),
        to: text(&query.to),
        periods,
        lines: Vec::new(),
        csv_href,
        flags: None,
        error: None,
    };
    let parsed = super::parse(&HoursQuery {
        format: None,
        ..query
    });
    let request = match parsed {
        Ok(request) => request,
        Err(AppError::Validation { fields, .. }) => {
            let why: Vec<String> = fields.iter().map(|(f, why)| format!("{f} {why}")).collect();
            page.error = Some(why.join("; "));
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response());
        }
        Err(other) => return Err(other),
    };
    let report = super::hours(state.store(), lead.id, lead.role, &request).await?;
    page.lines = lines(&report);
    if let Some(summary) = request
        .batch
        .and_then(|id| visible.iter().find(|b| b.batch.id == id))
    {
        page.flags = Some(super::batch_flags(&state, summary).await?);
    }
    Ok(render(&page)?.into_response())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_clock_reads_hours_minutes_seconds() {
        assert_eq!(super::clock(0), "0:00:00");
        assert_eq!(super::clock(3725), "1:02:05");
        assert_eq!(super::clock(36_000), "10:00:00");
    }
}
