//! Segment privacy: per-segment encryption and sealing segment keys to auditor seats.
//!
//! Each segment is encrypted with its own 32-byte key (XChaCha20-Poly1305, a 24-byte
//! nonce, the blinded segment id as associated data, so a ciphertext cannot be passed off
//! as another segment's). The provider seals each segment key to the X25519 key of each
//! seat drawn for that segment only: an ephemeral X25519 key agreement with the seat's
//! sealing key, a key derived by hashing both public keys, the shared secret and a context
//! (session, segment, seat), and XChaCha20-Poly1305 over the segment key. A key sealed to
//! one seat does not open for another, nor for the same seat under another context
//! ([`key_context`], the one context both the provider and the seat use).
//!
//! The plaintext of a segment is a [`SegmentDoc`] (JSON): the claim, with the premises and
//! operations its seats read beside it.
//!
//! Pure: the caller supplies the randomness (segment keys, nonces, ephemeral secrets), so
//! this crate never touches the OS.

use chacha20poly1305::{
    KeyInit, XChaCha20Poly1305, XNonce,
    aead::{Aead, Payload},
};
use serde::{Deserialize, Serialize};
use x25519_dalek::{PublicKey as XPublic, StaticSecret};

use crate::{AccountId, Hash, SealingPublicKey};

/// Length of a segment key.
pub const KEY_LEN: usize = 32;
/// Length of an XChaCha20 nonce.
pub const NONCE_LEN: usize = 24;
/// Largest plaintext segment accepted for encryption (1 MiB blocks hold ciphertexts).
pub const MAX_SEGMENT_PLAINTEXT: usize = 1024 * 1024 - NONCE_LEN - 16;

/// Why encryption or decryption failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The ciphertext is not authentic under this key, nonce and associated data.
    #[error("decryption failed: wrong key, wrong segment, or tampered ciphertext")]
    Decrypt,
    /// The input is too short to hold a nonce and a tag.
    #[error("ciphertext of {0} bytes is too short")]
    TooShort(usize),
    /// The plaintext is larger than [`MAX_SEGMENT_PLAINTEXT`].
    #[error("segment of {0} bytes is larger than the {MAX_SEGMENT_PLAINTEXT}-byte limit")]
    TooLarge(usize),
    /// The key agreement produced the all-zero secret (a low-order public key).
    #[error("sealing key {0} is a low-order point")]
    WeakKey(SealingPublicKey),
    /// Encryption failed (only for inputs the cipher cannot take).
    #[error("encryption failed")]
    Encrypt,
}

/// An X25519 secret held by an auditor to open keys sealed to its seats.
#[derive(Clone)]
pub struct SealingSecret(StaticSecret);

impl core::fmt::Debug for SealingSecret {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SealingSecret")
            .field("public", &self.public())
            .finish_non_exhaustive()
    }
}

impl SealingSecret {
    /// The secret with these 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(StaticSecret::from(bytes))
    }

    /// Its public half, registered on the ledger.
    pub fn public(&self) -> SealingPublicKey {
        SealingPublicKey(XPublic::from(&self.0).to_bytes())
    }

    /// The secret bytes (store with care).
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// The X25519 shared secret with `ephemeral` (all zeros for a low-order key).
    pub(crate) fn shared_with(&self, ephemeral: &SealingPublicKey) -> [u8; 32] {
        self.0
            .diffie_hellman(&XPublic::from(ephemeral.0))
            .to_bytes()
    }
}

/// A segment key sealed to one seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedKey {
    /// The sender's ephemeral X25519 public key.
    pub ephemeral: SealingPublicKey,
    /// The encrypted segment key with its tag.
    pub ciphertext: Vec<u8>,
}

fn cipher(key: &[u8; KEY_LEN]) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(key.into())
}

/// What a segment's ciphertext holds: the claim, and the text of the premises it cites
/// that are not audited in this session (typically the problem statement, when no
/// auditor of its tier is on the network), so that a seat judges the claim with what it
/// rests on and nothing more of the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentDoc {
    /// The segment's text, an exact span of the trace.
    pub claim: String,
    /// Unaudited premises it cites, verbatim.
    #[serde(default)]
    pub given: Vec<String>,
    /// For a STEP: its OPERATIONs, the bare calculations inside the claim that the
    /// Computer tier checks on their own. A seat checks them again with the same judge
    /// and shows the result to its judge; any that is not a span of the claim is ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    /// For a step of a formal proof: what its Computer seat checks besides the claim (the
    /// step's role, what it cites and the active hypotheses; for the proof's structure
    /// seat, the proof without its formulas). Read by the node's formal-proof judge; the
    /// protocol only carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<serde_json::Value>,
    /// For a tool call of a persistent kernel (a tool segment of cell semantics): the code
    /// of the same kernel's earlier calls in the trace, in order, which its seats replay
    /// before re-running it. Bound to the segment's id like the claim, so a provider cannot
    /// show a seat other earlier cells than the trace's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<String>,
}

impl SegmentDoc {
    /// The plaintext that is encrypted (JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses a decrypted segment; a clear error for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SegmentDocError> {
        serde_json::from_slice(bytes).map_err(SegmentDocError)
    }
}

