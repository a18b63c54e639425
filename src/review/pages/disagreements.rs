//! A batch's tasks, the most disagreement among their raters first.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::error::AppResult;
use crate::review::{self, TaskSpread, disagreement};
use crate::state::AppState;
use crate::web::{ApiPath, Layout, render};

#[derive(Template)]
#[template(path = "review/disagreements.html")]
struct DisagreementsPage {
    layout: Layout,
    batch_id: Uuid,
    batch_name: String,
    tasks: Vec<TaskSpread>,
    rule: &'static str,
}

/// `GET /batches/{id}/disagreements`: the batch's tasks, most disagreement first.
pub(super) async fn disagreements(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(batch_id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let (summary, tasks) = review::disagreements(&state, &lead, batch_id).await?;
    Ok(render(&DisagreementsPage {
        layout: page_user.layout,
        batch_id,
        batch_name: summary.batch.name,
        tasks,
        rule: disagreement::SPREAD_RULE,
    })?
    .into_response())
}
