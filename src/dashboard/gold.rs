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
    /// Gold tasks a qualification try asks; empty: no qualification.
    #[serde(default)]
    pub(super) qualify_tasks: String,
    #[serde(default)]
    pub(super) qualify_pass_percent: String,
    #[serde(default)]
    pub(super) qualify_tries: String,
    /// A ticked box: present when ticked.
    pub(super) qualify_reveal: Option<String>,
}

impl GoldForm {
    pub(super) fn of(
        gold: &crate::metrics::gold::GoldMetrics,
        qualification: Option<&verdict_core::qualification::Qualification>,
    ) -> Self {
        let percent = |share: f64| format!("{}", (share * 1000.0).round() / 10.0);
        GoldForm {
            gold_percent: percent(gold.rate),
            review_first_percent: gold.review_first_below.map(percent).unwrap_or_default(),
            qualify_tasks: qualification
                .map(|q| q.tasks.to_string())
                .unwrap_or_default(),
            qualify_pass_percent: percent(qualification.map_or(0.8, |q| q.pass_mark)),
            qualify_tries: qualification.map_or(1, |q| q.tries).to_string(),
            qualify_reveal: qualification.filter(|q| q.reveal).map(|_| "on".into()),
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
        let pass = read("qualify_pass_percent", &self.qualify_pass_percent);
        let mut whole = |field: &str, text: &str| {
            let text = text.trim();
            if text.is_empty() {
                return None;
            }
            let n = text.parse::<i32>().ok();
            if n.is_none() {
                errors.insert(field.into(), "must be a whole number".into());
            }
            n
        };
        let tasks = whole("qualify_tasks", &self.qualify_tasks);
        let tries = whole("qualify_tries", &self.qualify_tries);
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
                qualify_tasks: Some(tasks),
                qualify_pass: pass,
                qualify_tries: tries,
                qualify_reveal: Some(self.qualify_reveal.is_some()),
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
                    let field = match k.as_str() {
                        "gold_rate" => "gold_percent",
                        "qualify_pass" => "qualify_pass_percent",
                        "review_first_below" => "review_first_percent",
                        other => other,
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
