//! The JSON API's description: `/api/v1/openapi.json`, generated from the handlers.

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::state::AppState;
use crate::{assign, audit, batches, dashboard, error, export, ratings, review, store, users};

#[derive(OpenApi)]
#[openapi(
    info(title = "verdict", description = "Human rating of AI answers to coding prompts."),
    paths(
        users::api::me,
        users::api::list,
        users::api::create,
        users::api::update,
        users::tokens::create,
        users::tokens::list,
        users::tokens::revoke,
        batches::api::upload,
        batches::api::list,
        batches::api::one,
        batches::api::update,
        assign::api::next,
        assign::api::draft,
        assign::api::submit,
        assign::api::skip,
        assign::api::out_of_scope,
        ratings::api::read,
        ratings::api::revise,
        review::api::review,
        dashboard::metrics_api,
        export::api::export,
        audit::list,
    ),
    components(schemas(error::ErrorBody, users::UserView, store::tokens::ApiToken)),
    modifiers(&Security),
    security(("bearer" = []), ("session" = [])),
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "id",
                "the session cookie set by POST /login; state-changing calls also send X-CSRF-Token",
            ))),
        );
    }
}

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/v1/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
