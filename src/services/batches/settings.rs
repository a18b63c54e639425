//! A batch's settings: a change is checked whole (every broken field reported, nothing
//! changed), compared with what the batch has, and only what really differs is written
//! and recorded in the audit log, as each setting before and after.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{MAX_LEASE_MINUTES, MAX_MIN_EXPLANATION, MAX_OVERLAP};
use crate::services::{FieldErrors, ServiceError, ServiceResult};
use crate::store::Store;
use crate::store::batches::BatchChanges;
use verdict_core::batch::Batch;
use verdict_core::lifecycle::BatchState;
use verdict_core::role::Role;
use verdict_core::routing::{RouteBy, Routing};
use verdict_core::rubric::Classification;
use verdict_core::user::User;

/// A change to a batch's settings, as the API, the settings page or the demo asks it;
/// an absent setting keeps its value.
#[derive(Debug, Default, Clone)]
pub struct SettingsChange {
    /// `open` or `closed`, as given (checked here).
    pub state: Option<String>,
    pub overlap: Option<i32>,
    /// The most raters a task is asked of (see [`verdict_core::overlap`]).
    pub max_overlap: Option<i32>,
    /// The rule for one more rater, as written; `Some(None)` goes back to the rubric's
    /// default.
    pub escalate: Option<Option<String>>,
    /// The task field to route by, as written (`metadata.<key>`); `Some(None)` (or
    /// blank) routes nothing.
    pub route_by: Option<Option<String>>,
    /// `prefer` or `strict`, as given (checked here).
    pub routing: Option<String>,
    pub randomize: Option<bool>,
    pub raters_see_external_ids: Option<bool>,
    pub lease_minutes: Option<i32>,
    pub min_explanation_len: Option<i32>,
    /// The Bradley-Terry ranking's prior (checked here: see
    /// [`verdict_core::metrics::bradley_terry::check_prior`]).
    pub bradley_terry_prior: Option<f64>,
    /// `majority` or `dawid_skene`, as given (checked here).
    pub final_method: Option<String>,
    pub classifications: Option<Vec<Classification>>,
    /// Usernames who may rate; `Some(None)` opens the batch to every rater.
    pub raters: Option<Option<Vec<String>>>,
    /// Usernames who may lead; `Some(None)` lets every lead lead it.
    pub leads: Option<Option<Vec<String>>>,
}

impl From<Settings> for SettingsChange {
    /// A change that sets every setting to these.
    fn from(s: Settings) -> Self {
        Self {
            state: Some(s.state.to_string()),
            overlap: Some(s.overlap),
            max_overlap: Some(s.max_overlap),
            escalate: Some(s.escalate),
            route_by: Some(s.route_by),
            routing: Some(s.routing),
            randomize: Some(s.randomize),
            raters_see_external_ids: Some(s.raters_see_external_ids),
            lease_minutes: Some(s.lease_minutes),
            min_explanation_len: Some(s.min_explanation_len),
            bradley_terry_prior: Some(s.bradley_terry_prior),
            final_method: Some(s.final_method),
            classifications: Some(s.classifications),
            raters: Some(s.raters),
            leads: Some(s.leads),
        }
    }
}

/// Every setting an admin may change, whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub state: BatchState,
    pub overlap: i32,
    /// The most raters a task is asked of when its answers disagree; `overlap` when the
    /// batch does not escalate.
    pub max_overlap: i32,
    /// The rule for one more rater, as the batch keeps it (`<rule>:<question>[:<n>]`);
    /// `None`: the rubric's default.
    pub escalate: Option<String>,
    /// The task field the batch routes by (`metadata.<key>`); `None`: no routing.
    pub route_by: Option<String>,
    /// `prefer` or `strict`.
    pub routing: String,
    pub randomize: bool,
    pub raters_see_external_ids: bool,
    pub lease_minutes: i32,
    pub min_explanation_len: i32,
    pub bradley_terry_prior: f64,
    /// `majority` or `dawid_skene`: how the final dataset answers a task no lead
    /// adjudicated.
    #[serde(default = "majority")]
    pub final_method: String,
    pub classifications: Vec<Classification>,
    /// The usernames the batch is restricted to, sorted; `None`: every rater.
    pub raters: Option<Vec<String>>,
    /// The same for leads; `None`: every lead.
    pub leads: Option<Vec<String>>,
}

