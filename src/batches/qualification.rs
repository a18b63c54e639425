//! A batch's qualification as the API and the pages show it: to a rater of the batch,
//! their own standing; to a lead of it, everyone's (see
//! [`crate::services::qualification`]).

use std::collections::BTreeMap;

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use uuid::Uuid;

use crate::auth::PageUser;
use crate::error::{AppError, AppResult};
use crate::services::qualification::{self, RaterQualification};
use crate::state::AppState;
use crate::web::{ApiPath, Layout, render};
use verdict_core::qualification::{Qualification, Standing};
use verdict_core::user::User;

/// What `GET /api/v1/batches/{id}/qualification` answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct QualificationView {
    /// The batch's qualification; `null` when it asks for none.
    pub qualification: Option<Qualification>,
    /// The caller's own standing, tries and revealed answers (a rater of the batch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mine: Option<RaterQualification>,
    /// Every rater who has rated a gold task of the batch, by username (a lead of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raters: Option<BTreeMap<String, Standing>>,
}

/// `user`'s view of batch `id`'s qualification: 404 unless they rate or lead it.
pub async fn view(state: &AppState, id: Uuid, user: &User) -> AppResult<QualificationView> {
    let store = state.store();
    let leads = crate::access::can_review(store, id, user).await?;
    let rates = crate::access::can_rate(store, id, user).await?;
    if !leads && !rates {
        return Err(AppError::NotFound);
    }
    let batch = store.batch(id).await?.ok_or(AppError::NotFound)?;
    let Some(q) = batch.qualification else {
        return Ok(QualificationView {
            qualification: None,
            mine: None,
            raters: None,
        });
    };
    let mine = if rates {
        Some(qualification::for_rater(store, &batch, &q, user).await?)
    } else {
        None
    };
    let raters = if leads {
        Some(qualification::standings(store, id, &q).await?)
    } else {
        None
    };
    Ok(QualificationView {
        qualification: Some(q),
        mine,
        raters,
    })
}

/// The qualification page's route.
pub fn router() -> Router<AppState> {
    Router::new().route("/batches/{id}/qualification", get(page))
}

#[derive(Template)]
#[template(path = "batches/qualification.html")]
struct QualificationPage {
    layout: Layout,
    batch_id: Uuid,
    batch_name: String,
    view: QualificationView,
}

/// `/batches/{id}/qualification`: a rater's standing, tries and (when the batch reveals
/// them) the expected answers of each try that is over; a lead's list of raters.
async fn page(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let view = view(&state, id, &page_user.user).await?;
    let batch_name = state
        .store()
        .batch(id)
        .await?
        .map(|b| b.name)
        .unwrap_or_default();
    let page = QualificationPage {
        layout: page_user.layout,
        batch_id: id,
        batch_name,
        view,
    };
    Ok(render(&page)?.into_response())
}