/// Decrypted bytes that are not a [`SegmentDoc`].
#[derive(Debug, thiserror::Error)]
#[error("not a segment document: {0}")]
pub struct SegmentDocError(#[source] serde_json::Error);

/// Encrypts a segment: returns `nonce || ciphertext || tag`, the bytes stored as a blob.
pub fn encrypt_segment(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    segment_id: &Hash,
    plaintext: &[u8],
) -> Result<Vec<u8>, SealError> {
    if plaintext.len() > MAX_SEGMENT_PLAINTEXT {
        return Err(SealError::TooLarge(plaintext.len()));
    }
    let ct = cipher(key)
        .encrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: plaintext,
                aad: segment_id.as_ref(),
            },
        )
        .map_err(|_| SealError::Encrypt)?;
    let mut out = Vec::with_capacity(NONCE_LEN.saturating_add(ct.len()));
    out.extend_from_slice(nonce);
    out.extend_from_slice(&ct);
    Ok(out)
}

/// Decrypts a blob made by [`encrypt_segment`].
pub fn decrypt_segment(
    key: &[u8; KEY_LEN],
    segment_id: &Hash,
    blob: &[u8],
) -> Result<Vec<u8>, SealError> {
    if blob.len() < NONCE_LEN.saturating_add(16) {
        return Err(SealError::TooShort(blob.len()));
    }
    let (nonce, ct) = blob.split_at(NONCE_LEN);
    cipher(key)
        .decrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: ct,
                aad: segment_id.as_ref(),
            },
        )
        .map_err(|_| SealError::Decrypt)
}

fn seal_cipher_key(
    ephemeral: &SealingPublicKey,
    recipient: &SealingPublicKey,
    shared: &[u8; 32],
    context: &[u8],
) -> [u8; 32] {
    Hash::of_parts(
        "trust/v1/seal-key",
        &[ephemeral.as_ref(), recipient.as_ref(), shared, context],
    )
    .0
}

/// The context a segment key is sealed under: binds it to one session, segment and seat.
pub fn key_context(session: &Hash, segment_id: &Hash, seat: &AccountId) -> Vec<u8> {
    let mut c = b"trust/v1/segment-key".to_vec();
    c.extend_from_slice(session.as_ref());
    c.extend_from_slice(segment_id.as_ref());
    c.extend_from_slice(seat.as_ref());
    c
}

/// Seals `segment_key` to `recipient` under `context` (bind it to session, segment and
/// seat). `ephemeral_secret` must be fresh randomness for every call.
pub fn seal_key(
    recipient: &SealingPublicKey,
    segment_key: &[u8; KEY_LEN],
    ephemeral_secret: [u8; 32],
    context: &[u8],
) -> Result<SealedKey, SealError> {
    let e = StaticSecret::from(ephemeral_secret);
    let ephemeral = SealingPublicKey(XPublic::from(&e).to_bytes());
    let shared = e.diffie_hellman(&XPublic::from(recipient.0));
    if !shared.was_contributory() {
        return Err(SealError::WeakKey(*recipient));
    }
    let k = seal_cipher_key(&ephemeral, recipient, shared.as_bytes(), context);
    // The cipher key is used once, so a fixed nonce is safe.
    let ciphertext = cipher(&k)
        .encrypt(
            XNonce::from_slice(&[0u8; NONCE_LEN]),
            Payload {
                msg: segment_key,
                aad: context,
            },
        )
        .map_err(|_| SealError::Encrypt)?;
    Ok(SealedKey {
        ephemeral,
        ciphertext,
    })
}

/// Opens a key sealed to `secret` under `context`.
pub fn open_key(
    secret: &SealingSecret,
    sealed: &SealedKey,
    context: &[u8],
) -> Result<[u8; KEY_LEN], SealError> {
    let shared = secret.shared_with(&sealed.ephemeral);
    open_with_shared(&secret.public(), &shared, sealed, context)
}

