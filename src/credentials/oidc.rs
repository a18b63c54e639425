//! The OpenID Connect relying party (the `openidconnect` crate): the provider's metadata
//! found once by discovery, an authorization request with PKCE, a nonce and a state, and
//! the exchange of the code for an ID token verified in full (signature against the
//! provider's keys, issuer, audience, expiry, nonce) before any of its claims is read.
//!
//! What a sign-in has to remember between leaving for the provider and coming back
//! (state, PKCE verifier, nonce, where to go after) travels in a cookie sealed with the
//! server's key ([`Pending`]), so an anonymous visit stores nothing and any instance can
//! finish a sign-in another began.

use std::time::Duration;

use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sealed::SealingKey;
use verdict_core::sign_in::{Claims, Policy};

/// How long a sign-in may take at the provider.
pub const PENDING_FOR: Duration = Duration::from_secs(600);

/// The server's OpenID Connect settings (`--oidc-*`).
#[derive(Debug, Clone)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The callback's public URL, as registered at the provider
    /// (`https://verdict.example.com/auth/oidc/callback`).
    pub redirect_url: String,
    /// Scopes asked for besides `openid` (default `email profile`).
    pub scopes: Vec<String>,
    /// The claim whose values give the role, if any.
    pub role_claim: Option<String>,
    pub policy: Policy,
    /// The provider's name on the sign-in button ("Sign in with …").
    pub label: String,
}

/// Why a sign-in through the provider failed, in words for the person.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("the identity provider at {issuer} could not be reached or read: {why}")]
    Discovery { issuer: String, why: String },
    #[error("the identity provider refused the sign-in: {0}")]
    Exchange(String),
    #[error("the identity provider's answer cannot be trusted: {0}")]
    Untrusted(String),
    #[error("the identity provider is not set up right: {0}")]
    Setup(String),
}

/// What a sign-in remembers while the person is at the provider.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Pending {
    pub state: String,
    pub verifier: String,
    pub nonce: String,
    /// Where to go once signed in (a local path).
    pub next: String,
    /// Unix seconds after which it is refused.
    pub until: i64,
}

impl Pending {
    /// The cookie's value: sealed, so it can be neither read nor forged.
    pub fn seal(&self, key: &SealingKey) -> String {
        key.seal(&serde_json::to_string(self).unwrap_or_default())
    }

    /// The pending sign-in a cookie holds, if it was sealed by this server's key and has
    /// not run out.
    pub fn open(sealed: &str, key: &SealingKey, now: i64) -> Option<Self> {
        let pending: Self = serde_json::from_str(&key.open(sealed)?).ok()?;
        (now <= pending.until).then_some(pending)
    }
}

/// The relying party: the settings, and the provider's metadata once discovered.
pub struct Oidc {
    config: OidcConfig,
    http: openidconnect::reqwest::Client,
    metadata: tokio::sync::OnceCell<CoreProviderMetadata>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuer", &self.config.issuer)
            .finish_non_exhaustive()
    }
}