impl Settings {
    /// A batch's settings; `members` are its (role, username) rows.
    pub fn of(batch: &Batch, members: &[(String, String)]) -> Self {
        let of = |role: &str, restricted: bool| {
            restricted.then(|| {
                let mut names: Vec<String> = members
                    .iter()
                    .filter(|(r, _)| r == role)
                    .map(|(_, u)| u.clone())
                    .collect();
                names.sort();
                names
            })
        };
        Self {
            state: batch.state,
            overlap: batch.overlap,
            max_overlap: batch.most_raters(),
            escalate: batch.escalate.clone(),
            route_by: batch.route_by.as_ref().map(ToString::to_string),
            routing: batch.routing.to_string(),
            randomize: batch.randomize,
            raters_see_external_ids: batch.raters_see_external_ids,
            lease_minutes: batch.lease_minutes,
            min_explanation_len: batch.min_explanation_len,
            bradley_terry_prior: batch.bradley_terry_prior,
            final_method: batch.final_method.as_str().to_owned(),
            classifications: batch.classifications.clone(),
            raters: of("rater", batch.raters_restricted),
            leads: of("lead", batch.leads_restricted),
        }
    }

    /// Each setting as JSON, in the order the settings page asks them.
    fn values(&self) -> Vec<(&'static str, Value)> {
        let values = [
            json!(self.state),
            json!(self.overlap),
            json!(self.max_overlap),
            json!(self.escalate),
            json!(self.route_by),
            json!(self.routing),
            json!(self.randomize),
            json!(self.raters_see_external_ids),
            json!(self.lease_minutes),
            json!(self.min_explanation_len),
            json!(self.bradley_terry_prior),
            json!(self.final_method),
            json!(self.classifications),
            json!(self.raters),
            json!(self.leads),
        ];
        SETTINGS.into_iter().zip(values).collect()
    }

    /// The settings that differ in `after`, in the order the settings page asks them.
    /// The most raters of a batch that does not escalate follows its overlap, and is no
    /// change of its own.
    pub fn changes_to(&self, after: &Settings) -> Vec<Change> {
        let follows = self.max_overlap == self.overlap && after.max_overlap == after.overlap;
        self.values()
            .into_iter()
            .zip(after.values())
            .filter(|((setting, _), _)| !(follows && *setting == "max_overlap"))
            .filter(|((_, before), (_, after))| before != after)
            .map(|((setting, before), (_, after))| Change {
                setting: setting.to_owned(),
                before,
                after,
            })
            .collect()
    }
}

/// One setting that changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Its name in the API (`overlap`, `raters`, ...).
    pub setting: String,
    pub before: Value,
    pub after: Value,
}

impl Change {
    pub fn label(&self) -> &'static str {
        label(&self.setting)
    }

    pub fn before_text(&self) -> String {
        describe(&self.setting, &self.before)
    }

    pub fn after_text(&self) -> String {
        describe(&self.setting, &self.after)
    }
}

pub use verdict_core::settings::{SETTINGS, describe, label};

/// What a change would do to a batch, checked.
pub struct Preview {
    pub batch: Batch,
    pub before: Settings,
    pub after: Settings,
    pub changes: Vec<Change>,
    /// The members the change sets, as ids (when it sets them).
    raters: Option<Option<Vec<Uuid>>>,
    leads: Option<Option<Vec<Uuid>>>,
}

