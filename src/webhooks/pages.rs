//! `/webhooks`: the subscriptions a lead or admin manages, a form to add one (its
//! secret shown once, on the page that answers the form), and each one's deliveries
//! with every attempt and a button to send one again.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use super::WebhookView;
use crate::auth::csrf::CsrfForm;
use crate::auth::{PageUser, RequireLead};
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::page::ListKind;
use crate::store::webhooks::Delivery;
use crate::web::{ApiPath, ApiQuery, Layout, render};
use verdict_core::webhook::EventKind;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/webhooks", get(list_page).post(create))
        .route("/webhooks/{id}", get(deliveries_page))
        .route("/webhooks/{id}/delete", post(delete))
        .route(
            "/webhooks/{id}/deliveries/{event_id}/redeliver",
            post(redeliver),
        )
}

/// A subscription as listed: where, what, and of which batch.
struct Listed {
    view: WebhookView,
    batch: String,
}

/// An event's checkbox: its name, what it means, whether it is ticked.
type EventBox = (&'static str, &'static str, bool);

#[derive(Template)]
#[template(path = "webhooks/list.html")]
struct ListPage {
    layout: Layout,
    webhooks: Vec<Listed>,
    /// Batches the viewer may subscribe to: id, name, picked.
    batches: Vec<(String, String, bool)>,
    admin: bool,
    events: Vec<EventBox>,
    url: String,
    /// The new subscription's secret, on the page that answers the form only.
    created: Option<(Uuid, String)>,
    errors: Vec<(String, String)>,
}

/// The form's fields as typed.
#[derive(Debug, Default, Deserialize)]
struct WebhookForm {
    #[serde(default)]
    url: String,
    /// A batch's id, or empty for every batch.
    #[serde(default)]
    batch: String,
    #[serde(rename = "batch.completed")]
    batch_completed: Option<String>,
    #[serde(rename = "batch.reopened")]
    batch_reopened: Option<String>,
    #[serde(rename = "batch.stalled")]
    batch_stalled: Option<String>,
    #[serde(rename = "rating.submitted")]
    rating_submitted: Option<String>,
    #[serde(rename = "rating.revised")]
    rating_revised: Option<String>,
    #[serde(rename = "rating.reviewed")]
    rating_reviewed: Option<String>,
    #[serde(rename = "judge_run.finished")]
    judge_run_finished: Option<String>,
    #[serde(rename = "task.escalated")]
    task_escalated: Option<String>,
}

impl WebhookForm {
    /// The events ticked.
    fn events(&self) -> Vec<EventKind> {
        [
            (EventKind::BatchCompleted, &self.batch_completed),
            (EventKind::BatchReopened, &self.batch_reopened),
            (EventKind::BatchStalled, &self.batch_stalled),
            (EventKind::RatingSubmitted, &self.rating_submitted),
            (EventKind::RatingRevised, &self.rating_revised),
            (EventKind::RatingReviewed, &self.rating_reviewed),
            (EventKind::JudgeRunFinished, &self.judge_run_finished),
            (EventKind::TaskEscalated, &self.task_escalated),
        ]
        .into_iter()
        .filter(|(_, ticked)| ticked.is_some())
        .map(|(kind, _)| kind)
        .collect()
    }
}

async fn list(
    state: &AppState,
    page_user: PageUser,
    form: &WebhookForm,
    created: Option<(Uuid, String)>,
    errors: Vec<(String, String)>,
) -> AppResult<ListPage> {
    let user = &page_user.user;
    let mut batches = Vec::new();
    for summary in state.store().visible_batches(user.id, user.role).await? {
        if crate::access::can_review(state.store(), summary.batch.id, user).await? {
            let id = summary.batch.id.to_string();
            let picked = id == form.batch;
            batches.push((id, summary.batch.name, picked));
        }
    }
    let name_of = |id: Option<Uuid>| match id {
        None => "every batch".to_owned(),
        Some(id) => batches
            .iter()
            .find(|(b, _, _)| *b == id.to_string())
            .map_or_else(|| id.to_string(), |(_, name, _)| name.clone()),
    };
    let webhooks = super::visible(state, user)
        .await?
        .into_iter()
        .map(|w| Listed {
            batch: name_of(w.batch_id),
            view: w.into(),
        })
        .collect();
    let ticked = form.events();
    Ok(ListPage {
        admin: user.can_administer(),
        webhooks,
        batches,
        events: EventKind::ALL
            .iter()
            .map(|kind| (kind.as_str(), kind.describe(), ticked.contains(kind)))
            .collect(),
        url: form.url.clone(),
        created,
        errors,
        layout: page_user.layout,
    })
}

async fn list_page(
    RequireLead(_lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
) -> AppResult<Response> {
    let page = list(&state, page_user, &WebhookForm::default(), None, Vec::new()).await?;
    Ok(render(&page)?.into_response())
}

async fn create(
    RequireLead(_lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<WebhookForm>,
) -> AppResult<Response> {
    let batch = match form.batch.trim() {
        "" => None,
        id => Some(
            Uuid::parse_str(id).map_err(|_| AppError::BadRequest("batch is not an id".into()))?,
        ),
    };
    let events: Vec<String> = form
        .events()
        .iter()
        .map(|e| e.as_str().to_owned())
        .collect();
    let user = page_user.user.clone();
    match super::create(&state, &user, &form.url, &events, batch).await {
        Ok(created) => {
            let shown = (created.webhook.id, created.secret);
            let page = list(
                &state,
                page_user,
                &WebhookForm::default(),
                Some(shown),
                Vec::new(),
            )
            .await?;
            Ok((StatusCode::CREATED, render(&page)?).into_response())
        }
        Err(AppError::Validation { fields, .. }) => {
            let page = list(&state, page_user, &form, None, fields.into_iter().collect()).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(AppError::Conflict(why)) => {
            let errors = vec![("webhook".to_owned(), why)];
            let page = list(&state, page_user, &form, None, errors).await?;
            Ok((StatusCode::CONFLICT, render(&page)?).into_response())
        }
        Err(other) => Err(other),
    }
}

async fn delete(
    RequireLead(_lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(_form): CsrfForm<serde::de::IgnoredAny>,
) -> AppResult<Redirect> {
    super::delete(&state, &page_user.user, id).await?;
    Ok(Redirect::to("/webhooks"))
}

#[derive(Template)]
#[template(path = "webhooks/deliveries.html")]
struct DeliveriesPage {
    layout: Layout,
    webhook: WebhookView,
    deliveries: Vec<Delivery>,
    total: i64,
    next: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    cursor: Option<String>,
}

async fn deliveries_page(
    RequireLead(_lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> AppResult<Response> {
    let cursor = query.cursor.as_deref();
    let (webhook, page) = super::deliveries(&state, &page_user.user, id, cursor, None).await?;
    let next = page.next.map(|c| c.encode(ListKind::Deliveries));
    let html = render(&DeliveriesPage {
        layout: page_user.layout,
        webhook: webhook.into(),
        total: page.total,
        deliveries: page.items,
        next,
    })?;
    Ok(html.into_response())
}

async fn redeliver(
    RequireLead(_lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath((id, event_id)): ApiPath<(Uuid, Uuid)>,
    CsrfForm(_form): CsrfForm<serde::de::IgnoredAny>,
) -> AppResult<Redirect> {
    super::redeliver(&state, &page_user.user, id, event_id).await?;
    Ok(Redirect::to(&format!("/webhooks/{id}#delivery-{event_id}")))
}
