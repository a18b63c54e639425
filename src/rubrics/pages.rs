//! The admin's rubrics page: the rubrics with their versions, and a form to add a
//! document, which reports every broken rule by its path.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;

use super::RubricSummary;
use crate::auth::PageUser;
use crate::auth::RequireAdmin;
use crate::auth::csrf::CsrfForm;
use crate::error::{AppError, AppResult, FieldErrors};
use crate::state::AppState;
use crate::web::{ApiQuery, Layout, render};

pub fn router() -> Router<AppState> {
    Router::new().route("/admin/rubrics", get(page).post(add))
}

#[derive(Template)]
#[template(path = "rubrics/admin.html")]
struct RubricsPage {
    layout: Layout,
    rubrics: Vec<RubricSummary>,
    /// The document as typed, shown again after a refusal.
    document: String,
    /// Why it was refused: a summary, then each broken rule by its path.
    refusal: Option<String>,
    errors: FieldErrors,
    /// What the last addition did.
    added: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// `name:version:created` of a document just added.
    added: Option<String>,
}

async fn page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> AppResult<Response> {
    let added = query.added.and_then(|a| {
        let mut parts = a.splitn(3, ':');
        let (name, version, created) = (parts.next()?, parts.next()?, parts.next()?);
        Some(match created {
            "true" => format!("{name} version {version} was added."),
            _ => format!("{name} version {version} is already this document; nothing changed."),
        })
    });
    let page = RubricsPage {
        layout: page_user.layout,
        rubrics: super::list(state.store()).await?,
        document: String::new(),
        refusal: None,
        errors: FieldErrors::new(),
        added,
    };
    Ok(render(&page)?.into_response())
}

#[derive(Deserialize)]
struct AddForm {
    #[serde(default)]
    document: String,
}

async fn add(
    RequireAdmin(admin): RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<AddForm>,
) -> AppResult<Response> {
    let refused = |message: String, errors: FieldErrors| (message, errors);
    let outcome = match serde_json::from_str::<serde_json::Value>(&form.document) {
        Err(e) => Err(refused(
            format!("The document is not valid JSON: {e}."),
            FieldErrors::new(),
        )),
        Ok(value) => match crate::services::rubrics::add(state.store(), &value, (&admin).into())
            .await
            .map_err(super::refusal)
        {
            Ok(added) => Ok(added),
            Err(AppError::Validation { message, fields }) => Err(refused(message, fields)),
            Err(AppError::Conflict(message)) => Err(refused(message, FieldErrors::new())),
            Err(other) => return Err(other),
        },
    };
    match outcome {
        Ok(added) => Ok(Redirect::to(&format!(
            "/admin/rubrics?added={}:{}:{}",
            added.name, added.version, added.created
        ))
        .into_response()),
        Err((message, errors)) => {
            let page = RubricsPage {
                layout: page_user.layout,
                rubrics: super::list(state.store()).await?,
                document: form.document,
                refusal: Some(message),
                errors,
                added: None,
            };
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
    }
}
