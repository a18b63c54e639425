//! The batch page's export form: its filters as typed, checked field by field before
//! they go on to the export itself.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use super::{RunForm, build};
use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::batches::BatchView;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::export::ExportQuery;
use crate::metrics::Metrics;
use crate::state::AppState;
use crate::web::{ApiPath, ApiQuery, render};

/// The export form as typed: every field text, empty for "any".
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct ExportForm {
    #[serde(default)]
    pub(super) format: String,
    #[serde(default)]
    pub(super) outcome: String,
    #[serde(default)]
    pub(super) status: String,
    #[serde(default)]
    pub(super) rater: String,
    /// Submitted on or after this day (`YYYY-MM-DD`).
    #[serde(default)]
    pub(super) since: String,
    /// Submitted on or before this day.
    #[serde(default)]
    pub(super) until: String,
    /// `true` (the box ticked): only the rows that count in the metrics.
    #[serde(default)]
    pub(super) counted: String,
}

impl ExportForm {
    /// The export's query for these filters, or every field that is wrong. `raters` are
    /// the batch's raters, whom the rater filter picks from. The "to" day is included
    /// whole: the query asks for ratings submitted before the next day.
    fn query(&self, raters: &[String]) -> Result<ExportQuery, FieldErrors> {
        let given = |text: &str| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
        let day = |text: &Option<String>| {
            text.as_deref()
                .and_then(|t| chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok())
        };
        let (since, until) = (given(&self.since), given(&self.until));
        let until_query = match day(&until) {
            Some(d) => d.succ_opt().map(|next| next.to_string()),
            None => until.clone(),
        };
        let query = ExportQuery {
            format: Some(given(&self.format).unwrap_or_else(|| "csv".into())),
            outcome: given(&self.outcome),
            status: given(&self.status),
            rater: given(&self.rater),
            since: since.clone(),
            until: until_query,
            aggregate: None,
            counted: (self.counted == "true").then_some(true),
            final_set: None,
        };
        let mut fields = match crate::export::parse(&query) {
            Ok(_) => FieldErrors::new(),
            Err(AppError::Validation { fields, .. }) => fields,
            Err(other) => FieldErrors::from([("export".to_owned(), other.to_string())]),
        };
        // A day is what the form asks for; the API's RFC 3339 times are not offered here.
        for (field, text) in [("since", &since), ("until", &until)] {
            if text.is_some() && day(text).is_none() {
                fields.insert(field.into(), "must be a date like 2026-11-21".into());
            }
        }
        if let (Some(from), Some(to)) = (day(&since), day(&until))
            && to < from
        {
            fields.insert("until".into(), "must be on or after the from date".into());
        }
        if let Some(rater) = &query.rater
            && !raters.contains(rater)
        {
            fields.insert(
                "rater".into(),
                format!("{rater:?} is not one of this batch's raters"),
            );
        }
        if fields.is_empty() {
            Ok(query)
        } else {
            Err(fields)
        }
    }
}

/// An export form field's name in words.
pub(super) fn export_label(field: &str) -> &'static str {
    match field {
        "format" => "Format",
        "outcome" => "Outcome",
        "status" => "Status",
        "rater" => "Rater",
        "since" => "Submitted from",
        "until" => "Submitted to",
        _ => "Export",
    }
}

/// The raters an export may be filtered on: whoever rated the batch, and its members.
pub(super) fn batch_raters(batch: &BatchView, metrics: &Metrics) -> Vec<String> {
    let mut names: Vec<String> = metrics.raters.iter().map(|r| r.rater.clone()).collect();
    if let Some(Some(members)) = &batch.raters {
        names.extend(members.iter().cloned());
    }
    names.sort();
    names.dedup();
    names
}

/// `GET /batches/{id}/export`: the batch page's export form. Good filters go on to the
/// export itself (`303` to `GET /api/v1/batches/{id}/export` with them); bad ones show
/// the page again with each wrong field named.
pub(super) async fn export(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(form): ApiQuery<ExportForm>,
) -> AppResult<Response> {
    let summary = crate::batches::visible(&state, id, &lead).await?;
    let batch = crate::batches::view(&state, summary, &lead).await?;
    let mut raters: Vec<String> = state.store().batch_raters(id).await?;
    if let Some(Some(members)) = &batch.raters {
        raters.extend(members.iter().cloned());
    }
    match form.query(&raters) {
        Ok(query) => {
            let encoded = serde_urlencoded::to_string(&query).map_err(AppError::internal)?;
            let to = format!("/api/v1/batches/{id}/export?{encoded}");
            Ok(axum::response::Redirect::to(&to).into_response())
        }
        Err(errors) => {
            let page = build(
                &state,
                &lead,
                page_user.layout,
                id,
                form,
                errors,
                RunForm::default(),
            )
            .await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(since: &str, until: &str, rater: &str) -> ExportForm {
        ExportForm {
            since: since.into(),
            until: until.into(),
            rater: rater.into(),
            ..ExportForm::default()
        }
    }

    #[test]
    fn the_to_day_is_included_and_empty_filters_are_left_out() {
        let raters = ["ana".to_owned()];
        let query = form("2026-11-01", "2026-11-30", "ana")
            .query(&raters)
            .unwrap();
        assert_eq!(
            (query.since.as_deref(), query.until.as_deref()),
            (Some("2026-11-01"), Some("2026-12-01"))
        );
        assert_eq!(query.format.as_deref(), Some("csv"));
        let any = form(" ", "", "").query(&raters).unwrap();
        assert_eq!(
            serde_urlencoded::to_string(&any).unwrap(),
            "format=csv",
            "nothing but the format"
        );
    }

    #[test]
    fn every_bad_filter_is_named() {
        let bad = ExportForm {
            format: "xml".into(),
            outcome: "maybe".into(),
            status: "draft".into(),
            ..form("2026-11-30", "2026-11-01", "ghost")
        };
        let fields = bad.query(&["ana".to_owned()]).unwrap_err();
        assert_eq!(
            fields.keys().collect::<Vec<_>>(),
            ["format", "outcome", "rater", "status", "until"]
        );
        let times = form("2026-11-01T10:00:00Z", "2026-02-30", "")
            .query(&[])
            .unwrap_err();
        assert_eq!(times["since"], "must be a date like 2026-11-21");
        assert_eq!(times["until"], "must be a date like 2026-11-21");
    }
}
