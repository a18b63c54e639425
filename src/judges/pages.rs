//! The judges' pages: the admin's list of judges with the form that adds one, and a run's
//! calls with their raw output. They do what the API does (`services::judging::judges`,
//! the runs' calls), so whatever the API can do, a page can; the batch page's buttons that start,
//! pause, resume and cancel runs are the batch page's (`dashboard::judge_runs`).

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::JudgeView;
use crate::auth::PageUser;
use crate::auth::csrf::CsrfForm;
use crate::auth::{RequireAdmin, RequireLead};
use crate::error::{AppError, AppResult, FieldErrors};
use crate::services::ServiceError;
use crate::services::judging::judges::{self, Changed};
use crate::services::judging::runs::{RunView, run_view};
use crate::services::judging::settings::read_settings;
use crate::state::AppState;
use crate::store::judges::CallRow;
use crate::web::paging::PageLinks;
use crate::web::{ApiPath, ApiQuery, Layout, render};
use verdict_core::lifecycle::CallStatus;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/judges", get(judges_page).post(create))
        .route("/admin/judges/{id}", get(edit_page).post(update))
        .route("/judge-runs/{id}/calls", get(calls_page))
}

#[derive(Template)]
#[template(path = "judges/admin.html")]
struct JudgesPage {
    layout: Layout,
    judges: Vec<JudgeView>,
    /// The form that adds a judge.
    f: FormView,
    /// The judge just added or changed, by name, and which of the two.
    saved: Option<(String, &'static str)>,
}

#[derive(Template)]
#[template(path = "judges/edit.html")]
struct JudgePage {
    layout: Layout,
    judge: JudgeView,
    f: FormView,
}

/// The judge form as a page shows it: what was typed, what is wrong with it, and whether
/// it adds a judge or changes one.
struct FormView {
    form: JudgeForm,
    errors: FieldErrors,
    /// Whether this server can store a key (it has the secret to seal keys with).
    can_seal: bool,
    /// Changing a judge: its name stays, and empty key fields keep its key.
    editing: bool,
    /// The judge changed has a key stored (the form offers to drop it).
    key_stored: bool,
}

impl FormView {
    /// Every field error, with its field in words, for the summary over the form.
    fn error_lines(&self) -> Vec<String> {
        self.errors
            .iter()
            .map(|(field, why)| format!("{}: {why}", field_label(field)))
            .collect()
    }

