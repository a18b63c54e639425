//! People's accounts, as the rest of the domain knows them: who they are and what their
//! role lets them do. The password hash is not here: it never leaves the sign-in checks.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::role::Role;
use crate::routing::Routing;

/// An account of a person (judges' accounts are not people's: see the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    /// A deactivated account signs in to nothing and is offered no work.
    pub active: bool,
    pub created_at: DateTime<Utc>,
    /// Sessions and tokens from before it are ended.
    pub password_changed_at: DateTime<Utc>,
    /// What the person knows (languages, subjects), checked by
    /// [`crate::routing::parse_skills`] and set by a lead or an admin (a lead or an admin
    /// also their own): what a routed batch offers them first or only.
    pub skills: Vec<String>,
    /// What the person says they know, set by themself: it only widens `prefer` routing
    /// (see [`crate::routing::skills_for`]).
    pub declared_skills: Vec<String>,
}

impl User {
    /// Leads and admins: review, metrics, exports, the per-task view, releasing tasks.
    pub fn can_lead(&self) -> bool {
        self.role.can_lead()
    }

    /// The skills a batch routed by `routing` goes by for this person.
    pub fn skills_for(&self, routing: Routing) -> Vec<String> {
        crate::routing::skills_for(routing, &self.skills, &self.declared_skills)
    }

    /// Whether this person sets their own skills, rather than declaring them: leads and
    /// admins do; a rater's are set by a lead or an admin.
    pub fn sets_own_skills(&self) -> bool {
        self.can_lead()
    }

    /// Admins: accounts, batches and their settings, every token, the audit log.
    pub fn can_administer(&self) -> bool {
        self.role >= Role::Admin
    }
}
