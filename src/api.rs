//! The JSON API's description: `/api/v1/openapi.json`, generated from the handlers.

use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
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
        assign::api::release,
        ratings::api::list,
        ratings::api::read,
        ratings::api::revise,
        ratings::api::history,
        review::api::queue,
        review::api::review,
        review::api::task,
        dashboard::metrics_api,
        export::api::export,
        audit::list,
    ),
    components(schemas(error::ErrorBody, users::UserView, store::tokens::ApiToken)),
    modifiers(&Security, &SharedErrors),
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
                crate::SESSION_COOKIE,
                "the session cookie set by POST /login; state-changing calls also send X-CSRF-Token",
            ))),
        );
    }
}

/// The errors that come from what every API handler shares rather than from the handler
/// itself, added to each operation they apply to unless its own annotation lists them:
/// the request's screening and `ApiPath`/`ApiQuery` (400 for an address, an id or a query
/// that does not parse), `CurrentUser` (401 without a valid token or session; 403 for a
/// cookie-signed change without its CSRF token) and `ApiJson` or the upload's body (413
/// too large, 415 wrong content type, 422 the wrong shape).
struct SharedErrors;

impl Modify for SharedErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            // Each operation, and whether it changes state.
            let operations = [
                (item.get.as_mut(), false),
                (item.put.as_mut(), true),
                (item.post.as_mut(), true),
                (item.delete.as_mut(), true),
                (item.patch.as_mut(), true),
            ];
            for (operation, changes) in operations {
                let Some(operation) = operation else { continue };
                let mut shared = vec![
                    ("400", "the address, a parameter or the body does not parse"),
                    ("401", "no valid bearer token or session"),
                ];
                if changes {
                    shared.push(("403", "signed in by session cookie without X-CSRF-Token"));
                }
                if operation.request_body.is_some() {
                    shared.extend([
                        ("413", "the body is larger than the limit"),
                        ("415", "the body's content type is not accepted"),
                        ("422", "the body does not have the expected shape"),
                    ]);
                }
                for (status, description) in shared {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| {
                            ResponseBuilder::new()
                                .description(description)
                                .content(
                                    "application/json",
                                    ContentBuilder::new()
                                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                                        .build(),
                                )
                                .build()
                                .into()
                        });
                }
            }
        }
    }
}

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/v1/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
