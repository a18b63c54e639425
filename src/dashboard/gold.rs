//! The batch page's gold settings form: how often gold tasks are mixed in, and the
//! accuracy below which a rater's ratings go to review first.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use super::export::ExportForm;
use super::{RunForm, build};
use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::state::AppState;
use crate::web::{ApiPath, render};

/// The batch page's gold settings, in percent: how often a gold task is mixed in, and
/// the accuracy below which a rater's new ratings go to review first (empty: never).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub(super) struct GoldForm {
    #[serde(default)]
    pub(super) gold_percent: String,
    #[serde(default)]
    pub(super) review_first_percent: String,
}

impl GoldForm {
    pub(super) fn of(gold: &crate::metrics::gold::GoldMetrics) -> Self {
        let percent = |share: f64| format!("{}", (share * 1000.0).round() / 10.0);
        GoldForm {
            gold_percent: percent(gold.rate),
            review_first_percent: gold.review_first_below.map(percent).unwrap_or_default(),
        }
    }

    /// The settings it asks for, or what is wrong with it by field.
    fn request(&self) -> Result<crate::batches::gold::GoldRequest, FieldErrors> {
        let mut errors = FieldErrors::new();
        let mut read = |field: &str, text: &str| {
            let text = text.trim().trim_end_matches('%').trim();
            if text.is_empty() {
                return None;
            }
            match text.parse::<f64>() {
                Ok(n) if n.is_finite() && (0.0..=100.0).contains(&n) => Some(n / 100.0),
                _ => {
                    errors.insert(field.into(), "must be a percentage from 0 to 100".into());
                    None
                }
            }
        };
        let rate = read("gold_percent", &self.gold_percent).unwrap_or(0.0);
        let below = read("review_first_percent", &self.review_first_percent);
        if below == Some(0.0) {
            errors.insert(
                "review_first_percent".into(),
                "must be above 0; leave it empty to never hold ratings".into(),
            );
        }
        if errors.is_empty() {
            Ok(crate::batches::gold::GoldRequest {
                gold_rate: Some(rate),
                review_first_below: Some(below),
            })
        } else {
            Err(errors)
        }
    }
}

/// `POST /batches/{id}/gold`: the batch page's gold settings form (a lead of the batch).
pub(super) async fn save_gold(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    crate::auth::csrf::CsrfForm(form): crate::auth::csrf::CsrfForm<GoldForm>,
) -> AppResult<Response> {
    let errors = match form.request() {
        Ok(request) => match crate::batches::gold::set(&state, id, &lead, &request).await {
            Ok(_) => {
                let to = format!("/batches/{id}#gold");
                return Ok(axum::response::Redirect::to(&to).into_response());
            }
            // The form's own checks keep its values in range; named on its fields all
            // the same should the service refuse one.
            Err(AppError::Validation { fields, .. }) => fields
                .into_iter()
                .map(|(k, v)| {
                    let field = if k == "gold_rate" {
                        "gold_percent"
                    } else {
                        "review_first_percent"
                    };
                    (field.to_owned(), v)
                })
                .collect(),
            Err(other) => return Err(other),
        },
        Err(errors) => errors,
    };
    let export = ExportForm {
        format: "csv".into(),
        ..ExportForm::default()
    };
    let mut page = build(
        &state,
        &lead,
        page_user.layout,
        id,
        export,
        FieldErrors::new(),
        RunForm::default(),
    )
    .await?;
    page.gold_form = form;
    page.gold_errors = errors;
    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
}