/// Checks `request` against batch `id` and works out what it would change, without
/// changing anything. Every broken field is reported at once (422), together with
/// `known`: problems the caller found first (a form field that is not a number, say).
pub async fn preview(
    store: &Store,
    id: Uuid,
    request: SettingsChange,
    mut known: FieldErrors,
) -> ServiceResult<Preview> {
    let batch = store.batch(id).await?.ok_or(ServiceError::NotFound)?;
    let now = store.batch_members(id).await?;
    let before = Settings::of(&batch, &now);
    let fields = &mut known;
    let batch_state = match request.state.as_deref().map(str::parse::<BatchState>) {
        Some(Err(unknown)) => {
            // `unknown state "x": use open or closed`
            fields.insert("state".into(), unknown.to_string());
            None
        }
        Some(Ok(state)) => Some(state),
        None => None,
    };
    let ranges = [
        ("overlap", request.overlap, 1, MAX_OVERLAP),
        ("max_overlap", request.max_overlap, 1, MAX_OVERLAP),
        ("lease_minutes", request.lease_minutes, 1, MAX_LEASE_MINUTES),
        (
            "min_explanation_len",
            request.min_explanation_len,
            0,
            MAX_MIN_EXPLANATION,
        ),
    ];
    for (name, value, min, max) in ranges {
        if let Some(v) = value
            && !(min..=max).contains(&v)
        {
            fields.insert(name.into(), format!("must be from {min} to {max}"));
        }
    }
    if let Some(prior) = request.bradley_terry_prior
        && let Err(bad) = verdict_core::metrics::bradley_terry::check_prior(prior)
    {
        fields.insert("bradley_terry_prior".into(), bad.to_string());
    }
    if let Some(method) = &request.final_method
        && verdict_core::batch::FinalMethod::parse(method.trim()).is_none()
    {
        fields.insert(
            "final_method".into(),
            format!("unknown method {method:?}: use majority or dawid_skene"),
        );
    }
    if let Some(questions) = &request.classifications {
        check_questions(questions, fields);
    }
    // The most raters follow the first when the batch does not escalate; a rule is
    // checked against the rubric version the batch pins, and kept as read (its defaults
    // written out), so that it means the same however the rubric's defaults move.
    let overlap = request.overlap.unwrap_or(before.overlap);
    let max_overlap = request
        .max_overlap
        .unwrap_or(if before.max_overlap == before.overlap {
            overlap
        } else {
            before.max_overlap
        });
    if max_overlap < overlap && !fields.contains_key("max_overlap") {
        fields.insert(
            "max_overlap".into(),
            format!("must be at least the raters per task ({overlap})"),
        );
    }
    let rubric = store.batch_rubric(&batch).await?;
    let escalate = match request.escalate {
        Some(Some(text)) if !text.trim().is_empty() => {
            match verdict_core::overlap::Escalation::parse(&text, &rubric) {
                Ok(rule) => Some(Some(rule.to_string())),
                Err(why) => {
                    fields.insert("escalate".into(), why);
                    None
                }
            }
        }
        Some(_) => Some(None),
        None => None,
    };
    let escalate = escalate.unwrap_or_else(|| before.escalate.clone());
    if max_overlap > overlap
        && escalate.is_none()
        && verdict_core::overlap::Escalation::default_for(&rubric).is_none()
        && !fields.contains_key("max_overlap")
    {
        fields.insert(
            "escalate".into(),
            format!(
                "the rubric {} has no preference or choice to escalate on by default: name a rule, e.g. spread:<n>",
                rubric.name
            ),
        );
    }
    let route_by = match request.route_by {
        Some(Some(text)) if !text.trim().is_empty() => match RouteBy::parse(&text) {
            Ok(route) => Some(Some(route.to_string())),
            Err(why) => {
                fields.insert("route_by".into(), why);
                None
            }
        },
        Some(_) => Some(None),
        None => None,
    };
    let routing = match request.routing.as_deref().map(str::parse::<Routing>) {
        Some(Ok(routing)) => Some(routing.to_string()),
        Some(Err(why)) => {
            fields.insert("routing".into(), why);
            None
        }
        None => None,
    };
    let raters = members(store, "raters", request.raters, Role::Rater, fields).await?;
    let leads = members(store, "leads", request.leads, Role::Lead, fields).await?;
    if !known.is_empty() {
        return Err(ServiceError::Invalid(known));
    }
    let names = |resolved: &Option<Option<Vec<(Uuid, String)>>>, now: &Option<Vec<String>>| {
        match resolved {
            None => now.clone(),
            Some(None) => None,
            Some(Some(users)) => {
                let mut names: Vec<String> = users.iter().map(|(_, n)| n.clone()).collect();
                names.sort();
                Some(names)
            }
        }
    };
    let after = Settings {
        state: batch_state.unwrap_or(before.state),
        overlap,
        max_overlap,
        escalate,
        route_by: route_by.unwrap_or_else(|| before.route_by.clone()),
        routing: routing.unwrap_or_else(|| before.routing.clone()),
        randomize: request.randomize.unwrap_or(before.randomize),
        raters_see_external_ids: request
            .raters_see_external_ids
            .unwrap_or(before.raters_see_external_ids),
        lease_minutes: request.lease_minutes.unwrap_or(before.lease_minutes),
        min_explanation_len: request
            .min_explanation_len
            .unwrap_or(before.min_explanation_len),
        bradley_terry_prior: request
            .bradley_terry_prior
            .unwrap_or(before.bradley_terry_prior),
        final_method: request
            .final_method
            .map(|m| m.trim().to_owned())
            .unwrap_or_else(|| before.final_method.clone()),
        classifications: request
            .classifications
            .unwrap_or_else(|| before.classifications.clone()),
        raters: names(&raters, &before.raters),
        leads: names(&leads, &before.leads),
    };
    let changes = before.changes_to(&after);
    let ids = |resolved: Option<Option<Vec<(Uuid, String)>>>| {
        resolved.map(|m| m.map(|users| users.into_iter().map(|(id, _)| id).collect()))
    };
    Ok(Preview {
        batch,
        before,
        after,
        changes,
        raters: ids(raters),
        leads: ids(leads),
    })
}

