//! What the API's handlers need to describe themselves in the OpenAPI document: the
//! router type that collects their descriptions, and the schemas of fields the server
//! checks against a fixed list. The document itself is put together in `crate::api`,
//! which merges every feature's router; the features only need this module, so none of
//! them imports `api` back.

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

/// A string schema that allows only `values`: how the document states a field the server
/// checks against a fixed list.
pub(crate) fn one_of(values: &[&str]) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// A skip reason: one of those the batch's rubric lists (its document's `skip_reasons`),
/// so the document can state only its form.
pub(crate) fn skip_reasons() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some("^[a-z][a-z0-9_]{0,63}$"))
        .description(Some(
            "One of the reasons the batch's rubric lists (`skip_reasons` of its document; \
             without a list: unfamiliar, too_long or other).",
        ))
        .build()
}

pub(crate) fn batch_states() -> utoipa::openapi::Object {
    one_of(verdict_core::lifecycle::BatchState::NAMES)
}

pub(crate) fn routings() -> utoipa::openapi::Object {
    one_of(&["prefer", "strict"])
}

pub(crate) fn decisions() -> utoipa::openapi::Object {
    one_of(verdict_core::lifecycle::Decision::NAMES)
}

pub(crate) fn export_formats() -> utoipa::openapi::Object {
    one_of(&["csv", "jsonl"])
}

pub(crate) fn aggregates() -> utoipa::openapi::Object {
    one_of(&["majority", "dawid_skene"])
}

pub(crate) fn outcomes() -> utoipa::openapi::Object {
    one_of(verdict_core::lifecycle::Outcome::NAMES)
}

pub(crate) fn finished_statuses() -> utoipa::openapi::Object {
    one_of(verdict_core::lifecycle::Status::FINISHED_NAMES)
}

/// A router of API routes that also collects their OpenAPI description.
pub type ApiRouter = OpenApiRouter<AppState>;
