//! A judge's settings as a request gives them: every field checked at once (the name, the
//! endpoint against the server's policy, where the key comes from, sampling parameters,
//! limits, templates against their rubrics), over the judge's current settings when it
//! is changed. The API, the pages and the command line all read them here.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::endpoint::{EndpointPolicy, MIN_MAX_REPLY_BYTES};
use crate::credentials::sealed::{SECRET_ENV, SealingKey};
use crate::services::{FieldErrors, ServiceError, ServiceResult};
use crate::store::Store;
use crate::store::judges::{Judge, JudgeSettings};
use verdict_core::judge::{KEY_ENV_PREFIX, Params, Template, template};

/// The longest judge name.
pub const MAX_NAME_CHARS: usize = 100;

/// Why a judge name is refused, or `None`.
pub fn name_violation(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("is required".into())
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some(format!("must be at most {MAX_NAME_CHARS} characters"))
    } else if !name
        .chars()
        .all(|c| c.is_alphanumeric() || "._-".contains(c))
    {
        Some("may contain only letters, digits and . _ -".into())
    } else {
        None
    }
}

/// The fields a judge request may carry.
const FIELDS: &[&str] = &[
    "name",
    "base_url",
    "model",
    "api_key_env",
    "api_key",
    "temperature",
    "max_tokens",
    "seed",
    "timeout_s",
    "max_reply_bytes",
    "structured_output",
    "max_text_chars",
    "concurrency",
    "requests_per_minute",
    "templates",
];