/// Opens `sealed`, addressed to `recipient`, with the X25519 shared secret of its
/// ephemeral key and the recipient's key: the one opening rule, used by [`open_key`] and
/// by anyone checking a revealed shared secret ([`crate::badkey`]). An all-zero secret
/// (a low-order ephemeral key: no key agreement at all) opens nothing.
pub(crate) fn open_with_shared(
    recipient: &SealingPublicKey,
    shared: &[u8; 32],
    sealed: &SealedKey,
    context: &[u8],
) -> Result<[u8; KEY_LEN], SealError> {
    if shared == &[0u8; 32] {
        return Err(SealError::WeakKey(sealed.ephemeral));
    }
    let k = seal_cipher_key(&sealed.ephemeral, recipient, shared, context);
    let pt = cipher(&k)
        .decrypt(
            XNonce::from_slice(&[0u8; NONCE_LEN]),
            Payload {
                msg: &sealed.ciphertext,
                aad: context,
            },
        )
        .map_err(|_| SealError::Decrypt)?;
    <[u8; KEY_LEN]>::try_from(pt.as_slice()).map_err(|_| SealError::Decrypt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(label: &str) -> SealingSecret {
        SealingSecret::from_bytes(Hash::of_parts("test-seal", &[label.as_bytes()]).0)
    }

    #[test]
    fn only_the_seat_opens_its_key_and_only_its_segment_decrypts() {
        let seg = Hash::sha256(b"segment-1");
        let key = [7u8; 32];
        let blob = encrypt_segment(&key, &[9u8; 24], &seg, b"5x = 6x - 14").expect("encrypt");
        assert!(!blob.windows(5).any(|w| w == b"6x - "), "plaintext leaked");

        let seat = secret("seat");
        let ctx = b"session|segment-1|seat";
        let sealed = seal_key(&seat.public(), &key, [1u8; 32], ctx).expect("seal");
        let opened = open_key(&seat, &sealed, ctx).expect("open");
        assert_eq!(opened, key);
        assert_eq!(
            decrypt_segment(&opened, &seg, &blob).expect("decrypt"),
            b"5x = 6x - 14"
        );

        // Another auditor, or the same seat under another context, cannot open it.
        assert_eq!(
            open_key(&secret("other"), &sealed, ctx),
            Err(SealError::Decrypt)
        );
        assert_eq!(
            open_key(&seat, &sealed, b"session|segment-2|seat"),
            Err(SealError::Decrypt)
        );
        // The right key with another segment id, a wrong key, or a flipped bit fail.
        assert_eq!(
            decrypt_segment(&key, &Hash::sha256(b"segment-2"), &blob),
            Err(SealError::Decrypt)
        );
        assert_eq!(
            decrypt_segment(&[8u8; 32], &seg, &blob),
            Err(SealError::Decrypt)
        );
        let mut tampered = blob.clone();
        if let Some(b) = tampered.last_mut() {
            *b ^= 1;
        }
        assert_eq!(
            decrypt_segment(&key, &seg, &tampered),
            Err(SealError::Decrypt)
        );
        assert_eq!(
            decrypt_segment(&key, &seg, &blob[..10]),
            Err(SealError::TooShort(10))
        );
    }

    /// The sealing context is part of every sealed key on the ledger: its bytes are
    /// pinned, so a change breaks the keys already delivered and fails here on purpose.
    #[test]
    fn key_context_bytes_are_pinned() {
        let session = Hash([1u8; 32]);
        let segment = Hash([2u8; 32]);
        let seat = AccountId::from([3u8; 32]);
        let ctx = key_context(&session, &segment, &seat);
        let mut expected = b"trust/v1/segment-key".to_vec();
        expected.extend_from_slice(&[1u8; 32]);
        expected.extend_from_slice(&[2u8; 32]);
        expected.extend_from_slice(&[3u8; 32]);
        assert_eq!(ctx, expected);
        assert_eq!(ctx.len(), 20 + 3 * 32);
        assert_eq!(
            hex::encode(&ctx[..20]),
            "74727573742f76312f7365676d656e742d6b6579"
        );
        // Each part binds: another session, segment or seat gives another context.
        let other = Hash([9u8; 32]);
        assert_ne!(key_context(&other, &segment, &seat), ctx);
        assert_ne!(key_context(&session, &other, &seat), ctx);
        assert_ne!(
            key_context(&session, &segment, &AccountId::from([9u8; 32])),
            ctx
        );
    }

    #[test]
    fn segment_documents_round_trip_and_anything_else_is_refused() {
        let doc = SegmentDoc {
            claim: "5x = 6x - 14".into(),
            given: vec!["x / (3x - 7) = 2/5".into()],
            operations: Vec::new(),
            proof: None,
            cells: Vec::new(),
        };
        let bytes = doc.to_bytes();
        assert_eq!(
            bytes,
            br#"{"claim":"5x = 6x - 14","given":["x / (3x - 7) = 2/5"]}"#
        );
        assert_eq!(SegmentDoc::from_bytes(&bytes).expect("parses"), doc);
        // A tool call's earlier cells travel with it, and read back the same.
        let cell = SegmentDoc {
            cells: vec!["x = 2".into(), "y = x + 1".into()],
            ..doc.clone()
        };
        let bytes = cell.to_bytes();
        assert!(
            bytes.ends_with(br#","cells":["x = 2","y = x + 1"]}"#),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        assert_eq!(SegmentDoc::from_bytes(&bytes).expect("parses"), cell);
        let e = SegmentDoc::from_bytes(br#"{"claim":"x","extra":1}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("not a segment document: unknown field `extra`"),
            "{e}"
        );
    }

    #[test]
    fn low_order_keys_are_refused() {
        // The all-zero point gives an all-zero shared secret.
        let zero = SealingPublicKey([0u8; 32]);
        assert_eq!(
            seal_key(&zero, &[1u8; 32], [2u8; 32], b"c"),
            Err(SealError::WeakKey(zero))
        );
    }

    #[test]
    fn oversized_segment_refused() {
        let big = vec![0u8; MAX_SEGMENT_PLAINTEXT + 1];
        assert!(matches!(
            encrypt_segment(&[0u8; 32], &[0u8; 24], &Hash::ZERO, &big),
            Err(SealError::TooLarge(_))
        ));
    }
}
