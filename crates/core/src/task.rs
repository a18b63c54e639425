//! Tasks as stored: a prompt and the responses rated against it.

use serde_json::{Map, Value};
use uuid::Uuid;

/// A task's content, in its own orientation (A is the task's A).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: Uuid,
    pub batch_id: Uuid,
    pub external_id: String,
    pub prompt: Value,
    pub response_a: String,
    pub response_b: String,
    pub model_a: Option<String>,
    pub model_b: Option<String>,
    pub metadata: Map<String, Value>,
    /// The prompt and responses rendered to HTML, when they have been.
    pub rendered: Option<Value>,
}
