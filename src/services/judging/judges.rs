//! Adding and changing judges, from the API, the pages and the command line alike: the
//! settings given are checked ([`read_settings`]), stored, and recorded in the audit log
//! as `judge.create` and `judge.update`.

use serde_json::{Value, json};

use super::endpoint::EndpointPolicy;
use super::settings::read_settings;
use crate::credentials::sealed::SealingKey;
use crate::services::audit::{self, Actor};
use crate::services::{ServiceError, ServiceResult};
use crate::store::judges::{Judge, JudgeSettings};
use crate::store::{Store, StoreError};

/// Adds the judge a request's body describes (its name and settings), sealing its key
/// with `key` and holding its endpoint to `policy`; every bad field is reported at once,
/// and a name already taken is a conflict.
pub async fn create<'a>(
    store: &Store,
    actor: impl Into<Actor<'a>>,
    key: Option<&SealingKey>,
    policy: &EndpointPolicy,
    body: &Value,
) -> ServiceResult<Judge> {
    let (name, settings) = read_settings(store, key, policy, body, None).await?;
    let name = name.ok_or_else(|| ServiceError::field("name", "is required"))?;
    let judge = store
        .create_judge(&name, &settings)
        .await
        .map_err(|e| match e {
            StoreError::Duplicate(_) => {
                ServiceError::Conflict(format!("a judge is already named {name:?}"))
            }
            other => other.into(),
        })?;
    audit::record(
        store,
        actor,
        "judge.create",
        &judge.name,
        json!({"base_url": judge.base_url, "model": judge.model}),
    )
    .await;
    Ok(judge)
}

/// What a change of a judge records as changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    /// The settings the request gives, whether their values differ or not (the API's).
    Given,
    /// The settings whose values differ; when none does, nothing is written nor recorded
    /// (the judge's page, whose form gives every setting).
    Different,
}

/// Changes `judge`'s settings to those the request's body gives (the others are kept);
/// every bad field is reported at once. Runs already started keep what they started
/// with.
pub async fn update<'a>(
    store: &Store,
    actor: impl Into<Actor<'a>>,
    key: Option<&SealingKey>,
    policy: &EndpointPolicy,
    judge: &Judge,
    body: &Value,
    changed: Changed,
) -> ServiceResult<Judge> {
    let (_, settings) = read_settings(store, key, policy, body, Some(judge)).await?;
    let names: Vec<&str> = match changed {
        Changed::Given => body
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default(),
        Changed::Different => {
            let names = differences(judge, &settings);
            if names.is_empty() {
                return Ok(judge.clone());
            }
            names
        }
    };
    let after = store
        .update_judge(judge.id, &settings)
        .await?
        .ok_or(ServiceError::NotFound)?;
    audit::record(
        store,
        actor,
        "judge.update",
        &after.name,
        json!({ "changed": names }),
    )
    .await;
    Ok(after)
}

/// The settings of a judge that `after` changes, by their names in the API.
fn differences(before: &Judge, after: &JudgeSettings) -> Vec<&'static str> {
    let (old, new) = (&before.params.0, &after.params);
    [
        ("base_url", before.base_url != after.base_url),
        ("model", before.model != after.model),
        ("api_key_env", before.api_key_env != after.api_key_env),
        ("api_key", before.api_key_sealed != after.api_key_sealed),
        ("temperature", old.temperature != new.temperature),
        ("max_tokens", old.max_tokens != new.max_tokens),
        ("seed", old.seed != new.seed),
        ("timeout_s", old.timeout_s != new.timeout_s),
        (
            "structured_output",
            old.structured_output != new.structured_output,
        ),
        ("max_text_chars", old.max_text_chars != new.max_text_chars),
        (
            "max_reply_bytes",
            old.max_reply_bytes != new.max_reply_bytes,
        ),
        ("concurrency", before.concurrency != after.concurrency),
        (
            "requests_per_minute",
            before.requests_per_minute != after.requests_per_minute,
        ),
        ("templates", before.templates.0 != after.templates),
    ]
    .into_iter()
    .filter(|(_, changed)| *changed)
    .map(|(name, _)| name)
    .collect()
}
