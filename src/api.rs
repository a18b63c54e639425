//! The JSON API: every feature's API routes, registered with the handlers' OpenAPI
//! annotations (utoipa-axum), and the document they make, served at
//! `/api/v1/openapi.json`.

use axum::Router;
use axum::routing::get;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;
use crate::web::openapi::ApiRouter;
use crate::{
    assign, audit, batches, error, export, judges, metrics, ratings, reports, review, rubrics,
    store, users, webhooks,
};

/// The document's frame: what it says of itself, its security schemes and shared
/// schemas. Its paths come from the routers themselves ([`routes`]), so no route can be
/// missing from it or described at another path than it is served on.
#[derive(OpenApi)]
#[openapi(
    info(title = "verdict", description = "Human rating of AI answers to coding prompts."),
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

/// Every API route, with the document describing them.
pub fn routes() -> ApiRouter {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(users::api_router())
        .merge(batches::api_router())
        .merge(assign::api_router())
        .merge(ratings::api_router())
        .merge(review::api_router())
        .merge(export::api_router())
        .merge(audit::api_router())
        .merge(metrics::api::router())
        .merge(rubrics::api_router())
        .merge(judges::api_router())
        .merge(reports::api_router())
        .merge(webhooks::api::router())
}

/// The API's routes, and its OpenAPI document (with the errors every route shares).
pub fn split() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut document) = routes().split_for_parts();
    SharedErrors.modify(&mut document);
    (router, document)
}

/// The OpenAPI document of the API, as served.
pub fn document() -> utoipa::openapi::OpenApi {
    split().1
}

/// Serves the document, written once.
pub fn router(document: &utoipa::openapi::OpenApi) -> Router<AppState> {
    let json = bytes::Bytes::from(serde_json::to_vec(document).unwrap_or_default());
    Router::new().route(
        "/api/v1/openapi.json",
        get(move || {
            let json = json.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    json,
                )
            }
        }),
    )
}
