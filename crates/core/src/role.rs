//! The roles people have. A plain value: the web layer's extractors, the store's
//! queries and the access checks all name it without depending on each other.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A person's role. The order matters: each role can do everything the ones before it can.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Rater,
    Lead,
    Admin,
}

impl Role {
    /// Leads and admins: review, metrics, exports, the per-task view, releasing tasks.
    pub fn can_lead(self) -> bool {
        self >= Role::Lead
    }

    pub const ALL: [Role; 3] = [Role::Rater, Role::Lead, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Rater => "rater",
            Role::Lead => "lead",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Role {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s).ok_or_else(|| format!("unknown role {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_rater_lead_admin() {
        assert!(Role::Rater < Role::Lead && Role::Lead < Role::Admin);
    }

    #[test]
    fn role_parses_only_known_names() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("Admin"), None);
        assert_eq!(Role::parse("superuser"), None);
    }
}
