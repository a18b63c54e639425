//! `/skills`: what people know. Leads and admins set raters' skills (admins anyone's) and
//! their own, the same change as `PATCH /api/v1/users/{id}` and `PATCH /api/v1/me` with
//! `skills`; a rater declares theirs (`PATCH /api/v1/me` with `declared_skills`), which
//! only widens `prefer` routing. A batch routed by a task field offers raters the tasks
//! whose value is one of their skills (see [`verdict_core::routing`]).

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth::PageUser;
use crate::auth::csrf::CsrfForm;
use crate::error::AppResult;
use crate::services::accounts::{self, Changes};
use crate::services::{FieldErrors, ServiceError};
use crate::state::AppState;
use crate::web::{ApiPath, Layout, render};
use verdict_core::role::Role;
use verdict_core::routing::{MAX_SKILL_LEN, MAX_SKILLS, parse_skills_text};
use verdict_core::user::User;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/skills", get(skills_page).post(set_mine))
        .route("/skills/{id}", post(set_theirs))
}

/// A person whose skills the viewer may set, with the text typed when it was refused.
struct Row {
    id: Uuid,
    username: String,
    role: Role,
    skills: String,
    /// What they declared themself, for the lead to read before setting their skills.
    declared: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "users/skills.html")]
struct SkillsPage {
    layout: Layout,
    /// The viewer's own list as the form shows it: a rater's declared skills, a lead's or
    /// an admin's skills.
    mine: String,
    my_error: Option<String>,
    /// A rater: their form declares, and `set_for_me` is what a lead set.
    declares: bool,
    set_for_me: String,
    /// Leads: the raters; admins: everyone; raters: nobody.
    others: Vec<Row>,
    lead: bool,
    admin: bool,
    max_skills: usize,
    max_len: usize,
}

/// Who the viewer may set the skills of, besides their own.
fn may_set(viewer: &User, other: &User) -> bool {
    other.id != viewer.id
        && other.active
        && (viewer.can_administer() || (viewer.can_lead() && other.role == Role::Rater))
}

/// What a form's refusal says about the skills.
fn why(err: ServiceError) -> Result<String, ServiceError> {
    match err {
        ServiceError::Invalid(fields) => Ok(fields
            .get("skills")
            .or_else(|| fields.get("declared_skills"))
            .cloned()
            .unwrap_or_else(|| describe(&fields))),
        other => Err(other),
    }
}

fn describe(fields: &FieldErrors) -> String {
    fields
        .iter()
        .map(|(f, why)| format!("{f} {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

async fn page(
    state: &AppState,
    page_user: PageUser,
    mine: Option<(String, String)>,
    theirs: Option<(Uuid, String, String)>,
) -> AppResult<SkillsPage> {
    let viewer = &page_user.user;
    let others = if viewer.can_lead() {
        state
            .store()
            .list_users()
            .await?
            .into_iter()
            .filter(|u| may_set(viewer, u))
            .map(|u| {
                let refused = theirs
                    .as_ref()
                    .filter(|(id, _, _)| *id == u.id)
                    .map(|(_, typed, why)| (typed.clone(), why.clone()));
                Row {
                    id: u.id,
                    skills: refused
                        .as_ref()
                        .map_or_else(|| u.skills.join(", "), |(typed, _)| typed.clone()),
                    error: refused.map(|(_, why)| why),
                    declared: u.declared_skills.join(", "),
                    username: u.username,
                    role: u.role,
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let declares = !viewer.sets_own_skills();
    let (mine, my_error) = match mine {
        Some((typed, why)) => (typed, Some(why)),
        None if declares => (viewer.declared_skills.join(", "), None),
        None => (viewer.skills.join(", "), None),
    };
    Ok(SkillsPage {
        declares,
        set_for_me: viewer.skills.join(", "),
        lead: viewer.can_lead(),
        admin: viewer.can_administer(),
        others,
        mine,
        my_error,
        layout: page_user.layout,
        max_skills: MAX_SKILLS,
        max_len: MAX_SKILL_LEN,
    })
}

async fn skills_page(page_user: PageUser, State(state): State<AppState>) -> AppResult<Response> {
    Ok(render(&page(&state, page_user, None, None).await?)?.into_response())
}

#[derive(Deserialize)]
struct SkillsForm {
    #[serde(default)]
    skills: String,
}

/// Sets `id`'s skills from the typed list (a rater's own: their declared skills); the
/// page again with the reason when refused.
async fn set(
    state: &AppState,
    page_user: PageUser,
    id: Uuid,
    typed: String,
) -> AppResult<Response> {
    let own = id == page_user.user.id;
    let refused = |why: String| {
        if own {
            (Some((typed.clone(), why)), None)
        } else {
            (None, Some((id, typed.clone(), why)))
        }
    };
    let skills = match parse_skills_text(&typed) {
        Ok(skills) => skills,
        Err(why) => {
            let (mine, theirs) = refused(why);
            let html = render(&page(state, page_user, mine, theirs).await?)?;
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, html).into_response());
        }
    };
    let actor = &page_user.user;
    let done = if own {
        let changes = if actor.sets_own_skills() {
            Changes {
                skills: Some(skills),
                ..Changes::default()
            }
        } else {
            Changes {
                declared_skills: Some(skills),
                ..Changes::default()
            }
        };
        accounts::update_own(state.store(), state.hasher(), actor, changes).await
    } else {
        let changes = Changes {
            skills: Some(skills),
            ..Changes::default()
        };
        accounts::may_change(state.store(), actor, id, &changes).await?;
        accounts::update_user(state.store(), state.hasher(), actor.into(), id, changes).await
    };
    match done {
        Ok(_) => Ok(Redirect::to("/skills").into_response()),
        Err(err) => {
            let (mine, theirs) = refused(why(err)?);
            let html = render(&page(state, page_user, mine, theirs).await?)?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, html).into_response())
        }
    }
}

async fn set_mine(
    page_user: PageUser,
    State(state): State<AppState>,
    CsrfForm(form): CsrfForm<SkillsForm>,
) -> AppResult<Response> {
    let id = page_user.user.id;
    set(&state, page_user, id, form.skills).await
}

async fn set_theirs(
    page_user: PageUser,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<Uuid>,
    CsrfForm(form): CsrfForm<SkillsForm>,
) -> AppResult<Response> {
    set(&state, page_user, id, form.skills).await
}
