//! Account keys (ed25519) and sealing keys (X25519).
//!
//! An account is identified by its ed25519 public key ([`AccountId`]). Key generation takes
//! a 32-byte seed from the caller: this crate never touches OS randomness, so the node
//! draws the seed and tests derive it deterministically.

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

crate::bytes::byte_array_newtype!(
    /// An ed25519 public key; also the id of the account that holds it.
    PublicKey,
    32
);

crate::bytes::byte_array_newtype!(
    /// An ed25519 signature.
    Signature,
    64
);

crate::bytes::byte_array_newtype!(
    /// An X25519 public key to which segment keys are sealed for an auditor seat.
    SealingPublicKey,
    32
);

/// Accounts are named by their public key.
pub type AccountId = PublicKey;

/// Why a signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The public key bytes are not a valid (or are a weak) ed25519 point.
    #[error("malformed public key {0}")]
    MalformedKey(PublicKey),
    /// The signature does not verify for this key, message and domain tag.
    #[error("signature by {0} does not verify")]
    Invalid(PublicKey),
}

/// An ed25519 signing key pair.
#[derive(Clone)]
pub struct Keypair {
    signing: SigningKey,
}

impl core::fmt::Debug for Keypair {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Keypair")
            .field("public", &self.public())
            .finish_non_exhaustive()
    }
}

impl Keypair {
    /// The key pair whose secret is this 32-byte seed.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self {
            signing: SigningKey::from_bytes(&seed),
        }
    }

    /// A deterministic key pair for tests and simulations, derived from a label.
    pub fn from_label(label: &str) -> Self {
        Self::from_seed(crate::Hash::of_parts("trust/v1/test-key", &[label.as_bytes()]).0)
    }

    /// The secret seed (store it with care).
    pub fn seed(&self) -> [u8; 32] {
        self.signing.to_bytes()
    }

    /// The public key, which is also the account id.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.signing.verifying_key().to_bytes())
    }

    /// The Ed25519 key expansion (RFC 8032 §5.1.5) of the secret seed: the secret scalar
    /// `x` (the clamped first half of `SHA-512(seed)`, reduced mod the group order; the
    /// public key is `x·B`) and the nonce key (the second half). The VRF proves with them
    /// under its own hash tags ([`crate::vrf`]).
    pub(crate) fn expanded_secret(&self) -> (curve25519_dalek::Scalar, [u8; 32]) {
        use sha2::{Digest, Sha512};
        let h: [u8; 64] = Sha512::digest(self.signing.to_bytes()).into();
        let (mut lo, mut hi) = ([0u8; 32], [0u8; 32]);
        for (slot, b) in lo.iter_mut().chain(hi.iter_mut()).zip(h) {
            *slot = b;
        }
        let x = curve25519_dalek::Scalar::from_bytes_mod_order(
            curve25519_dalek::scalar::clamp_integer(lo),
        );
        (x, hi)
    }

    /// Signs raw bytes. Protocol messages are signed through [`crate::Signed`], which adds
    /// the domain tag; use this only for bytes that already carry one.
    pub fn sign_raw(&self, msg: &[u8]) -> Signature {
        Signature(self.signing.sign(msg).to_bytes())
    }
}

impl PublicKey {
    /// Verifies `sig` over raw `msg` with strict ed25519 rules (no malleable signatures,
    /// no small-order keys).
    pub fn verify_raw(&self, msg: &[u8], sig: &Signature) -> Result<(), SignatureError> {
        let vk =
            VerifyingKey::from_bytes(&self.0).map_err(|_| SignatureError::MalformedKey(*self))?;
        if vk.is_weak() {
            return Err(SignatureError::MalformedKey(*self));
        }
        let s = ed25519_dalek::Signature::from_bytes(&sig.0);
        vk.verify_strict(msg, &s)
            .map_err(|_| SignatureError::Invalid(*self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify_raw() {
        let kp = Keypair::from_label("alice");
        let sig = kp.sign_raw(b"hello");
        assert!(kp.public().verify_raw(b"hello", &sig).is_ok());
        assert_eq!(
            kp.public().verify_raw(b"hellO", &sig),
            Err(SignatureError::Invalid(kp.public()))
        );
        let other = Keypair::from_label("bob");
        assert!(other.public().verify_raw(b"hello", &sig).is_err());
    }

    #[test]
    fn seed_round_trip() {
        let kp = Keypair::from_label("x");
        assert_eq!(Keypair::from_seed(kp.seed()).public(), kp.public());
    }

    #[test]
    fn weak_key_rejected() {
        // The identity point is a small-order key.
        let mut id = [0u8; 32];
        id[0] = 1;
        let pk = PublicKey(id);
        assert!(matches!(
            pk.verify_raw(b"m", &Signature([0u8; 64])),
            Err(SignatureError::MalformedKey(_))
        ));
    }
}
