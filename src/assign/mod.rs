//! Working on tasks: taking the next one, drafts, submitting, skipping, marking out of
//! scope. The rater sees A and B in the order of their assignment; everything is stored
//! in the task's canonical order.

use axum::Router;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::AppResult;
use crate::state::AppState;
use verdict_core::rubric;
use verdict_core::task::Task;

pub mod api;
pub mod pages;

pub fn api_router() -> crate::web::openapi::ApiRouter {
    api::router()
}

pub fn page_router() -> Router<AppState> {
    pages::router()
}

/// A task as one rater sees it: A and B in the order of their assignment (or the one
/// response of a single-response rubric), no model names.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TaskView {
    /// The task's external id; for a rater of a batch that does not show them, a
    /// neutral name of the rater's own instead (`Task 17`: their 17th task of the batch).
    pub external_id: String,
    /// A string, or a list of `{role, content}` messages.
    pub prompt: Value,
    /// The two responses, for a rubric that compares them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_a: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_b: Option<String>,
    /// The one response, for a rubric that judges one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
}

impl TaskView {
    pub fn shown(task: &Task, subject: rubric::Subject, swapped: bool) -> Self {
        let (a, b) = if swapped {
            (&task.response_b, &task.response_a)
        } else {
            (&task.response_a, &task.response_b)
        };
        let (response_a, response_b, response) = match subject {
            rubric::Subject::Pair => (Some(a.clone()), Some(b.clone()), None),
            rubric::Subject::Single => (None, None, Some(task.response_a.clone())),
        };
        Self {
            external_id: task.external_id.clone(),
            prompt: task.prompt.clone(),
            response_a,
            response_b,
            response,
            metadata: task.metadata.clone(),
        }
    }
}

pub use crate::services::task::Rendered;

/// A task and its rendered HTML (rendered on first view); 404 if there is no such task.
pub async fn task_with_html(state: &AppState, task_id: Uuid) -> AppResult<(Task, Rendered)> {
    Ok(crate::services::task::with_html(state.store(), task_id).await?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_swapped_task_shows_b_first() {
        let task = Task {
            id: Uuid::nil(),
            batch_id: Uuid::nil(),
            external_id: "t".into(),
            prompt: json!("p"),
            response_a: "first".into(),
            response_b: "second".into(),
            model_a: Some("m1".into()),
            model_b: Some("m2".into()),
            metadata: Map::new(),
            rendered: None,
        };
        let shown = TaskView::shown(&task, rubric::Subject::Pair, true);
        assert_eq!(
            (shown.response_a.as_deref(), shown.response_b.as_deref()),
            (Some("second"), Some("first"))
        );
        let plain = TaskView::shown(&task, rubric::Subject::Pair, false);
        assert_eq!(plain.response_a.as_deref(), Some("first"));
        let single = TaskView::shown(&task, rubric::Subject::Single, false);
        assert_eq!(
            (
                single.response.as_deref(),
                single.response_a,
                single.response_b
            ),
            (Some("first"), None, None)
        );
    }
}
