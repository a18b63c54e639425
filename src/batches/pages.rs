//! The admin's batch pages: the list with the upload form, and each batch's settings.
//!
//! Saving settings is two steps: the form is checked whole (every broken field shown at
//! once, nothing changed), then a confirmation lists each setting that would change,
//! before and after, and only Confirm applies it.

use std::collections::BTreeMap;

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use super::{BatchView, view, visible};
use crate::auth::PageUser;
use crate::auth::csrf::CsrfForm;
use crate::auth::{RequireAdmin, Role};
use crate::error::{AppError, AppResult, FieldErrors};
use crate::services::ServiceError;
use crate::services::batches::settings::{self as service, Change, Settings, SettingsChange};
use crate::state::AppState;
use crate::web::{ApiPath, ApiQuery, Layout, render};
use verdict_core::rubric::{Classification, MAX_OPTIONS};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/admin/batches", get(list))
        .route("/admin/batches/{id}", get(settings).post(save))
        .route("/admin/batches/{id}/confirm", post(confirm))
}

#[derive(Template)]
#[template(path = "batches/admin_list.html")]
struct ListPage {
    layout: Layout,
    batches: Vec<BatchView>,
    rubrics: Vec<String>,
    max_upload_mb: u64,
    /// The deleted batches, each with when it will be purged.
    deleted: Vec<(crate::store::corrections::DeletedBatch, String)>,
    /// What was just done (a batch deleted or restored).
    notice: Option<String>,
}

/// What the list says was just done.
#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    deleted: Option<String>,
    restored: Option<String>,
}

