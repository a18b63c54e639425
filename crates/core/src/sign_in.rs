//! Signing in through a team's identity provider (OpenID Connect): which account a
//! verified ID token names, what role its claims give, and whether an account may be made
//! for someone who has none. The app verifies the token; this module only decides.

use unicode_normalization::UnicodeNormalization;

use crate::role::Role;

/// The claim that names a person's verdict account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchClaim {
    /// `email` (verified): the account whose username is that address.
    #[default]
    Email,
    /// `sub`: the account whose username is the provider's subject id.
    Subject,
    /// `preferred_username`.
    PreferredUsername,
}

impl std::str::FromStr for MatchClaim {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name.trim() {
            "email" => Ok(Self::Email),
            "sub" => Ok(Self::Subject),
            "preferred_username" => Ok(Self::PreferredUsername),
            other => Err(format!(
                "{other:?} is not a claim accounts are matched by: email, sub or preferred_username"
            )),
        }
    }
}

/// What a verified ID token says of the person.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub preferred_username: Option<String>,
    /// The values of the role claim, when one is configured (a string or a list of
    /// them in the token).
    pub roles: Vec<String>,
}

/// How the server turns claims into an account.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub match_by: MatchClaim,
    /// Whether a role claim is configured: then the provider, not an admin, sets each
    /// person's role at every sign-in.
    pub role_claim: bool,
    /// Claim values and the role each gives; the highest role matched wins, and a
    /// person matching none is a rater.
    pub role_map: Vec<(String, Role)>,
    /// Email domains whose people get an account at their first sign-in; empty: nobody
    /// does (an admin makes accounts).
    pub create_domains: Vec<String>,
}

/// Why a sign-in is refused, in words for the person signing in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("your identity provider sent no {0} claim, which this server matches accounts by")]
    NoClaim(&'static str),
    #[error("your identity provider has not verified the email address {0}")]
    Unverified(String),
    #[error("there is no verdict account for {0}; ask an administrator for one")]
    NoAccount(String),
    #[error("the verdict account {0} is deactivated")]
    Deactivated(String),
    #[error("the verdict account {0} is linked to another identity")]
    OtherIdentity(String),
    #[error(
        "your identity provider's email address {0:?} has characters that stand for others \
         (compatibility forms, such as the Kelvin sign for K); this server matches no account by it"
    )]
    Unnormalised(String),
}

/// Why the identity provider sent the browser back without signing anyone in, in words
/// of our own for each error code it may send (OAuth 2.0 and OpenID Connect). Anyone can
/// write a link to the callback with any `error` and `error_description`, so neither is
/// ever shown: a made-up code reads as the provider refusing, nothing more.
pub fn provider_refusal(error: &str) -> &'static str {
    match error {
        "access_denied" => "The sign-in was declined at your identity provider.",
        "login_required"
        | "interaction_required"
        | "consent_required"
        | "account_selection_required" => {
            "Your identity provider needs you to sign in there first: sign in again."
        }
        "temporarily_unavailable" | "server_error" => {
            "Your identity provider could not sign you in just now: try again in a moment."
        }
        "invalid_request"
        | "unauthorized_client"
        | "unsupported_response_type"
        | "invalid_scope"
        | "invalid_request_uri"
        | "invalid_request_object"
        | "request_not_supported"
        | "request_uri_not_supported"
        | "registration_not_supported" => {
            "Your identity provider refused this server's sign-in request: ask an administrator \
             to check verdict's OpenID Connect settings."
        }
        _ => "Your identity provider did not sign you in.",
    }
}

impl Policy {
    /// The username the claims name (an email address in lower case).
    pub fn username(&self, claims: &Claims) -> Result<String, Refused> {
        match self.match_by {
            MatchClaim::Subject => Ok(claims.subject.clone()),
            MatchClaim::PreferredUsername => claims
                .preferred_username
                .as_deref()
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .ok_or(Refused::NoClaim("preferred_username")),
            MatchClaim::Email => {
                let email = claims
                    .email
                    .as_deref()
                    .map(str::trim)
                    .filter(|e| e.contains('@'))
                    .ok_or(Refused::NoClaim("email"))?;
                // Lower case alone would fold some characters into plain letters (the Kelvin
                // sign into `k`), so that `\u{212A}ate@corp.com` named the account of
                // kate@corp.com: an address that Unicode's compatibility normalisation
                // (NFKC) would change names no account.
                if email.nfkc().ne(email.chars()) {
                    return Err(Refused::Unnormalised(email.to_owned()));
                }
                let email = email.to_lowercase();
                // A provider that says nothing of verification is taken at its word; one
                // that says the address is unverified is not.
                if claims.email_verified == Some(false) {
                    return Err(Refused::Unverified(email));
                }
                Ok(email)
            }
        }
    }

    /// The role the claims give, when a role claim is configured: the highest role any
    /// of its values maps to, or rater.
    pub fn role(&self, claims: &Claims) -> Option<Role> {
        if !self.role_claim {
            return None;
        }
        let mapped = self
            .role_map
            .iter()
            .filter(|(value, _)| claims.roles.iter().any(|r| r == value))
            .map(|(_, role)| *role)
            .max();
        Some(mapped.unwrap_or(Role::Rater))
    }