/// Reads a judge's settings from a request body: all of them to create one (`current`
/// none), or the ones given over `current` to change one. Returns the name given (if
/// any) and the settings, or every bad field. `"api_key": null` drops a stored key; a
/// stored key does not follow a base URL to another scheme, host or port unless given
/// again (or dropped) in the same request.
pub async fn read_settings(
    store: &Store,
    key: Option<&SealingKey>,
    policy: &EndpointPolicy,
    body: &Value,
    current: Option<&Judge>,
) -> ServiceResult<(Option<String>, JudgeSettings)> {
    let mut errors = FieldErrors::new();
    let Some(body) = body.as_object() else {
        return Err(ServiceError::field("body", "must be a JSON object"));
    };
    for key in body.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errors.insert(
                key.clone(),
                format!("is not a judge setting ({})", FIELDS.join(", ")),
            );
        }
    }
    let creating = current.is_none();
    let mut reader = Reader {
        body,
        errors: &mut errors,
    };
    let name = reader.text("name", MAX_NAME_CHARS, creating);
    if let Some(why) = name.as_deref().and_then(name_violation) {
        reader.errors.insert("name".into(), why);
    }
    if !creating && name.is_some() {
        reader.errors.insert(
            "name".into(),
            "cannot be changed; create another judge".into(),
        );
    }
    let base_url = reader.text("base_url", 2000, creating);
    if let Some(url) = &base_url
        && let Err(why) = check_base_url(url, policy)
    {
        reader.errors.insert("base_url".into(), why);
    }
    let model = reader.text("model", 200, creating);
    let api_key_env = reader.text("api_key_env", 200, false);
    if let Some(var) = &api_key_env
        && let Some(why) = key_env_violation(var)
    {
        reader.errors.insert("api_key_env".into(), why);
    }
    let api_key = reader.text("api_key", 4000, false);
    let drop_key = body.get("api_key").is_some_and(Value::is_null);
    if let (Some(judge), Some(url)) = (current, &base_url)
        && judge.api_key_sealed.is_some()
        && !body.contains_key("api_key")
        && api_key_env.is_none()
        && moves_elsewhere(&judge.base_url, url)
    {
        reader.errors.insert(
            "api_key".into(),
            "must be given again: the base URL moves to another scheme, host or port, and the \
             stored key does not follow it there (give the key for the new endpoint, or null to \
             drop it)"
                .into(),
        );
    }
    if api_key.is_some() && api_key_env.is_some() {
        reader.errors.insert(
            "api_key".into(),
            "give api_key or api_key_env, not both".into(),
        );
    }
    let sealed = match (&api_key, key) {
        (Some(secret), Some(key)) => Some(key.seal(secret)),
        (Some(_), None) => {
            reader.errors.insert(
                "api_key".into(),
                format!(
                    "cannot be stored: the server has no {SECRET_ENV} to seal it with; set that, \
                     or give api_key_env"
                ),
            );
            None
        }
        (None, _) => None,
    };
    let temperature = reader.number("temperature", 0.0, 2.0);
    let max_tokens = reader.whole("max_tokens", 1, 1_000_000);
    let seed = reader.whole("seed", i64::MIN, i64::MAX);
    let timeout_s = reader.whole("timeout_s", 1, 3600);
    let max_reply_bytes = reader.whole(
        "max_reply_bytes",
        MIN_MAX_REPLY_BYTES as i64,
        i64::try_from(policy.max_reply_bytes).unwrap_or(i64::MAX),
    );
    let max_text_chars = reader.whole("max_text_chars", 1, 20_000);
    let structured_output = reader.flag("structured_output");
    let concurrency = reader.whole("concurrency", 1, 64);
    let requests_per_minute = reader.whole("requests_per_minute", 1, 1_000_000);
    let templates = read_templates(store, body.get("templates"), &mut errors).await?;
    if !errors.is_empty() {
        return Err(ServiceError::Invalid(errors));
    }
    let old = current.map(|j| j.params.0.clone()).unwrap_or_default();
    let given = |key: &str| body.contains_key(key);
    let params = Params {
        temperature: if given("temperature") {
            temperature
        } else {
            old.temperature
        },
        max_tokens: if given("max_tokens") {
            max_tokens.map(|n| n as u32)
        } else {
            old.max_tokens
        },
        seed: if given("seed") { seed } else { old.seed },
        structured_output: structured_output.unwrap_or(old.structured_output),
        max_text_chars: if given("max_text_chars") {
            max_text_chars.map(|n| n as u32)
        } else {
            old.max_text_chars
        },
        timeout_s: if given("timeout_s") {
            timeout_s.map(|n| n as u32)
        } else {
            old.timeout_s
        },
        max_reply_bytes: if given("max_reply_bytes") {
            max_reply_bytes.map(|n| n as u64)
        } else {
            old.max_reply_bytes
        },
    };
    let (api_key_env, api_key_sealed) = match (api_key_env, sealed, current) {
        (Some(env), _, _) => (Some(env), None),
        (None, Some(sealed), _) => (None, Some(sealed)),
        (None, None, Some(j)) if drop_key => (j.api_key_env.clone(), None),
        (None, None, Some(j)) => (j.api_key_env.clone(), j.api_key_sealed.clone()),
        (None, None, None) => (None, None),
    };
    let mut all_templates = current.map(|j| j.templates.0.clone()).unwrap_or_default();
    all_templates.extend(templates);
    let settings = JudgeSettings {
        base_url: base_url
            .or_else(|| current.map(|j| j.base_url.clone()))
            .unwrap_or_default(),
        model: model
            .or_else(|| current.map(|j| j.model.clone()))
            .unwrap_or_default(),
        api_key_env,
        api_key_sealed,
        params,
        concurrency: concurrency
            .map(|n| n as i32)
            .or(current.map(|j| j.concurrency))
            .unwrap_or(4),
        requests_per_minute: requests_per_minute
            .map(|n| n as i32)
            .or(current.map(|j| j.requests_per_minute))
            .unwrap_or(60),
        templates: all_templates,
    };
    Ok((name, settings))
}

/// Why `var` may not hold a judge's key, or `None`.
fn key_env_violation(var: &str) -> Option<String> {
    let suffix = var.strip_prefix(KEY_ENV_PREFIX);
    if !var
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        Some("must be an environment variable's name (A-Z, 0-9 and _)".into())
    } else if suffix.is_none_or(str::is_empty) {
        Some(format!(
            "must begin with {KEY_ENV_PREFIX} and go on (e.g. {KEY_ENV_PREFIX}OPENAI): the \
             server's other variables hold its own secrets"
        ))
    } else {
        None
    }
}

/// Whether `to` points at another scheme, host or port than `from` (or either cannot be
/// read, which counts as elsewhere).
fn moves_elsewhere(from: &str, to: &str) -> bool {
    match (reqwest::Url::parse(from), reqwest::Url::parse(to)) {
        (Ok(a), Ok(b)) => {
            a.scheme() != b.scheme()
                || a.host_str() != b.host_str()
                || a.port_or_known_default() != b.port_or_known_default()
        }
        _ => true,
    }
}