    /// The errors of the templates (`templates` and `templates.<rubric>.<field>`).
    fn template_errors(&self) -> Vec<String> {
        self.errors
            .iter()
            .filter(|(field, _)| *field == "templates" || field.starts_with("templates."))
            .map(|(field, why)| match field.strip_prefix("templates.") {
                Some(at) => format!("{at}: {why}"),
                None => why.clone(),
            })
            .collect()
    }
}

/// Where a judge's key comes from, never the key.
fn key_source(judge: &JudgeView) -> String {
    match (&judge.api_key_env, judge.api_key_stored) {
        (Some(var), _) => format!("key from ${var}"),
        (None, true) => "key stored".into(),
        (None, false) => "no key".into(),
    }
}

/// A judge's sampling parameters and limits in words; the ones it leaves to the
/// endpoint's defaults are left out.
fn params_text(judge: &JudgeView) -> String {
    let p = &judge.params;
    let mut parts = Vec::new();
    if let Some(t) = p.temperature {
        parts.push(format!("temperature {t}"));
    }
    if let Some(n) = p.max_tokens {
        parts.push(format!("at most {n} tokens"));
    }
    if let Some(seed) = p.seed {
        parts.push(format!("seed {seed}"));
    }
    if p.structured_output {
        parts.push("structured output".into());
    }
    if let Some(n) = p.max_text_chars {
        parts.push(format!("texts of at most {n} characters"));
    }
    if let Some(s) = p.timeout_s {
        parts.push(format!("time-out {s} s"));
    }
    if parts.is_empty() {
        "the endpoint's defaults".into()
    } else {
        parts.join(" · ")
    }
}

/// The rubrics the judge has its own template for, or that it uses the built-in ones.
fn templates_text(judge: &JudgeView) -> String {
    if judge.templates.is_empty() {
        "built-in".into()
    } else {
        let names: Vec<&str> = judge.templates.keys().map(String::as_str).collect();
        format!("its own for {}; built-in for the others", names.join(", "))
    }
}

/// A judge setting's name in words, as the form labels it.
fn field_label(field: &str) -> String {
    let label = match field {
        "name" => "Name",
        "base_url" => "Base URL",
        "model" => "Model",
        "api_key_env" => "API key environment variable",
        "api_key" => "API key",
        "temperature" => "Temperature",
        "max_tokens" => "Max tokens",
        "seed" => "Seed",
        "timeout_s" => "Time-out",
        "max_reply_bytes" => "Longest reply",
        "structured_output" => "Structured output",
        "max_text_chars" => "Longest text",
        "concurrency" => "Concurrency",
        "requests_per_minute" => "Requests per minute",
        "templates" => "Templates",
        other => return format!("Templates, {}", other.trim_start_matches("templates.")),
    };
    label.to_owned()
}

/// The add form as typed: every field text, the box ticked or not. Empty fields are left
/// to the defaults.
#[derive(Debug, Default, Clone, Deserialize)]
struct JudgeForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    api_key_env: String,
    #[serde(default)]
    api_key: String,
    /// Present (`on`) when the stored key is to be dropped.
    #[serde(default)]
    drop_api_key: Option<String>,
    #[serde(default)]
    temperature: String,
    #[serde(default)]
    max_tokens: String,
    #[serde(default)]
    seed: String,
    #[serde(default)]
    timeout_s: String,
    #[serde(default)]
    max_text_chars: String,
    #[serde(default)]
    max_reply_bytes: String,
    /// Present (`on`) when ticked.
    #[serde(default)]
    structured_output: Option<String>,
    #[serde(default)]
    concurrency: String,
    #[serde(default)]
    requests_per_minute: String,
    /// A JSON object of rubric name to `{text, format}`, as the API takes it.
    #[serde(default)]
    templates: String,
}

impl JudgeForm {
    /// The form a new judge starts from: the defaults the API would give.
    fn fresh() -> Self {
        Self {
            concurrency: "4".into(),
            requests_per_minute: "60".into(),
            ..Self::default()
        }
    }

    /// The form of a judge's settings as they are, to change them. The key is never
    /// shown (nor where it comes from: the fields say how to change it), nor the
    /// templates (the ones given replace the judge's for their rubrics).
    fn of(judge: &JudgeView) -> Self {
        let text = |n: Option<String>| n.unwrap_or_default();
        let p = &judge.params;
        Self {
            name: judge.name.clone(),
            base_url: judge.base_url.clone(),
            model: judge.model.clone(),
            temperature: text(p.temperature.map(|t| t.to_string())),
            max_tokens: text(p.max_tokens.map(|n| n.to_string())),
            seed: text(p.seed.map(|n| n.to_string())),
            timeout_s: text(p.timeout_s.map(|n| n.to_string())),
            max_text_chars: text(p.max_text_chars.map(|n| n.to_string())),
            max_reply_bytes: text(p.max_reply_bytes.map(|n| n.to_string())),
            structured_output: p.structured_output.then(|| "on".to_owned()),
            concurrency: judge.concurrency.to_string(),
            requests_per_minute: judge.requests_per_minute.to_string(),
            ..Self::default()
        }
    }