impl Oidc {
    pub fn new(config: OidcConfig) -> Result<Self, String> {
        // Never following redirects: a provider's endpoints are its own.
        let http = openidconnect::reqwest::Client::builder()
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| e.to_string())?;
        IssuerUrl::new(config.issuer.clone())
            .map_err(|e| format!("--oidc-issuer is not a URL: {e}"))?;
        RedirectUrl::new(config.redirect_url.clone())
            .map_err(|e| format!("--oidc-redirect-url is not a URL: {e}"))?;
        Ok(Self {
            config,
            http,
            metadata: tokio::sync::OnceCell::new(),
        })
    }

    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// The client, with the provider's metadata discovered on first use (a failure is
    /// not kept: the next sign-in tries again).
    async fn client(
        &self,
    ) -> Result<
        openidconnect::core::CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcError,
    > {
        let metadata = self
            .metadata
            .get_or_try_init(|| async {
                let issuer = IssuerUrl::new(self.config.issuer.clone())
                    .map_err(|e| OidcError::Setup(format!("the issuer is not a URL: {e}")))?;
                CoreProviderMetadata::discover_async(issuer, &self.http)
                    .await
                    .map_err(|e| OidcError::Discovery {
                        issuer: self.config.issuer.clone(),
                        // Every cause under it, as one line (anyhow's alternate form).
                        why: format!("{:#}", anyhow::Error::new(e)),
                    })
            })
            .await?;
        let redirect = RedirectUrl::new(self.config.redirect_url.clone())
            .map_err(|e| OidcError::Setup(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata.clone(),
            ClientId::new(self.config.client_id.clone()),
            self.config.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// Where to send the person, and what to remember until they come back.
    pub async fn begin(&self, next: String, now: i64) -> Result<(String, Pending), OidcError> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in &self.config.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let until = now + i64::try_from(PENDING_FOR.as_secs()).unwrap_or(600);
        Ok((
            url.to_string(),
            Pending {
                state: state.secret().clone(),
                verifier: verifier.secret().clone(),
                nonce: nonce.secret().clone(),
                next,
                until,
            },
        ))
    }

    /// Exchanges `code` for tokens with the PKCE verifier, verifies the ID token in full
    /// against the nonce, and reads the claims the server needs.
    pub async fn finish(&self, code: &str, pending: &Pending) -> Result<Claims, OidcError> {
        let client = self.client().await?;
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Setup(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| OidcError::Exchange(token_error(e)))?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| OidcError::Untrusted("it sent no ID token".into()))?;
        let verifier = client.id_token_verifier();
        let verified = id_token
            .claims(&verifier, &Nonce::new(pending.nonce.clone()))
            .map_err(|e| OidcError::Untrusted(e.to_string()))?;
        let roles = match &self.config.role_claim {
            // The token's signature and claims were verified above; its payload is read
            // again here only for the role claim, which the standard claims do not carry.
            Some(name) => role_values(&id_token.to_string(), name),
            None => Vec::new(),
        };
        Ok(Claims {
            subject: verified.subject().as_str().to_owned(),
            email: verified.email().map(|e| e.as_str().to_owned()),
            email_verified: verified.email_verified(),
            preferred_username: verified.preferred_username().map(|u| u.as_str().to_owned()),
            roles,
        })
    }
}

/// The values of claim `name` in a (verified) JWT's payload: a string, or the strings of
/// a list.
fn role_values(jwt: &str, name: &str) -> Vec<String> {
    use base64::Engine;
    let payload = jwt
        .split('.')
        .nth(1)
        .and_then(|part| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part.trim_end_matches('='))
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    match payload.as_ref().and_then(|p| p.get(name)) {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// A failed code exchange in words: the provider's own error and description when it
/// answered one (`invalid_grant` for a code used twice), else what went wrong.
fn token_error<RE: std::error::Error + Send + Sync + 'static>(
    e: openidconnect::RequestTokenError<
        RE,
        openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
    >,
) -> String {
    match e {
        openidconnect::RequestTokenError::ServerResponse(answer) => {
            let mut text = answer.error().to_string();
            if let Some(description) = answer.error_description() {
                text.push_str(": ");
                text.push_str(description);
            }
            text
        }
        other => format!("{:#}", anyhow::Error::new(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_sign_in_opens_only_under_its_key_and_in_time() {
        let key = SealingKey::from_secret("a secret of more than thirty-two characters!").unwrap();
        let other = SealingKey::from_secret("another secret of thirty-two characters!!").unwrap();
        let pending = Pending {
            state: "s".into(),
            verifier: "v".into(),
            nonce: "n".into(),
            next: "/batches".into(),
            until: 1_000,
        };
        let sealed = pending.seal(&key);
        assert!(!sealed.contains("batches"), "nothing of it can be read");
        assert_eq!(Pending::open(&sealed, &key, 999), Some(pending.clone()));
        assert_eq!(Pending::open(&sealed, &key, 1_001), None);
        assert_eq!(Pending::open(&sealed, &other, 999), None);
        assert_eq!(Pending::open("not sealed", &key, 999), None);
    }

    #[test]
    fn role_values_are_read_as_a_string_or_a_list() {
        use base64::Engine;
        let jwt = |payload: &str| {
            format!(
                "h.{}.s",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload)
            )
        };
        assert_eq!(
            role_values(&jwt(r#"{"groups": ["a", "b", 3]}"#), "groups"),
            ["a", "b"]
        );
        assert_eq!(role_values(&jwt(r#"{"role": "lead"}"#), "role"), ["lead"]);
        assert!(role_values(&jwt(r#"{"role": "lead"}"#), "groups").is_empty());
        assert!(role_values("garbage", "groups").is_empty());
    }
}