async fn list(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> AppResult<Response> {
    let notice = match (query.deleted, query.restored) {
        (Some(name), _) => Some(format!(
            "Deleted {name:?}: it can be restored below until it is purged."
        )),
        (None, Some(name)) => Some(format!("Restored {name:?}.")),
        (None, None) => None,
    };
    let retention = state.config().deleted_retention;
    let deleted = crate::services::corrections::deleted(state.store(), retention)
        .await?
        .into_iter()
        .map(|(b, purge_at)| (b, purge_at.format("%Y-%m-%d %H:%M UTC").to_string()))
        .collect();
    let mut batches = Vec::new();
    for summary in state
        .store()
        .visible_batches(page_user.user.id, page_user.user.role)
        .await?
    {
        batches.push(view(&state, summary, &page_user.user).await?);
    }
    let page = ListPage {
        layout: page_user.layout,
        batches,
        rubrics: state.store().rubric_names().await?,
        max_upload_mb: state.config().max_upload_bytes / (1024 * 1024),
        deleted,
        notice,
    };
    Ok(render(&page)?.into_response())
}

#[derive(Template)]
#[template(path = "batches/admin_settings.html")]
struct SettingsPage {
    layout: Layout,
    batch: BatchView,
    form: SettingsForm,
    /// Every broken field, by its path.
    errors: FieldErrors,
    /// What the last save did, or why nothing was saved.
    notice: Option<String>,
    /// The raters' and the leads' pickers.
    groups: [MemberGroup; 2],
    max_options: usize,
}

/// The users who may be ticked as the batch's raters, or its leads.
struct MemberGroup {
    /// The form field of the choice between all and some (`raters`, `leads`).
    field: &'static str,
    /// One of them (`rater`), also the name of each checkbox.
    one: &'static str,
    title: &'static str,
    /// Restricted to those ticked.
    only: bool,
    choices: Vec<Choice>,
}

impl SettingsPage {
    /// The message of a field's error, in words, for the summary at the top.
    fn summary(&self) -> Vec<String> {
        self.errors
            .iter()
            .map(|(path, why)| format!("{}: {why}", field_label(path)))
            .collect()
    }
}

/// A field path in words: `classifications[1].key` is "Question 2, key".
fn field_label(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("classifications[")
        && let Some((index, field)) = rest.split_once("].")
        && let Ok(i) = index.parse::<usize>()
    {
        return format!("Classification question {}, {field}", i + 1);
    }
    match path {
        "classifications" => "Classification questions (JSON)".into(),
        other => service::label(other).into(),
    }
}

/// A user who may be ticked as a rater or lead of the batch.
struct Choice {
    username: String,
    /// Said beside the name when it is not the list's own role (or the account is off).
    note: Option<String>,
    checked: bool,
}

/// One classification question on the form, as typed.
#[derive(Debug, Default, Clone)]
struct QuestionRow {
    key: String,
    label: String,
    /// One option a line.
    options: String,
    multiple: bool,
    required: bool,
    remove: bool,
    /// What is wrong with it, in words.
    errors: Vec<String>,
}

impl QuestionRow {
    fn blank() -> Self {
        Self {
            required: true,
            ..Self::default()
        }
    }

    /// Lines the options box shows: every option and one more, at least 4.
    fn rows(&self) -> usize {
        (self.options.lines().count() + 1).clamp(4, MAX_OPTIONS + 1)
    }

    fn is_blank(&self) -> bool {
        self.key.trim().is_empty() && self.label.trim().is_empty() && self.options.trim().is_empty()
    }

    fn question(&self) -> Classification {
        Classification {
            key: self.key.trim().to_owned(),
            label: self.label.trim().to_owned(),
            multiple: self.multiple,
            required: self.required,
            options: self
                .options
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// The settings form, as typed.
#[derive(Debug, Default, Clone)]
struct SettingsForm {
    state: String,
    overlap: String,
    /// Blank for the same as `overlap` (no escalation); `None` when the form did not
    /// send it (a form from before the setting): kept.
    max_overlap: Option<String>,
    /// The rule for one more rater as typed; blank for the rubric's default. `None`
    /// when the form did not send it: kept.
    escalate: Option<String>,
    /// The task field to route by as typed; blank for none. `None` when the form did
    /// not send it: kept (as `routing`).
    route_by: Option<String>,
    routing: Option<String>,
    randomize: bool,
    raters_see_external_ids: bool,
    lease_minutes: String,
    min_explanation_len: String,
    /// `None` when the form did not send it (a form from before the setting): kept.
    bradley_terry_prior: Option<String>,
    /// `None` when the form did not send it: kept.
    final_method: Option<String>,
    /// Restricted to the ticked raters (else every rater may work on it).
    raters_only: bool,
    raters: Vec<String>,
    leads_only: bool,
    leads: Vec<String>,
    /// The questions, the last one blank for a new one.
    questions: Vec<QuestionRow>,
    /// Take the questions from the JSON below instead of the rows.
    use_json: bool,
    classifications_json: String,
    /// The JSON as the page showed it: edited without `use_json`, it would be ignored
    /// silently, so that is an error instead.
    classifications_shown: String,
}

impl SettingsForm {
    fn of(settings: &Settings) -> Self {
        let mut questions: Vec<QuestionRow> = settings
            .classifications
            .iter()
            .map(|q| QuestionRow {
                key: q.key.clone(),
                label: q.label.clone(),
                options: q.options.join("\n"),
                multiple: q.multiple,
                required: q.required,
                remove: false,
                errors: vec![],
            })
            .collect();
        questions.push(QuestionRow::blank());
        Self {
            state: settings.state.to_string(),
            overlap: settings.overlap.to_string(),
            max_overlap: Some(if settings.max_overlap == settings.overlap {
                String::new()
            } else {
                settings.max_overlap.to_string()
            }),
            escalate: Some(settings.escalate.clone().unwrap_or_default()),
            route_by: Some(settings.route_by.clone().unwrap_or_default()),
            routing: Some(settings.routing.clone()),
            randomize: settings.randomize,
            raters_see_external_ids: settings.raters_see_external_ids,
            lease_minutes: settings.lease_minutes.to_string(),
            min_explanation_len: settings.min_explanation_len.to_string(),
            bradley_terry_prior: Some(settings.bradley_terry_prior.to_string()),
            final_method: Some(settings.final_method.clone()),
            raters_only: settings.raters.is_some(),
            raters: settings.raters.clone().unwrap_or_default(),
            leads_only: settings.leads.is_some(),
            leads: settings.leads.clone().unwrap_or_default(),
            questions,
            use_json: false,
            classifications_json: serde_json::to_string_pretty(&settings.classifications)
                .unwrap_or_default(),
            classifications_shown: serde_json::to_string_pretty(&settings.classifications)
                .unwrap_or_default(),
        }
    }

    /// Reads the posted fields; questions are `q<n>.<field>`, in the order of `n`.
    fn parse(pairs: Vec<(String, String)>) -> Self {
        let mut form = Self::default();
        let mut rows: BTreeMap<usize, QuestionRow> = BTreeMap::new();
        for (name, value) in pairs {
            if let Some(rest) = name.strip_prefix('q')
                && let Some((index, field)) = rest.split_once('.')
                && let Ok(index) = index.parse::<usize>()
            {
                let row = rows.entry(index).or_default();
                match field {
                    "key" => row.key = value,
                    "label" => row.label = value,
                    "options" => row.options = value,
                    "multiple" => row.multiple = true,
                    "required" => row.required = true,
                    "remove" => row.remove = true,
                    _ => {}
                }
                continue;
            }
            match name.as_str() {
                "state" => form.state = value,
                "overlap" => form.overlap = value,
                "max_overlap" => form.max_overlap = Some(value),
                "escalate" => form.escalate = Some(value),
                "route_by" => form.route_by = Some(value),
                "routing" => form.routing = Some(value),
                "randomize" => form.randomize = true,
                "raters_see_external_ids" => form.raters_see_external_ids = true,
                "lease_minutes" => form.lease_minutes = value,
                "min_explanation_len" => form.min_explanation_len = value,
                "bradley_terry_prior" => form.bradley_terry_prior = Some(value),
                "final_method" => form.final_method = Some(value),
                "raters_scope" => form.raters_only = value == "only",
                "rater" => form.raters.push(value),
                "leads_scope" => form.leads_only = value == "only",
                "lead" => form.leads.push(value),
                "use_json" => form.use_json = true,
                "classifications" => form.classifications_json = value,
                "classifications_shown" => form.classifications_shown = value,
                _ => {}
            }
        }
        form.questions = rows.into_values().collect();
        if !form.questions.last().is_some_and(QuestionRow::is_blank) {
            form.questions.push(QuestionRow::blank());
        }
        form
    }

    /// The form as a settings change, and what is wrong with it before the settings'
    /// own checks: fields that are not numbers or JSON, member lists left empty. Also
    /// the row each question came from, to show its errors beside it.
    fn request(&self) -> (SettingsChange, FieldErrors, Vec<usize>) {
        let mut fields = FieldErrors::new();
        let mut number = |name: &str, text: &str| match text.trim().parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => {
                fields.insert(name.into(), "must be a whole number".into());
                None
            }
        };
        let overlap = number("overlap", &self.overlap);
        let max_overlap = match self.max_overlap.as_deref().map(str::trim) {
            None => None,
            Some("") => overlap,
            Some(text) => number("max_overlap", text),
        };
        let lease_minutes = number("lease_minutes", &self.lease_minutes);
        let min_explanation_len = number("min_explanation_len", &self.min_explanation_len);
        let bradley_terry_prior = self.bradley_terry_prior.as_ref().and_then(|text| {
            let prior = text.trim().parse::<f64>();
            if prior.is_err() {
                fields.insert("bradley_terry_prior".into(), "must be a number".into());
            }
            prior.ok()
        });
        let mut rows = Vec::new();
        let classifications = if self.use_json {
            if self.classifications_json.trim().is_empty() {
                Some(vec![])
            } else {
                match serde_json::from_str::<Vec<Classification>>(&self.classifications_json) {
                    Ok(questions) => Some(questions),
                    Err(e) => {
                        fields.insert(
                            "classifications".into(),
                            format!("is not a list of questions: {e}"),
                        );
                        None
                    }
                }
            }
        } else {
            // Browsers send textareas with CRLF line ends.
            let crlf = |text: &str| text.replace("\r\n", "\n").trim().to_owned();
            if crlf(&self.classifications_json) != crlf(&self.classifications_shown) {
                fields.insert(
                    "classifications".into(),
                    "was edited: tick \"Use this JSON\" to save it instead of the question \
                     rows, or undo the edit"
                        .into(),
                );
            }
            let mut questions = Vec::new();
            for (i, row) in self.questions.iter().enumerate() {
                if row.remove || row.is_blank() {
                    continue;
                }
                rows.push(i);
                questions.push(row.question());
            }
            Some(questions)
        };
        let mut members = |name: &str, only: bool, names: &[String], who: &str| {
            if !only {
                return Some(None);
            }
            if names.is_empty() {
                fields.insert(
                    name.into(),
                    format!("tick at least one {who}, or let every {who} work on it"),
                );
            }
            Some(Some(names.to_vec()))
        };
        let raters = members("raters", self.raters_only, &self.raters, "rater");
        let leads = members("leads", self.leads_only, &self.leads, "lead");
        let request = SettingsChange {
            state: Some(self.state.clone()),
            overlap,
            max_overlap,
            escalate: self
                .escalate
                .as_ref()
                .map(|text| Some(text.trim().to_owned()).filter(|t| !t.is_empty())),
            route_by: self
                .route_by
                .as_ref()
                .map(|text| Some(text.trim().to_owned()).filter(|t| !t.is_empty())),
            routing: self.routing.as_ref().map(|text| text.trim().to_owned()),
            randomize: Some(self.randomize),
            raters_see_external_ids: Some(self.raters_see_external_ids),
            lease_minutes,
            min_explanation_len,
            bradley_terry_prior,
            final_method: self.final_method.clone(),
            classifications,
            raters,
            leads,
        };
        (request, fields, rows)
    }

    /// Puts each question's errors beside its row (`rows[i]` is question i's row).
    fn place_errors(&mut self, errors: &FieldErrors, rows: &[usize]) {
        for (path, why) in errors {
            let Some(rest) = path.strip_prefix("classifications[") else {
                continue;
            };
            let Some((index, field)) = rest.split_once("].") else {
                continue;
            };
            let row = index
                .parse::<usize>()
                .ok()
                .and_then(|i| rows.get(i))
                .and_then(|r| self.questions.get_mut(*r));
            if let Some(row) = row {
                row.errors.push(format!("{field} {why}"));
            }
        }
    }
}

/// The users who may be ticked for `role`: the active accounts of that role, and anyone
/// ticked now (marked when their role or state is not what the list expects).
async fn choices(state: &AppState, role: Role, ticked: &[String]) -> AppResult<Vec<Choice>> {
    let users = state.store().list_users().await?;
    let mut out: Vec<Choice> = users
        .iter()
        .filter(|u| (u.active && u.role == role) || ticked.contains(&u.username))
        .map(|u| Choice {
            username: u.username.clone(),
            note: if !u.active {
                Some("deactivated".into())
            } else if u.role != role {
                Some(u.role.to_string())
            } else {
                None
            },
            checked: ticked.contains(&u.username),
        })
        .collect();
    // A name ticked that is no account (any more) stays visible, so it can be unticked.
    for name in ticked {
        if !users.iter().any(|u| &u.username == name) {
            out.push(Choice {
                username: name.clone(),
                note: Some("no such user".into()),
                checked: true,
            });
        }
    }
    Ok(out)
}

async fn settings_page(
    state: &AppState,
    page_user: PageUser,
    id: Uuid,
    form: SettingsForm,
    errors: FieldErrors,
    notice: Option<String>,
) -> AppResult<SettingsPage> {
    let batch = view(
        state,
        visible(state, id, &page_user.user).await?,
        &page_user.user,
    )
    .await?;
    let groups = [
        MemberGroup {
            field: "raters",
            one: "rater",
            title: "Raters",
            only: form.raters_only,
            choices: choices(state, Role::Rater, &form.raters).await?,
        },
        MemberGroup {
            field: "leads",
            one: "lead",
            title: "Leads",
            only: form.leads_only,
            choices: choices(state, Role::Lead, &form.leads).await?,
        },
    ];
    Ok(SettingsPage {
        groups,
        layout: page_user.layout,
        batch,
        form,
        errors,
        notice,
        max_options: MAX_OPTIONS,
    })
}

async fn current(state: &AppState, id: Uuid) -> AppResult<Settings> {
    let batch = state.store().batch(id).await?.ok_or(AppError::NotFound)?;
    let members = state.store().batch_members(id).await?;
    Ok(Settings::of(&batch, &members))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsQuery {
    /// The settings just saved, comma-separated (after the confirmation's redirect).
    saved: Option<String>,
}

async fn settings(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<SettingsQuery>,
) -> AppResult<Response> {
    visible(&state, id, &page_user.user).await?;
    let form = SettingsForm::of(&current(&state, id).await?);
    let notice = query.saved.and_then(|saved| {
        let names: Vec<&str> = saved
            .split(',')
            .filter(|s| service::SETTINGS.contains(s))
            .map(service::label)
            .collect();
        (!names.is_empty()).then(|| format!("Saved: {} changed.", names.join(", ")))
    });
    let page = settings_page(&state, page_user, id, form, FieldErrors::new(), notice).await?;
    Ok(render(&page)?.into_response())
}

#[derive(Template)]
#[template(path = "batches/admin_confirm.html")]
struct ConfirmPage {
    layout: Layout,
    batch: BatchView,
    changes: Vec<Change>,
    /// The settings to apply, as JSON, carried by the Confirm form.
    settings: String,
    /// The changes the admin saw, as JSON: Confirm applies them only if they are still
    /// what the settings would change.
    expected: String,
    /// Raters lose the tasks they hold when taken off.
    raters_removed: bool,
    /// Set when the batch changed since the confirmation was shown.
    notice: Option<String>,
}

async fn confirm_page(
    state: &AppState,
    page_user: PageUser,
    id: Uuid,
    after: &Settings,
    changes: Vec<Change>,
    notice: Option<String>,
) -> AppResult<ConfirmPage> {
    let batch = view(
        state,
        visible(state, id, &page_user.user).await?,
        &page_user.user,
    )
    .await?;
    let raters_removed = changes.iter().any(|c| {
        c.setting == "raters"
            && match (&c.before, &c.after) {
                (_, serde_json::Value::Null) => false,
                (serde_json::Value::Array(before), serde_json::Value::Array(after)) => {
                    before.iter().any(|name| !after.contains(name))
                }
                _ => true,
            }
    });
    Ok(ConfirmPage {
        layout: page_user.layout,
        batch,
        settings: serde_json::to_string(after).map_err(AppError::internal)?,
        expected: serde_json::to_string(&changes).map_err(AppError::internal)?,
        changes,
        raters_removed,
        notice,
    })
}

/// `POST /admin/batches/{id}`: checks the form whole; shows every error, or that nothing
/// would change, or the confirmation of what would.
async fn save(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(pairs): CsrfForm<Vec<(String, String)>>,
) -> AppResult<Response> {
    visible(&state, id, &page_user.user).await?;
    let mut form = SettingsForm::parse(pairs);
    let (request, known, rows) = form.request();
    match service::preview(state.store(), id, request, known).await {
        Ok(preview) if preview.changes.is_empty() => {
            let form = SettingsForm::of(&preview.before);
            let notice = Some("Nothing to save: the settings are as they were.".into());
            let page = settings_page(&state, page_user, id, form, FieldErrors::new(), notice);
            Ok(render(&page.await?)?.into_response())
        }
        Ok(preview) => {
            let page =
                confirm_page(&state, page_user, id, &preview.after, preview.changes, None).await?;
            Ok(render(&page)?.into_response())
        }
        Err(ServiceError::Invalid(fields)) => {
            form.place_errors(&fields, &rows);
            let page = settings_page(&state, page_user, id, form, fields, None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(other) => Err(other.into()),
    }
}

#[derive(Debug, Deserialize)]
struct ConfirmForm {
    #[serde(default)]
    settings: String,
    #[serde(default)]
    expected: String,
}

/// `POST /admin/batches/{id}/confirm`: applies the confirmed settings, if they still make
/// the changes the admin confirmed; otherwise shows the confirmation again.
async fn confirm(
    _: RequireAdmin,
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<ConfirmForm>,
) -> AppResult<Response> {
    visible(&state, id, &page_user.user).await?;
    let after: Settings = match serde_json::from_str(&form.settings) {
        Ok(after) => after,
        Err(e) => {
            let fields = FieldErrors::from([(
                "settings".to_owned(),
                format!("is not the settings the confirmation carries: {e}"),
            )]);
            return Err(AppError::invalid(fields));
        }
    };
    let expected: Option<Vec<Change>> = serde_json::from_str(&form.expected).ok();
    match service::preview(state.store(), id, after.clone().into(), FieldErrors::new()).await {
        Ok(preview) if expected.as_ref() == Some(&preview.changes) => {
            let (_, changes) =
                service::apply(state.store(), preview, Some(&page_user.user)).await?;
            let saved: Vec<&str> = changes.iter().map(|c| c.setting.as_str()).collect();
            let to = format!("/admin/batches/{id}?saved={}", saved.join(","));
            Ok(Redirect::to(&to).into_response())
        }
        Ok(preview) if preview.changes.is_empty() => {
            let form = SettingsForm::of(&preview.before);
            let notice = Some("Nothing to save: the settings are already these.".into());
            let page = settings_page(&state, page_user, id, form, FieldErrors::new(), notice);
            Ok((StatusCode::CONFLICT, render(&page.await?)?).into_response())
        }
        Ok(preview) => {
            let notice = Some(
                "The batch's settings changed since this confirmation was shown: check the \
                 changes again."
                    .into(),
            );
            let changes = preview.changes;
            let page = confirm_page(&state, page_user, id, &preview.after, changes, notice);
            Ok((StatusCode::CONFLICT, render(&page.await?)?).into_response())
        }
        Err(ServiceError::Invalid(fields)) => {
            let mut form = SettingsForm::of(&after);
            let rows: Vec<usize> = (0..after.classifications.len()).collect();
            form.place_errors(&fields, &rows);
            let page = settings_page(&state, page_user, id, form, fields, None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)?).into_response())
        }
        Err(other) => Err(other.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn question_rows_become_questions_and_removed_or_blank_rows_do_not() {
        let form = SettingsForm::parse(pairs(&[
            ("state", "open"),
            ("overlap", "2"),
            ("lease_minutes", "45"),
            ("min_explanation_len", "20"),
            ("q0.key", "language"),
            ("q0.label", "Language"),
            ("q0.options", "python\r\n rust \n\n"),
            ("q0.required", "on"),
            ("q1.key", "old"),
            ("q1.label", "Old"),
            ("q1.options", "x"),
            ("q1.remove", "on"),
            ("q2.key", "kind"),
            ("q2.label", "Kind"),
            ("q2.options", "bug\nfeature"),
            ("q2.multiple", "on"),
            ("q3.key", ""),
            ("q3.label", ""),
            ("q3.options", ""),
        ]));
        let (request, errors, rows) = form.request();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(rows, [0, 2]);
        let questions = request.classifications.unwrap();
        assert_eq!(questions.len(), 2);
        assert_eq!(questions[0].options, ["python", "rust"]);
        assert!(questions[0].required && !questions[0].multiple);
        assert!(!questions[1].required && questions[1].multiple);
        assert_eq!(request.raters, Some(None), "every rater");
    }

    #[test]
    fn every_field_that_is_not_a_number_is_named_and_errors_sit_beside_their_row() {
        let mut form = SettingsForm::parse(pairs(&[
            ("overlap", "two"),
            ("lease_minutes", ""),
            ("min_explanation_len", "5"),
            ("raters_scope", "only"),
            ("q0.key", "gone"),
            ("q0.remove", "on"),
            ("q1.key", "Bad Key"),
        ]));
        let (_, errors, rows) = form.request();
        assert_eq!(
            errors.keys().collect::<Vec<_>>(),
            ["lease_minutes", "overlap", "raters"]
        );
        let more = FieldErrors::from([(
            "classifications[0].key".to_owned(),
            "must be 1-64 of a-z, 0-9 and _".to_owned(),
        )]);
        form.place_errors(&more, &rows);
        assert!(form.questions[0].errors.is_empty());
        assert_eq!(
            form.questions[1].errors,
            ["key must be 1-64 of a-z, 0-9 and _"]
        );
        assert_eq!(
            field_label("classifications[0].key"),
            "Classification question 1, key"
        );
    }

    #[test]
    fn json_edited_without_choosing_it_is_an_error_not_ignored() {
        let shown = "[\n  {\"key\": \"a\"}\n]";
        let form = |json: &str, use_json: bool| {
            let mut fields = vec![
                ("overlap", "1"),
                ("lease_minutes", "45"),
                ("min_explanation_len", "20"),
                ("classifications", json),
                ("classifications_shown", shown),
            ];
            if use_json {
                fields.push(("use_json", "on"));
            }
            SettingsForm::parse(pairs(&fields)).request().1
        };
        assert!(
            form(&shown.replace('\n', "\r\n"), false).is_empty(),
            "CRLF is no edit"
        );
        let edited = form("[]", false);
        assert!(
            edited["classifications"].starts_with("was edited"),
            "{edited:?}"
        );
        assert!(form("[]", true).is_empty());
    }
}