/// Checks a settings change (every broken field reported) and applies what differs from
/// the batch's settings now. A change that changes nothing writes nothing and records
/// nothing. `actor` is the admin who asked (recorded in the audit log), `None` from the
/// demo. Returns the batch and what changed.
pub async fn update(
    store: &Store,
    id: Uuid,
    request: SettingsChange,
    actor: Option<&User>,
) -> ServiceResult<(Batch, Vec<Change>)> {
    let preview = preview(store, id, request, FieldErrors::new()).await?;
    apply(store, preview, actor).await
}

/// Writes a checked change (see [`update`]); taking raters off the batch releases the
/// tasks they held.
pub async fn apply(
    store: &Store,
    preview: Preview,
    actor: Option<&User>,
) -> ServiceResult<(Batch, Vec<Change>)> {
    let Preview {
        batch,
        after,
        changes,
        raters,
        leads,
        ..
    } = preview;
    if changes.is_empty() {
        return Ok((batch, changes));
    }
    let changed = |setting: &str| changes.iter().any(|c| c.setting == setting);
    let write = BatchChanges {
        state: changed("state").then_some(after.state),
        overlap: changed("overlap").then_some(after.overlap),
        max_overlap: changed("max_overlap").then_some(after.max_overlap),
        escalate: changed("escalate").then(|| after.escalate.clone()),
        // Both were checked in the preview.
        route_by: changed("route_by").then(|| {
            after
                .route_by
                .as_deref()
                .and_then(|r| RouteBy::parse(r).ok())
        }),
        routing: changed("routing")
            .then(|| after.routing.parse::<Routing>().ok())
            .flatten(),
        randomize: changed("randomize").then_some(after.randomize),
        raters_see_external_ids: changed("raters_see_external_ids")
            .then_some(after.raters_see_external_ids),
        lease_minutes: changed("lease_minutes").then_some(after.lease_minutes),
        min_explanation_len: changed("min_explanation_len").then_some(after.min_explanation_len),
        bradley_terry_prior: changed("bradley_terry_prior").then_some(after.bradley_terry_prior),
        final_method: changed("final_method")
            .then(|| verdict_core::batch::FinalMethod::parse(&after.final_method))
            .flatten(),
        classifications: changed("classifications").then(|| after.classifications.clone()),
        raters: if changed("raters") { raters } else { None },
        leads: if changed("leads") { leads } else { None },
    };
    let batch = store
        .update_batch(batch.id, &write)
        .await?
        .ok_or(ServiceError::NotFound)?;
    if write.overlap.is_some() || write.max_overlap.is_some() || write.escalate.is_some() {
        // Tasks already finished whose answers now call for one more rater get one.
        let rubric = store.batch_rubric(&batch).await?;
        let plan = verdict_core::overlap::Plan::of(&batch, &rubric);
        let escalated = store.escalate_batch(batch.id, &plan).await?;
        if escalated > 0 {
            tracing::info!(batch = %batch.name, escalated, "tasks escalated after a settings change");
        }
    }
    if write.raters.is_some() {
        // Raters taken off the batch lose the tasks they held; their drafts stay theirs.
        let released = store
            .release(crate::store::assignments::Release::NotAllowed { batch: batch.id })
            .await?;
        if !released.is_empty() {
            tracing::info!(batch = %batch.name, count = released.len(), "assignments of removed raters released");
        }
    }
    if let Some(actor) = actor {
        let pick = |before: bool| -> serde_json::Map<String, Value> {
            changes
                .iter()
                .map(|c| {
                    let v = if before { &c.before } else { &c.after };
                    (c.setting.clone(), v.clone())
                })
                .collect()
        };
        let detail = json!({
            "batch_id": batch.id,
            "changed": changes.iter().map(|c| c.setting.as_str()).collect::<Vec<_>>(),
            "before": pick(true),
            "after": pick(false),
        });
        crate::services::audit::record(store, actor, "batch.settings", &batch.name, detail).await;
    }
    Ok((batch, changes))
}