    /// The role of an account made at the first sign-in of someone with none, if their
    /// email's domain is one accounts are made for.
    pub fn may_create(&self, claims: &Claims, username: &str) -> Result<Role, Refused> {
        let domain = claims
            .email
            .as_deref()
            .filter(|_| claims.email_verified != Some(false))
            .and_then(|e| e.trim().rsplit_once('@'))
            .map(|(_, domain)| domain.to_lowercase());
        let allowed = domain.is_some_and(|d| {
            self.create_domains
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(&d))
        });
        if !allowed {
            return Err(Refused::NoAccount(username.to_owned()));
        }
        Ok(self.role(claims).unwrap_or(Role::Rater))
    }
}

/// Parses `--oidc-role-map`: `value=role` pairs separated by commas
/// (`verdict-admins=admin,verdict-leads=lead`).
pub fn parse_role_map(text: &str) -> Result<Vec<(String, Role)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (value, role) = pair
                .rsplit_once('=')
                .ok_or_else(|| format!("{pair:?} is not VALUE=ROLE"))?;
            let role = Role::parse(role.trim()).ok_or_else(|| {
                format!("{role:?} in {pair:?} is not a role: rater, lead or admin")
            })?;
            if value.trim().is_empty() {
                return Err(format!("{pair:?} has no claim value"));
            }
            Ok((value.trim().to_owned(), role))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(email: &str, verified: Option<bool>, roles: &[&str]) -> Claims {
        Claims {
            subject: "sub-1".into(),
            email: Some(email.into()),
            email_verified: verified,
            preferred_username: Some("al".into()),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn the_account_is_named_by_the_configured_claim() {
        let by_email = Policy::default();
        let alice = claims(" Alice@Example.COM ", Some(true), &[]);
        assert_eq!(by_email.username(&alice).unwrap(), "alice@example.com");
        assert_eq!(
            by_email.username(&claims("alice@example.com", Some(false), &[])),
            Err(Refused::Unverified("alice@example.com".into()))
        );
        let no_email = Claims {
            email: None,
            ..alice.clone()
        };
        assert_eq!(by_email.username(&no_email), Err(Refused::NoClaim("email")));
        let by_sub = Policy {
            match_by: MatchClaim::Subject,
            ..Policy::default()
        };
        assert_eq!(by_sub.username(&alice).unwrap(), "sub-1");
        let by_name = Policy {
            match_by: MatchClaim::PreferredUsername,
            ..Policy::default()
        };
        assert_eq!(by_name.username(&alice).unwrap(), "al");
        assert!("nickname".parse::<MatchClaim>().is_err());
    }

    #[test]
    fn an_address_with_compatibility_characters_names_no_account() {
        let policy = Policy::default();
        for forged in [
            "\u{212A}ate@corp.com",  // Kelvin sign
            "kate@corp.\u{217D}om",  // small Roman numeral one hundred
            "\u{FF4B}ate@corp.com",  // fullwidth k
            "ka\u{FB01}@corp.com",   // the fi ligature
            "kate@co\u{0301}rp.com", // a combining accent NFKC composes
        ] {
            let refused = policy.username(&claims(forged, Some(true), &[]));
            assert_eq!(
                refused,
                Err(Refused::Unnormalised(forged.into())),
                "{forged}"
            );
        }
        // Letters outside ASCII in their usual form are an address like any other.
        assert_eq!(
            policy.username(&claims("Jos\u{E9}@corp.com", Some(true), &[])),
            Ok("jos\u{E9}@corp.com".into())
        );
    }

    #[test]
    fn a_providers_refusal_is_told_in_our_words_only() {
        assert_eq!(
            provider_refusal("access_denied"),
            "The sign-in was declined at your identity provider."
        );
        assert!(provider_refusal("temporarily_unavailable").contains("try again"));
        let made_up = provider_refusal("Your account is suspended. Call +1 555 0100");
        assert_eq!(made_up, "Your identity provider did not sign you in.");
    }

    #[test]
    fn roles_come_from_the_claim_only_when_one_is_configured() {
        let map = parse_role_map("verdict-admins=admin, verdict-leads=lead").unwrap();
        let policy = Policy {
            role_claim: true,
            role_map: map,
            ..Policy::default()
        };
        let both = claims("a@x.org", None, &["verdict-leads", "verdict-admins"]);
        assert_eq!(policy.role(&both), Some(Role::Admin));
        assert_eq!(
            policy.role(&claims("a@x.org", None, &["verdict-leads"])),
            Some(Role::Lead)
        );
        assert_eq!(
            policy.role(&claims("a@x.org", None, &["staff"])),
            Some(Role::Rater)
        );
        assert_eq!(Policy::default().role(&both), None);
        assert!(
            parse_role_map("verdict-admins=owner")
                .unwrap_err()
                .contains("not a role")
        );
        assert!(parse_role_map("admins").unwrap_err().contains("VALUE=ROLE"));
    }

    #[test]
    fn accounts_are_made_only_for_the_allowed_domains() {
        let closed = Policy::default();
        let alice = claims("alice@example.com", Some(true), &[]);
        assert_eq!(
            closed.may_create(&alice, "alice@example.com"),
            Err(Refused::NoAccount("alice@example.com".into()))
        );
        let open = Policy {
            create_domains: vec!["Example.com".into()],
            ..Policy::default()
        };
        assert_eq!(
            open.may_create(&alice, "alice@example.com"),
            Ok(Role::Rater)
        );
        let elsewhere = claims("mallory@example.com.evil", Some(true), &[]);
        assert!(open.may_create(&elsewhere, "m").is_err());
        let unverified = claims("bob@example.com", Some(false), &[]);
        assert!(open.may_create(&unverified, "bob").is_err());
    }
}
