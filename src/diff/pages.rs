//! The A vs B diff pages: a rater's own assignment in the orientation they were shown,
//! and a task of a batch for its leads in the task's own order. Both read the task and
//! compute the diff; neither writes anything.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use uuid::Uuid;

use super::{Section, View, compare};
use crate::auth::PageUser;
use crate::auth::RequireLead;
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::web::{ApiPath, ApiQuery, Layout, render};
use verdict_core::rubric::Subject;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/assignments/{id}/diff", get(assignment_diff))
        .route("/batches/{id}/tasks/{external_id}/diff", get(task_diff))
}

/// The diff page's one parameter; any other is refused (400), as on the review page.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiffQuery {
    view: Option<String>,
}

#[derive(Template)]
#[template(path = "diff/page.html")]
struct DiffPage {
    layout: Layout,
    batch_name: String,
    external_id: String,
    /// What the columns are: as the rater was shown them, or the task's own order.
    note: &'static str,
    /// Where the page came from: the task's form, the rating, or the lead's task page.
    back_href: String,
    back_label: &'static str,
    view: View,
    /// This page in each layout.
    side_href: String,
    inline_href: String,
    sections: Vec<Section>,
}

/// Said instead of a diff when the rubric judges one response.
#[derive(Template)]
#[template(path = "diff/nothing.html")]
struct NothingPage {
    layout: Layout,
    back_href: String,
    back_label: &'static str,
}

/// Where a page and its layout links point.
struct Place {
    path: String,
    back_href: String,
    back_label: &'static str,
}

/// Everything the page shows of a task, once access is settled.
struct Shown {
    batch_name: String,
    external_id: String,
    note: &'static str,
    /// A and B in the order the page shows them.
    a: String,
    b: String,
}

/// `GET /assignments/{id}/diff`: the rater's own assignment (open or finished), A and B
/// as they were shown; 404 for anyone else's, as the form's page answers.
async fn assignment_diff(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> AppResult<Response> {
    let owned = crate::services::assignment::owned(state.store(), id, &page_user.user).await?;
    let (back_href, back_label) = if owned.assignment.state.is_open() {
        (format!("/assignments/{id}"), "Back to the task")
    } else {
        match state.store().rating_of_assignment(id).await? {
            Some(rating) => (format!("/ratings/{}", rating.id), "Back to your rating"),
            None => ("/".to_owned(), "Back to your queue"),
        }
    };
    let place = Place {
        path: format!("/assignments/{id}/diff"),
        back_href,
        back_label,
    };
    if owned.rubric.subject != Subject::Pair {
        return nothing(page_user.layout, place);
    }
    let view = parse_view(&query)?;
    let task = state
        .store()
        .task(owned.assignment.task_id)
        .await?
        .ok_or(AppError::NotFound)?;
    // The rater's "Response A" is the task's B when they were shown it swapped.
    let (a, b) = if owned.assignment.swapped {
        (task.response_b, task.response_a)
    } else {
        (task.response_a, task.response_b)
    };
    let number = if owned.sees_external_ids {
        0
    } else {
        state.store().task_number(owned.assignment.id).await?
    };
    let shown = Shown {
        batch_name: owned.batch.name,
        external_id: crate::access::task_name(owned.sees_external_ids, &task.external_id, number),
        note: "Response A and Response B as they are shown to you: A on the left, B on the right.",
        a,
        b,
    };
    page(page_user.layout, place, view, shown).await
}

/// `GET /batches/{id}/tasks/{external_id}/diff`: for the batch's leads (and admins), the
/// task's responses in its own order, under the access rule of the lead's task page.
async fn task_diff(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath((batch_id, external_id)): ApiPath<(Uuid, String)>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> AppResult<Response> {
    let (summary, rubric, task_id, _) =
        crate::review::task_ratings(&state, &lead, batch_id, &external_id).await?;
    let task_page = format!(
        "/batches/{batch_id}/tasks/{}",
        percent_encoding::utf8_percent_encode(&external_id, SEGMENT)
    );
    let place = Place {
        path: format!("{task_page}/diff"),
        back_href: task_page,
        back_label: "Back to the task's ratings",
    };
    if rubric.subject != Subject::Pair {
        return nothing(page_user.layout, place);
    }
    let view = parse_view(&query)?;
    let task = state
        .store()
        .task(task_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let shown = Shown {
        batch_name: summary.batch.name,
        external_id: task.external_id,
        note: "The task's own order: its response A on the left, its response B on the right, whatever order each rater was shown.",
        a: task.response_a,
        b: task.response_b,
    };
    page(page_user.layout, place, view, shown).await
}

/// Characters escaped in a path segment: all but the unreserved ones, as the
/// templates' `urlencode_strict` does, so links to a task read the same everywhere.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn parse_view(query: &DiffQuery) -> AppResult<View> {
    View::parse(query.view.as_deref()).map_err(AppError::BadRequest)
}

/// 404, with a page that says why: a rubric that judges one response has no B.
fn nothing(layout: Layout, place: Place) -> AppResult<Response> {
    let page = NothingPage {
        layout,
        back_href: place.back_href,
        back_label: place.back_label,
    };
    Ok((StatusCode::NOT_FOUND, render(&page)?).into_response())
}

/// Computes the diff off the async threads (it is CPU work, bounded by the caps and the
/// deadline of `diff::compare`) and renders the page.
async fn page(layout: Layout, place: Place, view: View, shown: Shown) -> AppResult<Response> {
    let Shown {
        batch_name,
        external_id,
        note,
        a,
        b,
    } = shown;
    let sections = tokio::task::spawn_blocking(move || compare(&a, &b))
        .await
        .map_err(AppError::internal)?;
    let page = DiffPage {
        layout,
        batch_name,
        external_id,
        note,
        back_href: place.back_href,
        back_label: place.back_label,
        view,
        side_href: format!("{}?view=side", place.path),
        inline_href: format!("{}?view=inline", place.path),
        sections,
    };
    Ok(render(&page)?.into_response())
}
