//! The lead's pages: the review queue with bulk accept, one rating with its history and
//! the decision form, a task's ratings side by side, and a batch's tasks by
//! disagreement.

use axum::Router;
use axum::routing::get;

use crate::state::AppState;

mod disagreements;
mod final_answer;
mod queue;
mod rating;
mod task;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/review", get(queue::queue))
        .route(
            "/review/accept",
            get(queue::confirm_accept).post(queue::post_accept),
        )
        .route(
            "/review/selected",
            axum::routing::post(queue::post_selected),
        )
        .route("/review/{id}", get(rating::one).post(rating::post_decision))
        .route("/batches/{id}/tasks/{external_id}", get(task::task))
        .route(
            "/batches/{id}/tasks/{external_id}/final",
            get(final_answer::show).post(final_answer::save),
        )
        .route(
            "/batches/{id}/tasks/{external_id}/final/remove",
            axum::routing::post(final_answer::remove),
        )
        .route(
            "/batches/{id}/disagreements",
            get(disagreements::disagreements),
        )
}