fn check_questions(questions: &[Classification], fields: &mut FieldErrors) {
    let mut keys = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let at = format!("classifications[{i}]");
        let key_ok = !q.key.is_empty()
            && q.key.len() <= 64
            && q.key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !key_ok {
            fields.insert(format!("{at}.key"), "must be 1-64 of a-z, 0-9 and _".into());
        } else if !keys.insert(q.key.as_str()) {
            fields.insert(format!("{at}.key"), format!("{:?} is used twice", q.key));
        }
        if q.label.trim().is_empty() {
            fields.insert(format!("{at}.label"), "is required".into());
        }
        let unique: HashSet<&String> = q.options.iter().collect();
        if q.options.is_empty()
            || unique.len() != q.options.len()
            || q.options.iter().any(|o| o.trim().is_empty())
        {
            fields.insert(
                format!("{at}.options"),
                "must be a list of distinct, non-empty options".into(),
            );
        } else if q.options.len() > verdict_core::rubric::MAX_OPTIONS {
            fields.insert(
                format!("{at}.options"),
                format!(
                    "must be at most {} options (each has a key on the form)",
                    verdict_core::rubric::MAX_OPTIONS
                ),
            );
        }
    }
}

/// Resolves a members list of usernames to (id, username), reporting unknown or unfit
/// users.
async fn members(
    store: &Store,
    field: &str,
    requested: Option<Option<Vec<String>>>,
    least: Role,
    fields: &mut FieldErrors,
) -> ServiceResult<Option<Option<Vec<(Uuid, String)>>>> {
    let Some(Some(names)) = requested else {
        return Ok(requested.map(|_| None));
    };
    let mut users: Vec<(Uuid, String)> = Vec::with_capacity(names.len());
    let mut problems = Vec::new();
    for name in &names {
        match store.user_by_name(name).await? {
            // A user named twice is one member.
            Some(user) if user.active && user.role >= least => {
                if !users.iter().any(|(id, _)| *id == user.id) {
                    users.push((user.id, user.username));
                }
            }
            Some(user) if user.active => problems.push(format!("{name} is a {}", user.role)),
            Some(_) => problems.push(format!("{name} is deactivated")),
            None => problems.push(format!("no user named {name:?}")),
        }
    }
    if !problems.is_empty() {
        fields.insert(field.into(), problems.join("; "));
    }
    Ok(Some(Some(users)))
}

/// The final method a confirmation made before the setting existed carries.
fn majority() -> String {
    "majority".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            state: BatchState::Open,
            overlap: 2,
            max_overlap: 2,
            escalate: None,
            route_by: None,
            routing: "prefer".into(),
            randomize: true,
            raters_see_external_ids: false,
            lease_minutes: 45,
            min_explanation_len: 20,
            bradley_terry_prior: 0.5,
            final_method: "majority".into(),
            classifications: vec![],
            raters: None,
            leads: Some(vec!["lee".into()]),
        }
    }

    #[test]
    fn only_settings_that_differ_are_changes() {
        let before = settings();
        assert!(before.changes_to(&before.clone()).is_empty());
        let after = Settings {
            overlap: 3,
            raters: Some(vec!["ana".into(), "ben".into()]),
            ..settings()
        };
        let changes = before.changes_to(&after);
        let seen: Vec<(&str, String, String)> = changes
            .iter()
            .map(|c| (c.label(), c.before_text(), c.after_text()))
            .collect();
        assert_eq!(
            seen,
            [
                ("Raters per task", "2".into(), "3".into()),
                ("Raters", "every rater".into(), "ana, ben".into()),
            ]
        );
    }

    #[test]
    fn classifications_read_as_words() {
        let questions = json!([{"key": "language", "label": "Language", "multiple": true,
            "required": false, "options": ["python", "rust"]}]);
        assert_eq!(
            describe("classifications", &questions),
            "Language (language, several choices, optional): python, rust"
        );
        assert_eq!(describe("classifications", &json!([])), "none");
        assert_eq!(describe("randomize", &json!(false)), "off");
    }

    #[test]
    fn every_setting_is_compared_and_has_words() {
        let names: Vec<&str> = settings().values().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, SETTINGS);
        for name in SETTINGS {
            assert_ne!(label(name), "Setting", "{name}");
        }
    }
}
