//! Secrets kept in the database sealed (judges' API keys): ChaCha20-Poly1305 under a key
//! derived from the server's secret (`VERDICT_SECRET_KEY`), with a fresh random nonce
//! each time. A database copied without the secret gives the keys away to nobody.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest, Sha256};

/// The server's sealing key.
#[derive(Clone)]
pub struct SealingKey(Key);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(..)")
    }
}

/// The environment variable that holds the server's secret.
pub const SECRET_ENV: &str = "VERDICT_SECRET_KEY";

/// The shortest secret accepted: a guessable one would make sealing pointless.
pub const MIN_SECRET_CHARS: usize = 32;

impl SealingKey {
    /// A key from a secret of at least [`MIN_SECRET_CHARS`] characters (any text: it is
    /// hashed to 32 bytes).
    pub fn from_secret(secret: &str) -> Result<Self, String> {
        if secret.chars().count() < MIN_SECRET_CHARS {
            return Err(format!(
                "{SECRET_ENV} must be at least {MIN_SECRET_CHARS} characters"
            ));
        }
        let digest = Sha256::digest(secret.as_bytes());
        Ok(Self(*Key::from_slice(&digest)))
    }

    /// The key from the environment, if the secret is set; an error if it is too short.
    pub fn from_env() -> Result<Option<Self>, String> {
        match std::env::var(SECRET_ENV) {
            Ok(secret) if !secret.is_empty() => Self::from_secret(&secret).map(Some),
            _ => Ok(None),
        }
    }

    /// `plaintext` sealed, as base64 of the nonce followed by the ciphertext.
    pub fn seal(&self, plaintext: &str) -> String {
        let cipher = ChaCha20Poly1305::new(&self.0);
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(&nonce, plaintext.as_bytes())
            .expect("ChaCha20-Poly1305 seals any message under the length limit");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        STANDARD.encode(out)
    }

    /// What [`SealingKey::seal`] sealed; `None` when it was sealed under another key or
    /// changed since.
    pub fn open(&self, sealed: &str) -> Option<String> {
        let bytes = STANDARD.decode(sealed).ok()?;
        if bytes.len() < 12 {
            return None;
        }
        let (nonce, body) = bytes.split_at(12);
        let plain = ChaCha20Poly1305::new(&self.0)
            .decrypt(Nonce::from_slice(nonce), body)
            .ok()?;
        String::from_utf8(plain).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_under_its_key() {
        let key = SealingKey::from_secret("correct horse battery staple, then some").unwrap();
        let other = SealingKey::from_secret("another secret of at least thirty-two chars").unwrap();
        let sealed = key.seal("sk-live-123");
        assert!(!sealed.contains("sk-live"));
        assert_ne!(
            sealed,
            key.seal("sk-live-123"),
            "each seal has its own nonce"
        );
        assert_eq!(key.open(&sealed).as_deref(), Some("sk-live-123"));
        assert_eq!(other.open(&sealed), None);
        assert_eq!(key.open("bm90IHNlYWxlZA=="), None);
    }

    #[test]
    fn a_short_secret_is_refused() {
        assert!(SealingKey::from_secret("short").is_err());
    }
}