/// A base URL in the usual form: `http(s)://host[:port][/path]`, `/chat/completions`
/// being appended, which the server's policy lets judges reach.
fn check_base_url(url: &str, policy: &EndpointPolicy) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("must start with http:// or https://".into());
    }
    policy.check_url(&parsed)?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("must have no query or fragment (e.g. http://127.0.0.1:8081/v1)".into());
    }
    if parsed
        .path()
        .trim_end_matches('/')
        .ends_with("/chat/completions")
    {
        return Err(
            "is the base URL, without /chat/completions (e.g. http://127.0.0.1:8081/v1)".into(),
        );
    }
    Ok(())
}

/// Reads `templates`: rubric name to `{text, format}`, each checked against the newest
/// version of its rubric.
async fn read_templates(
    store: &Store,
    given: Option<&Value>,
    errors: &mut FieldErrors,
) -> ServiceResult<BTreeMap<String, Template>> {
    let mut out = BTreeMap::new();
    let Some(given) = given.filter(|v| !v.is_null()) else {
        return Ok(out);
    };
    let Some(map) = given.as_object() else {
        errors.insert(
            "templates".into(),
            "must be an object of rubric name to template".into(),
        );
        return Ok(out);
    };
    for (rubric_name, value) in map {
        let path = format!("templates.{rubric_name}");
        let template: Template = match serde_json::from_value(value.clone()) {
            Ok(t) => t,
            Err(e) => {
                errors.insert(
                    path,
                    format!("must be {{\"text\": ..., \"format\": \"answers\" | \"score_line\" | \"choices\"}}: {e}"),
                );
                continue;
            }
        };
        let Some((_, rubric)) = store.latest_rubric(rubric_name).await? else {
            errors.insert(path, format!("there is no rubric {rubric_name:?}"));
            continue;
        };
        for (field, why) in template::check(&template, &rubric) {
            errors
                .entry(format!("{path}.{field}"))
                .and_modify(|said| {
                    said.push_str("; ");
                    said.push_str(&why);
                })
                .or_insert(why);
        }
        out.insert(rubric_name.clone(), template);
    }
    Ok(out)
}

/// Reads fields of a JSON object, noting what is wrong with each.
struct Reader<'a> {
    body: &'a Map<String, Value>,
    errors: &'a mut FieldErrors,
}

impl Reader<'_> {
    fn given(&self, key: &str) -> Option<&Value> {
        self.body.get(key).filter(|v| !v.is_null())
    }

    fn text(&mut self, key: &str, max: usize, required: bool) -> Option<String> {
        match self.given(key) {
            None if required => {
                self.errors.insert(key.into(), "is required".into());
                None
            }
            None => None,
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.errors.insert(key.into(), "must not be empty".into());
                None
            }
            Some(Value::String(s)) if s.chars().count() > max => {
                self.errors
                    .insert(key.into(), format!("must be at most {max} characters"));
                None
            }
            Some(Value::String(s)) => Some(s.trim().to_owned()),
            Some(_) => {
                self.errors.insert(key.into(), "must be a string".into());
                None
            }
        }
    }

    fn whole(&mut self, key: &str, low: i64, high: i64) -> Option<i64> {
        let value = self.given(key)?;
        match value.as_i64().filter(|n| (low..=high).contains(n)) {
            Some(n) => Some(n),
            None => {
                let why = if low == i64::MIN {
                    "must be a whole number".to_owned()
                } else {
                    format!("must be a whole number from {low} to {high}")
                };
                self.errors.insert(key.into(), why);
                None
            }
        }
    }

    fn number(&mut self, key: &str, low: f64, high: f64) -> Option<f64> {
        let value = self.given(key)?;
        match value.as_f64().filter(|n| (low..=high).contains(n)) {
            Some(n) => Some(n),
            None => {
                self.errors
                    .insert(key.into(), format!("must be a number from {low} to {high}"));
                None
            }
        }
    }

    fn flag(&mut self, key: &str) -> Option<bool> {
        let value = self.given(key)?;
        let flag = value.as_bool();
        if flag.is_none() {
            self.errors
                .insert(key.into(), "must be true or false".into());
        }
        flag
    }
}
