//! API bearer tokens: generated here, shown once, stored as a SHA-256 digest.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// Tokens start with this, so a leaked one is easy to recognise in logs and scanners.
pub const PREFIX: &str = "vdt_";

/// A fresh secret with 256 random bits.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret. A fast digest is right here: the secret has 256 random
/// bits, so there is nothing to guess that a slow hash would protect.
pub fn digest(secret: &str) -> String {
    let hash = Sha256::digest(secret.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_and_distinct() {
        let (a, b) = (generate(), generate());
        assert!(a.starts_with(PREFIX) && a.len() == PREFIX.len() + 43);
        assert_ne!(a, b);
    }

    #[test]
    fn digest_is_stable_hex_sha256() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
