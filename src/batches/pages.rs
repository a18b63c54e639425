//! The admin's batch pages: the list with the upload form, and each batch's settings.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use uuid::Uuid;

use super::{BatchView, SettingsRequest, view, visible};
use crate::auth::RequireAdmin;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::rubric::Classification;
use crate::state::AppState;
use crate::web::{ApiPath, Layout, PageUser, render};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/batches", get(list))
        .route("/admin/batches/{id}", get(settings).post(save))
}

#[derive(Template)]
#[template(path = "batches/admin_list.html")]
struct ListPage {
    layout: Layout,
    batches: Vec<BatchView>,
    rubrics: Vec<String>,
    max_upload_mb: u64,
}

async fn list(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
) -> AppResult<Response> {
    let mut batches = Vec::new();
    for summary in state
        .store()
        .visible_batches(page_user.user.id, page_user.user.role)
        .await?
    {
        batches.push(view(&state, summary, &page_user.user).await?);
    }
    let page = ListPage {
        layout: page_user.layout,
        batches,
        rubrics: state.store().rubric_names().await?,
        max_upload_mb: state.config().max_upload_bytes / (1024 * 1024),
    };
    Ok(render(&page)?.into_response())
}

#[derive(Template)]
#[template(path = "batches/admin_settings.html")]
struct SettingsPage {
    layout: Layout,
    batch: BatchView,
    form: SettingsForm,
    errors: FieldErrors,
}

/// The settings form, as text fields.
#[derive(Debug, Default, Deserialize)]
struct SettingsForm {
    #[serde(default)]
    state: String,
    #[serde(default)]
    overlap: String,
    randomize: Option<String>,
    #[serde(default)]
    lease_minutes: String,
    #[serde(default)]
    min_explanation_len: String,
    /// One username a line; empty for everyone.
    #[serde(default)]
    raters: String,
    #[serde(default)]
    leads: String,
    /// The questions as JSON.
    #[serde(default)]
    classifications: String,
}

impl SettingsForm {
    fn of(batch: &BatchView) -> Self {
        let names = |m: &Option<Option<Vec<String>>>| {
            m.clone()
                .flatten()
                .map(|v| v.join("\n"))
                .unwrap_or_default()
        };
        Self {
            state: batch.state.clone(),
            overlap: batch.overlap.to_string(),
            randomize: batch.randomize.then(|| "on".into()),
            lease_minutes: batch.lease_minutes.to_string(),
            min_explanation_len: batch.min_explanation_len.to_string(),
            raters: names(&batch.raters),
            leads: names(&batch.leads),
            classifications: serde_json::to_string_pretty(&batch.classifications)
                .unwrap_or_default(),
        }
    }

    /// The form as a settings change, or the fields that are not even numbers or JSON.
    fn request(&self) -> Result<SettingsRequest, FieldErrors> {
        let mut fields = FieldErrors::new();
        let mut number = |name: &str, text: &str| match text.trim().parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => {
                fields.insert(name.into(), "must be a whole number".into());
                None
            }
        };
        let overlap = number("overlap", &self.overlap);
        let lease_minutes = number("lease_minutes", &self.lease_minutes);
        let min_explanation_len = number("min_explanation_len", &self.min_explanation_len);
        let classifications = if self.classifications.trim().is_empty() {
            Some(vec![])
        } else {
            match serde_json::from_str::<Vec<Classification>>(&self.classifications) {
                Ok(questions) => Some(questions),
                Err(e) => {
                    fields.insert(
                        "classifications".into(),
                        format!("is not a list of questions: {e}"),
                    );
                    None
                }
            }
        };
        let names = |text: &str| {
            let list: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect();
            Some(if list.is_empty() { None } else { Some(list) })
        };
        if !fields.is_empty() {
            return Err(fields);
        }
        Ok(SettingsRequest {
            state: Some(self.state.clone()),
            overlap,
            randomize: Some(self.randomize.is_some()),
            lease_minutes,
            min_explanation_len,
            classifications,
            raters: names(&self.raters),
            leads: names(&self.leads),
        })
    }
}

async fn settings(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let batch = view(
        &state,
        visible(&state, id, &page_user.user).await?,
        &page_user.user,
    )
    .await?;
    let form = SettingsForm::of(&batch);
    Ok(render(&SettingsPage {
        layout: page_user.layout,
        batch,
        form,
        errors: FieldErrors::new(),
    })?
    .into_response())
}

async fn save(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<SettingsForm>,
) -> AppResult<Response> {
    let result = match form.request() {
        Ok(request) => super::update(&state, id, request, Some(&page_user.user))
            .await
            .map(|_| ()),
        Err(fields) => Err(AppError::invalid(fields)),
    };
    match result {
        Ok(()) => Ok(Redirect::to(&format!("/admin/batches/{id}")).into_response()),
        Err(AppError::Validation { fields, .. }) => {
            let batch = view(
                &state,
                visible(&state, id, &page_user.user).await?,
                &page_user.user,
            )
            .await?;
            let page = SettingsPage {
                layout: page_user.layout,
                batch,
                form,
                errors: fields,
            };
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(other) => Err(other),
    }
}