    /// The form as the API's request body, for `read_settings` to check as it checks
    /// the API's, and what cannot even be put in the body (templates that are not JSON).
    /// A number field that does not read as a number is passed on as text, so the check
    /// names it with the range it needs. Adding a judge, an empty field is left out (the
    /// default); changing one, an empty number goes back to the default (`null`), the
    /// name is not sent (it cannot change) and the URL and model are sent even empty
    /// (they cannot be cleared, and the check says so).
    fn body(&self, editing: bool) -> (Value, FieldErrors) {
        let mut body = Map::new();
        let mut errors = FieldErrors::new();
        let texts = [
            ("name", &self.name, false),
            ("base_url", &self.base_url, editing),
            ("model", &self.model, editing),
            ("api_key_env", &self.api_key_env, false),
            ("api_key", &self.api_key, false),
        ];
        for (key, text, always) in texts {
            if (key == "name" && editing) || (text.trim().is_empty() && !always) {
                continue;
            }
            body.insert(key.into(), json!(text));
        }
        if editing && self.drop_api_key.is_some() && self.api_key.trim().is_empty() {
            body.insert("api_key".into(), Value::Null);
        }
        let numbers = [
            ("temperature", &self.temperature),
            ("max_tokens", &self.max_tokens),
            ("seed", &self.seed),
            ("timeout_s", &self.timeout_s),
            ("max_text_chars", &self.max_text_chars),
            ("max_reply_bytes", &self.max_reply_bytes),
            ("concurrency", &self.concurrency),
            ("requests_per_minute", &self.requests_per_minute),
        ];
        for (key, text) in numbers {
            let text = text.trim();
            if text.is_empty() {
                if editing {
                    body.insert(key.into(), Value::Null);
                }
                continue;
            }
            let value = match (text.parse::<i64>(), text.parse::<f64>()) {
                (Ok(n), _) => json!(n),
                (_, Ok(x)) if x.is_finite() => json!(x),
                _ => json!(text),
            };
            body.insert(key.into(), value);
        }
        body.insert(
            "structured_output".into(),
            json!(self.structured_output.is_some()),
        );
        let templates = self.templates.trim();
        if !templates.is_empty() {
            match serde_json::from_str::<Value>(templates) {
                Ok(value) => {
                    body.insert("templates".into(), value);
                }
                Err(e) => {
                    errors.insert("templates".into(), format!("is not JSON: {e}"));
                }
            }
        }
        (Value::Object(body), errors)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgesQuery {
    /// The judge just added (after the form's redirect).
    added: Option<String>,
    /// The judge just changed.
    changed: Option<String>,
}

/// The judge form; `changing` is the judge it changes, if it does not add one.
fn form_view(
    state: &AppState,
    form: JudgeForm,
    errors: FieldErrors,
    changing: Option<&JudgeView>,
) -> FormView {
    FormView {
        form,
        errors,
        can_seal: state.judging().sealing_key().is_some(),
        editing: changing.is_some(),
        key_stored: changing.is_some_and(|j| j.api_key_stored),
    }
}

async fn judges_page_with(
    state: &AppState,
    layout: Layout,
    form: JudgeForm,
    errors: FieldErrors,
    saved: Option<(String, &'static str)>,
) -> AppResult<JudgesPage> {
    let judges = state.store().list_judges().await?;
    Ok(JudgesPage {
        layout,
        judges: judges.into_iter().map(JudgeView::from).collect(),
        f: form_view(state, form, errors, None),
        saved,
    })
}

/// `GET /admin/judges`: every judge, without secrets, and the form that adds one.
async fn judges_page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<JudgesQuery>,
) -> AppResult<Response> {
    let saved = match (query.added, query.changed) {
        (Some(name), _) => Some((name, "added")),
        (None, Some(name)) => Some((name, "changed")),
        (None, None) => None,
    };
    let page = judges_page_with(
        &state,
        page_user.layout,
        JudgeForm::fresh(),
        FieldErrors::new(),
        saved,
    )
    .await?;
    Ok(render(&page)?.into_response())
}

/// `POST /admin/judges`: adds a judge as `POST /api/v1/judges` does. Every bad field is
/// named beside it and nothing is stored; the key typed is never shown back.
async fn create(
    RequireAdmin(admin): RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<JudgeForm>,
) -> AppResult<Response> {
    let store = state.store();
    let (key, policy) = (state.judging().sealing_key(), state.judging().policy());
    let (body, mut errors) = form.body(false);
    // A form that cannot even be put in a request is not sent; its other fields are
    // still checked, so that every bad field is named at once.
    let checked = if errors.is_empty() {
        judges::create(store, &admin, key, policy, &body).await
    } else {
        read_settings(store, key, policy, &body, None)
            .await
            .and(Err(ServiceError::Invalid(FieldErrors::new())))
    };
    let status = match checked {
        Ok(judge) => {
            let query = serde_urlencoded::to_string([("added", &judge.name)])
                .map_err(AppError::internal)?;
            return Ok(Redirect::to(&format!("/admin/judges?{query}")).into_response());
        }
        Err(ServiceError::Conflict(why)) => {
            errors.insert("name".into(), format!("is taken: {why}"));
            StatusCode::CONFLICT
        }
        Err(ServiceError::Invalid(fields)) => {
            errors.extend(fields);
            StatusCode::UNPROCESSABLE_ENTITY
        }
        Err(other) => return Err(other.into()),
    };
    let form = JudgeForm {
        api_key: String::new(),
        ..form
    };
    let page = judges_page_with(&state, page_user.layout, form, errors, None).await?;
    Ok((status, render(&page)?).into_response())
}

/// `GET /admin/judges/{id}`: a judge's settings, to change them as `PATCH
/// /api/v1/judges/{id}` does.
async fn edit_page(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
) -> AppResult<Response> {
    let judge = JudgeView::from(state.store().judge(id).await?.ok_or(AppError::NotFound)?);
    let page = JudgePage {
        layout: page_user.layout,
        f: form_view(
            &state,
            JudgeForm::of(&judge),
            FieldErrors::new(),
            Some(&judge),
        ),
        judge,
    };
    Ok(render(&page)?.into_response())
}

/// `POST /admin/judges/{id}`: changes a judge as `PATCH /api/v1/judges/{id}` does (runs
/// already started keep what they started with). Every bad field is named beside it and
/// nothing is changed; a save that changes nothing writes and records nothing.
async fn update(
    RequireAdmin(admin): RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<JudgeForm>,
) -> AppResult<Response> {
    let store = state.store();
    let (key, policy) = (state.judging().sealing_key(), state.judging().policy());
    let judge = store.judge(id).await?.ok_or(AppError::NotFound)?;
    let (body, mut errors) = form.body(true);
    // As adding one: a form that cannot be put in a request is only checked.
    let checked = if errors.is_empty() {
        judges::update(
            store,
            &admin,
            key,
            policy,
            &judge,
            &body,
            Changed::Different,
        )
        .await
    } else {
        read_settings(store, key, policy, &body, Some(&judge))
            .await
            .and(Err(ServiceError::Invalid(FieldErrors::new())))
    };
    match checked {
        Ok(judge) => {
            let query = serde_urlencoded::to_string([("changed", &judge.name)])
                .map_err(AppError::internal)?;
            return Ok(Redirect::to(&format!("/admin/judges?{query}")).into_response());
        }
        Err(ServiceError::Invalid(fields)) => errors.extend(fields),
        Err(other) => return Err(other.into()),
    }
    let form = JudgeForm {
        name: judge.name.clone(),
        api_key: String::new(),
        ..form
    };
    let judge = JudgeView::from(judge);
    let page = JudgePage {
        layout: page_user.layout,
        f: form_view(&state, form, errors, Some(&judge)),
        judge,
    };
    Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
}

/// Calls a page shows at once.
const CALLS_SHOWN: i64 = 100;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallsQuery {
    /// Only calls with this status.
    status: Option<CallStatus>,
    /// Calls to pass over (the pager's links set it).
    offset: Option<u32>,
}

/// One call as the page shows it.
struct CallItem {
    row: CallRow,
    /// Each answer's label, as the judge was shown the responses, and what became of it.
    fields: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "judges/calls.html")]
struct CallsPage {
    layout: Layout,
    run: RunView,
    batch_name: String,
    /// The filter in force.
    status: Option<CallStatus>,
    /// Each status with how many of the run's calls have it.
    counts: Vec<(CallStatus, i64)>,
    all: i64,
    calls: Vec<CallItem>,
    pager: PageLinks,
}

impl CallsPage {
    /// Whether the page shows only the calls with `status`.
    fn showing(&self, status: &CallStatus) -> bool {
        self.status == Some(*status)
    }
}

/// `GET /judge-runs/{id}/calls?status=&offset=`: a run's calls with their raw output and
/// what was read of it (admin, or a lead of the batch; 404 for anyone else).
async fn calls_page(
    RequireLead(lead): RequireLead,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<CallsQuery>,
) -> AppResult<Response> {
    let store = state.store();
    let run = store.run(id).await?.ok_or(AppError::NotFound)?;
    let summary = crate::batches::visible(&state, run.batch_id, &lead).await?;
    let rubric = store.batch_rubric(&summary.batch).await?;
    let offset = i64::from(query.offset.unwrap_or(0));
    let (mut rows, total) = store
        .calls_of_run(run.id, query.status, offset, CALLS_SHOWN)
        .await?;
    // What an endpoint sent with its error may carry what it knows: admins only read it.
    if lead.role != crate::auth::Role::Admin {
        for row in &mut rows {
            row.call.error_body = None;
        }
    }
    let run = run_view(store, run).await?;
    let calls: Vec<CallItem> = rows
        .into_iter()
        .map(|row| CallItem {
            fields: verdict_core::rubric::labelled_in_order(
                &rubric,
                row.call
                    .fields
                    .0
                    .iter()
                    .map(|(p, s)| (p.clone(), s.to_string())),
            ),
            row,
        })
        .collect();
    let href = |offset: i64| {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(status) = query.status {
            pairs.push(("status", status.as_str().to_owned()));
        }
        if offset > 0 {
            pairs.push(("offset", offset.to_string()));
        }
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        if query.is_empty() {
            format!("/judge-runs/{id}/calls")
        } else {
            format!("/judge-runs/{id}/calls?{query}")
        }
    };
    let shown = calls.len();
    let pager = PageLinks {
        shown,
        total,
        next: (offset + (shown as i64) < total).then(|| href(offset + CALLS_SHOWN)),
        first: (offset > 0).then(|| href(0)),
    };
    let counts = vec![
        (CallStatus::Answered, run.answered),
        (CallStatus::Unparsed, run.unparsed),
        (CallStatus::Failed, run.failed),
    ];
    let page = CallsPage {
        layout: page_user.layout,
        batch_name: summary.batch.name,
        status: query.status,
        all: counts.iter().map(|(_, n)| n).sum(),
        counts,
        calls,
        pager,
        run,
    };
    Ok(render(&page)?.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_becomes_the_api_body_with_empty_fields_left_out() {
        let form = JudgeForm {
            name: "local".into(),
            base_url: "http://127.0.0.1:8081/v1".into(),
            model: "qwen".into(),
            temperature: "0.2".into(),
            max_tokens: " 512 ".into(),
            seed: "-7".into(),
            structured_output: Some("on".into()),
            ..JudgeForm::fresh()
        };
        let (body, errors) = form.body(false);
        assert!(errors.is_empty());
        assert_eq!(
            body,
            json!({"name": "local", "base_url": "http://127.0.0.1:8081/v1", "model": "qwen",
                   "temperature": 0.2, "max_tokens": 512, "seed": -7, "structured_output": true,
                   "concurrency": 4, "requests_per_minute": 60})
        );
    }

    #[test]
    fn a_change_sends_every_field_but_the_name_and_empty_numbers_as_defaults() {
        let form = JudgeForm {
            name: "local".into(),
            base_url: "".into(),
            model: "qwen".into(),
            seed: "7".into(),
            ..JudgeForm::default()
        };
        let (body, _) = form.body(true);
        assert_eq!(
            body,
            json!({"base_url": "", "model": "qwen", "temperature": null, "max_tokens": null,
                   "seed": 7, "timeout_s": null, "max_text_chars": null, "max_reply_bytes": null,
                   "concurrency": null, "requests_per_minute": null, "structured_output": false})
        );
    }

    #[test]
    fn what_is_not_a_number_is_passed_on_for_the_check_to_name() {
        let form = JudgeForm {
            temperature: "warm".into(),
            max_tokens: "1.5".into(),
            concurrency: "NaN".into(),
            templates: "{not json".into(),
            ..JudgeForm::default()
        };
        let (body, errors) = form.body(false);
        assert_eq!(body["temperature"], "warm");
        assert_eq!(body["max_tokens"], 1.5);
        assert_eq!(body["concurrency"], "NaN");
        assert_eq!(body["structured_output"], false, "an unticked box is false");
        assert!(body.get("templates").is_none());
        assert!(errors["templates"].starts_with("is not JSON"), "{errors:?}");
    }
}
