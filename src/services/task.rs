//! Tasks as raters and leads read them: the prompt and responses rendered once and kept.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{ServiceError, ServiceResult};
use crate::store::Store;
use verdict_core::task::Task;

/// The rendered HTML of a task's prompt and responses, in canonical order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rendered {
    pub prompt: String,
    pub response_a: String,
    pub response_b: String,
}

impl Rendered {
    /// The responses in the order a viewer sees them: B first when `swapped`.
    pub fn responses(self, swapped: bool) -> (String, String) {
        if swapped {
            (self.response_b, self.response_a)
        } else {
            (self.response_a, self.response_b)
        }
    }
}

/// A task and its rendered HTML (rendered on first view); not found if there is no such
/// task.
pub async fn with_html(store: &Store, task_id: Uuid) -> ServiceResult<(Task, Rendered)> {
    let task = store.task(task_id).await?.ok_or(ServiceError::NotFound)?;
    let html = rendered(store, &task).await?;
    Ok((task, html))
}

/// Renders a task once and keeps the result with it.
pub async fn rendered(store: &Store, task: &Task) -> ServiceResult<Rendered> {
    if let Some(cached) = task
        .rendered
        .as_ref()
        .and_then(|r| serde_json::from_value(r.clone()).ok())
    {
        return Ok(cached);
    }
    let (prompt, a, b) = (
        task.prompt.clone(),
        task.response_a.clone(),
        task.response_b.clone(),
    );
    let rendered = tokio::task::spawn_blocking(move || Rendered {
        prompt: verdict_core::render::prompt(&prompt),
        response_a: verdict_core::render::markdown(&a),
        response_b: verdict_core::render::markdown(&b),
    })
    .await
    .map_err(|e| ServiceError::Internal(e.to_string()))?;
    let value =
        serde_json::to_value(&rendered).map_err(|e| ServiceError::Internal(e.to_string()))?;
    store.set_rendered(task.id, &value).await?;
    Ok(rendered)
}
