//! A verifiable random function (VRF) over edwards25519: the randomness of block seeds.
//!
//! The holder of a key pair `(x, Y = x·B)` computes, for any input `alpha`, an output
//! `beta` and a proof `pi`; anyone holding `Y` checks `pi` against `alpha` and learns
//! `beta`. Two properties make it a seed no proposer can grind:
//!
//! - **Uniqueness.** For one key and one input exactly one output verifies. The key
//!   holder can make many valid proofs (any nonce makes one), but they all carry the same
//!   output, so it has no choice of output at all.
//! - **Pseudorandomness.** Without the proof, the output cannot be told from random by
//!   anyone who does not hold `x`, even knowing `Y` and `alpha`.
//!
//! # Construction
//!
//! The EC-VRF of RFC 9381 with the parameters of its suite ECVRF-EDWARDS25519-SHA512-TAI
//! (cofactor 8, SHA-512, a 16-byte challenge, encodings and decodings of RFC 8032 §5.1.2
//! and §5.1.3, little-endian integers), written from the RFC's description. Every hash
//! starts with this protocol's suite string [`SUITE`] and a one-byte purpose tag:
//!
//! | step | computation |
//! |---|---|
//! | hash to curve (`0x01`) | `H = 8·P` for the first counter `ctr` in `0..=255` whose `P` = the 32 first bytes of `SHA-512(SUITE ‖ 0x01 ‖ Y ‖ alpha ‖ ctr ‖ 0x00)`, read as a canonically encoded curve point, gives an `H` that is not the identity (try and increment) |
//! | nonce (`0x04`) | `k = SHA-512(SUITE ‖ 0x04 ‖ nonce key ‖ H) mod L`, the nonce key being the second half of the Ed25519 key expansion `SHA-512(seed)` |
//! | challenge (`0x02`) | `c` = the 16 first bytes of `SHA-512(SUITE ‖ 0x02 ‖ Y ‖ H ‖ Gamma ‖ k·B ‖ k·H ‖ 0x00)` |
//! | proof | `Gamma = x·H`, `s = k + c·x mod L`, `pi = Gamma ‖ c ‖ s` (32 + 16 + 32 = 80 bytes) |
//! | output (`0x03`) | `beta = SHA-512(SUITE ‖ 0x03 ‖ 8·Gamma ‖ 0x00)` (64 bytes) |
//! | verification | `Y` decodes and is not of small order; `Gamma` decodes; `s < L`; with `U = s·B − c·Y` and `V = s·H − c·Gamma`, the challenge over `(Y, H, Gamma, U, V)` is `c` |
//!
//! Where it departs from the RFC suite, and why: the suite string is [`SUITE`] instead of
//! the single byte `0x03`, and the nonce hash gets a purpose tag of its own in front of the
//! nonce key (the RFC hashes the nonce key and `H` alone). Both serve the key reuse below.
//! With the RFC's suite byte and untagged nonce the code gives the RFC's own test vectors
//! (checked in the tests).
//!
//! # Why the account key can serve as the VRF key
//!
//! A validator proves its block seeds with its Ed25519 account key: the same secret scalar
//! `x` answers Ed25519 signatures (`S = r + e·x`) and VRF proofs (`s = k + c·x`). Both are
//! Schnorr-type proofs of knowledge of `x`, and sharing `x` between them is safe when
//! neither scheme's transcripts can serve the other:
//!
//! - **Nonces never coincide.** Ed25519 draws `r = SHA-512(nonce key ‖ message)`. The RFC
//!   suite draws `k = SHA-512(nonce key ‖ H)`, which is exactly the Ed25519 nonce of a
//!   signature over the 32 bytes of `H`: one such signature beside one proof gives
//!   `x = (S − s) / (e − c)` (the tests carry out this very extraction under the RFC
//!   suite). Here `k` hashes [`SUITE`] and the tag *before* the secret nonce key, so the
//!   two hashes share an input only if the secret nonce key began with the public suite
//!   string (a chance of 2^-256), and otherwise share an output only by a SHA-512
//!   collision.
//! - **Challenges come from separate hashes.** An Ed25519 challenge hashes `R ‖ A ‖ M` to
//!   64 bytes; a VRF challenge hashes [`SUITE`], a tag and five points to 16 bytes. A
//!   signature is 64 bytes and a proof 80, verified by different equations, so neither is
//!   ever taken for the other.
//! - **Each transcript is simulated without `x`.** In the random-oracle model a VRF proof
//!   is zero-knowledge: with `H` programmed to `t·B`, `Gamma = t·Y` and the proof follow
//!   without `x`. So proofs give a forger of signatures nothing it could not compute from
//!   `Y`, and signatures give a forger of proofs nothing either.
//!
//! No other part of the protocol hashes under [`SUITE`], so no other message of the
//! account key is ever a step of this VRF.
//!
//! Pure: no I/O, no clock, no OS randomness (the nonce is derived, as in Ed25519).

use curve25519_dalek::{
    edwards::{CompressedEdwardsY, EdwardsPoint},
    scalar::Scalar,
    traits::IsIdentity,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha512};

use crate::{Keypair, PublicKey};

/// The suite string every hash of this VRF starts with.
pub const SUITE: &[u8] = b"trust/v1/ecvrf-edwards25519-sha512-tai";

/// Length of a proof: `Gamma` (32) ‖ `c` (16) ‖ `s` (32).
pub const PROOF_LEN: usize = 80;
/// Length of a challenge.
const C_LEN: usize = 16;

const HASH_TO_CURVE: u8 = 0x01;
const CHALLENGE: u8 = 0x02;
const OUTPUT: u8 = 0x03;
const NONCE: u8 = 0x04;
const BACK: u8 = 0x00;

crate::bytes::byte_array_newtype!(
    /// A VRF output (`beta`): 64 bytes, unique per key and input.
    VrfOutput,
    64
);

/// Why a VRF key, proof or input was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VrfError {
    /// The public key bytes are not the canonical encoding of a curve point.
    #[error("VRF key {0} is not a curve point")]
    MalformedKey(PublicKey),
    /// The public key is of small order: its proofs would prove nothing.
    #[error("VRF key {0} is of small order")]
    WeakKey(PublicKey),
    /// The proof bytes do not decode: which part is wrong.
    #[error("malformed VRF proof: {0}")]
    MalformedProof(&'static str),
    /// The proof does not verify for this key and input.
    #[error("VRF proof does not verify for key {0} and this input")]
    Invalid(PublicKey),
    /// No counter maps this key and input to a curve point (probability about 2^-256).
    #[error("no curve point for this VRF input")]
    NoPoint,
}

/// The hash prefixes of a suite: the suite string, and whether the nonce hash is tagged.
#[derive(Debug, Clone, Copy)]
struct Suite {
    id: &'static [u8],
    tagged_nonce: bool,
}

/// This protocol's suite.
const TRUST: Suite = Suite {
    id: SUITE,
    tagged_nonce: true,
};

/// A VRF proof, decoded: its `Gamma` is a canonically encoded curve point and its `s` a
/// canonical scalar, so the output it carries ([`VrfProof::output`]) is defined. Whether it
/// was made with the key of the one who presents it, for the input it claims, is what
/// [`VrfProof::verify`] checks.
///
/// Encoded as its 80 bytes (hex in human-readable formats); decoding refuses bytes that are
/// not a proof.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "raw::ProofBytes", into = "raw::ProofBytes")]
pub struct VrfProof {
    bytes: [u8; PROOF_LEN],
    output: VrfOutput,
}

/// The unchecked bytes a proof travels as (the shared byte-array encoding); the macro's
/// helpers for them go unused.
#[allow(unreachable_pub, dead_code, clippy::wrong_self_convention)]
mod raw {
    crate::bytes::byte_array_newtype!(
        /// The bytes of a proof, as they travel.
        ProofBytes,
        80
    );
}

impl TryFrom<raw::ProofBytes> for VrfProof {
    type Error = VrfError;
    fn try_from(b: raw::ProofBytes) -> Result<Self, VrfError> {
        VrfProof::from_bytes(b.0)
    }
}

impl From<VrfProof> for raw::ProofBytes {
    fn from(p: VrfProof) -> Self {
        raw::ProofBytes(p.bytes)
    }
}

impl core::fmt::Debug for VrfProof {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let h = hex::encode(self.bytes);
        write!(f, "VrfProof({}…)", h.get(..12).unwrap_or(&h))
    }
}

impl core::fmt::Display for VrfProof {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&hex::encode(self.bytes))
    }
}

impl VrfProof {
    /// Decodes a proof: `Gamma` must be the canonical encoding of a curve point and `s` a
    /// scalar below the group order `L`.
    pub fn from_bytes(bytes: [u8; PROOF_LEN]) -> Result<Self, VrfError> {
        let (gamma, _, _) = decode_proof(&bytes)?;
        Ok(VrfProof {
            bytes,
            output: proof_to_hash(&TRUST, &gamma),
        })
    }

    /// The 80 bytes.
    pub fn as_bytes(&self) -> &[u8; PROOF_LEN] {
        &self.bytes
    }

    /// The output this proof carries, read without checking it: only a proof that
    /// [`VrfProof::verify`] accepted binds it to a key and an input.
    pub fn output(&self) -> &VrfOutput {
        &self.output
    }

    /// Checks that the holder of `key` made this proof for `alpha`; returns the output.
    pub fn verify(&self, key: &PublicKey, alpha: &[u8]) -> Result<VrfOutput, VrfError> {
        verify_with(&TRUST, key, alpha, &self.bytes).map(VrfOutput)
    }
}

/// Proves `alpha` with `key`: the proof, whose [`VrfProof::output`] is the key's unique
/// output for `alpha`.
pub fn prove(key: &Keypair, alpha: &[u8]) -> Result<VrfProof, VrfError> {
    VrfProof::from_bytes(prove_with(&TRUST, key, alpha)?)
}

/// A byte string as a canonically encoded point: `None` when the string is not the
/// encoding of a point, or not its canonical one (a `y` coordinate of `p` or more, or a
/// sign bit set on `x = 0`), as RFC 8032 §5.1.3 decodes.
fn decode_point(bytes: &[u8; 32]) -> Option<EdwardsPoint> {
    let p = CompressedEdwardsY(*bytes).decompress()?;
    (p.compress().as_bytes() == bytes).then_some(p)
}

/// The 32 first bytes of a 64-byte digest.
fn first_half(digest: &[u8; 64]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (o, d) in out.iter_mut().zip(digest) {
        *o = *d;
    }
    out
}

/// A 16-byte little-endian challenge as a scalar (below `L`: no reduction happens).
fn challenge_scalar(c: &[u8; C_LEN]) -> Scalar {
    let mut wide = [0u8; 32];
    for (w, b) in wide.iter_mut().zip(c) {
        *w = *b;
    }
    Scalar::from_bytes_mod_order(wide)
}

/// Try-and-increment hash to the curve, with `salt` the encoded public key (RFC 9381
/// §5.4.1.1).
fn encode_to_curve(suite: &Suite, salt: &[u8; 32], alpha: &[u8]) -> Result<EdwardsPoint, VrfError> {
    for ctr in 0..=u8::MAX {
        let digest: [u8; 64] = Sha512::new()
            .chain_update(suite.id)
            .chain_update([HASH_TO_CURVE])
            .chain_update(salt)
            .chain_update(alpha)
            .chain_update([ctr, BACK])
            .finalize()
            .into();
        if let Some(p) = decode_point(&first_half(&digest)) {
            let h = p.mul_by_cofactor();
            if !h.is_identity() {
                return Ok(h);
            }
        }
    }
    Err(VrfError::NoPoint)
}

/// The nonce for `h` (RFC 9381 §5.4.2.2, tagged in this suite).
fn nonce(suite: &Suite, nonce_key: &[u8; 32], h: &[u8; 32]) -> Scalar {
    let mut hasher = Sha512::new();
    if suite.tagged_nonce {
        hasher.update(suite.id);
        hasher.update([NONCE]);
    }
    hasher.update(nonce_key);
    hasher.update(h);
    let digest: [u8; 64] = hasher.finalize().into();
    Scalar::from_bytes_mod_order_wide(&digest)
}

/// The challenge over five encoded points (RFC 9381 §5.4.3).
fn challenge(suite: &Suite, points: [&[u8; 32]; 5]) -> [u8; C_LEN] {
    let mut hasher = Sha512::new();
    hasher.update(suite.id);
    hasher.update([CHALLENGE]);
    for p in points {
        hasher.update(p);
    }
    hasher.update([BACK]);
    let digest: [u8; 64] = hasher.finalize().into();
    let mut c = [0u8; C_LEN];
    for (o, d) in c.iter_mut().zip(digest) {
        *o = d;
    }
    c
}

/// The output of a proof's `Gamma` (RFC 9381 §5.2).
fn proof_to_hash(suite: &Suite, gamma: &EdwardsPoint) -> VrfOutput {
    VrfOutput(
        Sha512::new()
            .chain_update(suite.id)
            .chain_update([OUTPUT])
            .chain_update(gamma.mul_by_cofactor().compress().as_bytes())
            .chain_update([BACK])
            .finalize()
            .into(),
    )
}

/// `(Gamma, c, s)` of a proof (RFC 9381 §5.4.4).
fn decode_proof(pi: &[u8; PROOF_LEN]) -> Result<(EdwardsPoint, [u8; C_LEN], Scalar), VrfError> {
    let (gamma, rest) = pi
        .split_first_chunk::<32>()
        .ok_or(VrfError::MalformedProof("too short"))?;
    let (c, s) = rest
        .split_first_chunk::<C_LEN>()
        .ok_or(VrfError::MalformedProof("too short"))?;
    let s: [u8; 32] = s
        .try_into()
        .map_err(|_| VrfError::MalformedProof("too short"))?;
    let gamma =
        decode_point(gamma).ok_or(VrfError::MalformedProof("Gamma is not a curve point"))?;
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s))
        .ok_or(VrfError::MalformedProof("s is not below the group order"))?;
    Ok((gamma, *c, s))
}

/// The group and scalar arithmetic of curve25519-dalek is modular and total: it neither
/// overflows nor panics, whatever the values.
#[allow(clippy::arithmetic_side_effects)]
fn prove_with(suite: &Suite, key: &Keypair, alpha: &[u8]) -> Result<[u8; PROOF_LEN], VrfError> {
    let (x, nonce_key) = key.expanded_secret();
    let y = key.public();
    let h = encode_to_curve(suite, &y.0, alpha)?;
    let h_bytes = h.compress().to_bytes();
    let gamma = (x * h).compress().to_bytes();
    let k = nonce(suite, &nonce_key, &h_bytes);
    let u = EdwardsPoint::mul_base(&k).compress().to_bytes();
    let v = (k * h).compress().to_bytes();
    let c = challenge(suite, [&y.0, &h_bytes, &gamma, &u, &v]);
    let s = k + challenge_scalar(&c) * x;
    let mut pi = [0u8; PROOF_LEN];
    for (o, b) in pi
        .iter_mut()
        .zip(gamma.iter().chain(&c).chain(s.as_bytes()))
    {
        *o = *b;
    }
    Ok(pi)
}

/// Verifies `pi` by `key` over `alpha` (RFC 9381 §5.3, with the key validated as in
/// §5.4.5); returns the output. Arithmetic as in [`prove_with`].
#[allow(clippy::arithmetic_side_effects)]
fn verify_with(
    suite: &Suite,
    key: &PublicKey,
    alpha: &[u8],
    pi: &[u8; PROOF_LEN],
) -> Result<[u8; 64], VrfError> {
    let y = decode_point(&key.0).ok_or(VrfError::MalformedKey(*key))?;
    if y.is_small_order() {
        return Err(VrfError::WeakKey(*key));
    }
    let (gamma, c_bytes, s) = decode_proof(pi)?;
    let c = challenge_scalar(&c_bytes);
    let h = encode_to_curve(suite, &key.0, alpha)?;
    // U = s·B − c·Y, V = s·H − c·Gamma.
    let u = EdwardsPoint::vartime_double_scalar_mul_basepoint(&(-c), &y, &s);
    let v = s * h - c * gamma;
    let expected = challenge(
        suite,
        [
            &key.0,
            h.compress().as_bytes(),
            gamma.compress().as_bytes(),
            u.compress().as_bytes(),
            v.compress().as_bytes(),
        ],
    );
    if expected != c_bytes {
        return Err(VrfError::Invalid(*key));
    }
    Ok(proof_to_hash(suite, &gamma).0)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// RFC 9381's own suite: the single suite byte `0x03`, no nonce tag.
    const RFC9381: Suite = Suite {
        id: &[0x03],
        tagged_nonce: false,
    };

    fn key(label: &str) -> Keypair {
        Keypair::from_label(label)
    }

    fn arr<const N: usize>(hex_str: &str) -> [u8; N] {
        let mut out = [0u8; N];
        hex::decode_to_slice(hex_str, &mut out).unwrap();
        out
    }

    #[test]
    fn the_vrf_secret_is_the_ed25519_secret_of_the_account_key() {
        for label in ["a", "b", "validator-0"] {
            let k = key(label);
            let (x, _) = k.expanded_secret();
            assert_eq!(
                EdwardsPoint::mul_base(&x).compress().to_bytes(),
                k.public().0
            );
        }
    }

    #[test]
    fn a_proof_verifies_and_carries_its_output() {
        let k = key("prover");
        for alpha in [&b""[..], b"x", b"block 7 of chain c", &[0u8; 200]] {
            let pi = prove(&k, alpha).unwrap();
            assert_eq!(pi.verify(&k.public(), alpha), Ok(*pi.output()));
            // The encoding round trips, through a decode that checks it.
            let back: VrfProof = crate::decode(&crate::encode(&pi)).unwrap();
            assert_eq!(back, pi);
            assert_eq!(crate::encode(&pi).len(), PROOF_LEN);
            let json = serde_json::to_string(&pi).unwrap();
            assert_eq!(json, format!("\"{pi}\""));
            assert_eq!(serde_json::from_str::<VrfProof>(&json).unwrap(), pi);
        }
    }

    #[test]
    fn a_proof_for_another_input_or_by_another_key_is_refused() {
        let (a, b) = (key("a"), key("b"));
        let pi = prove(&a, b"input 1").unwrap();
        assert_eq!(
            pi.verify(&a.public(), b"input 2"),
            Err(VrfError::Invalid(a.public()))
        );
        assert_eq!(
            pi.verify(&b.public(), b"input 1"),
            Err(VrfError::Invalid(b.public()))
        );
        // B's own proof of the same input is another output.
        let pb = prove(&b, b"input 1").unwrap();
        assert!(pb.verify(&b.public(), b"input 1").is_ok());
        assert_ne!(pb.output(), pi.output());
    }

    /// Every single-bit change of a proof is refused: by the decoding (Gamma no longer a
    /// point, s no longer canonical) or by the verification.
    #[test]
    fn a_tampered_proof_byte_is_refused() {
        let k = key("tamper");
        let pi = prove(&k, b"alpha").unwrap();
        let mut refused_by_decoding = 0;
        for i in 0..PROOF_LEN {
            for bit in 0..8 {
                let mut bytes = *pi.as_bytes();
                bytes[i] ^= 1 << bit;
                match VrfProof::from_bytes(bytes) {
                    Err(VrfError::MalformedProof(_)) => refused_by_decoding += 1,
                    Err(e) => panic!("byte {i} bit {bit}: {e}"),
                    Ok(p) => assert_eq!(
                        p.verify(&k.public(), b"alpha"),
                        Err(VrfError::Invalid(k.public())),
                        "byte {i} bit {bit}"
                    ),
                }
            }
        }
        // Some flips are caught before any verification (the top bits of s, about half of
        // the Gamma flips), most only by the challenge.
        assert!(refused_by_decoding > 0 && refused_by_decoding < PROOF_LEN * 8);
    }

    /// One key and one input have one output: the same proof every time, and even a proof
    /// made with another nonce (a valid proof of other bytes) carries the same output.
    #[test]
    #[allow(clippy::arithmetic_side_effects)]
    fn the_output_is_unique_per_key_and_input() {
        let k = key("unique");
        let p1 = prove(&k, b"same").unwrap();
        let p2 = prove(&k, b"same").unwrap();
        assert_eq!(p1, p2);
        // A prover free to pick its nonce: other proof bytes, still valid, same output.
        let (x, _) = k.expanded_secret();
        let y = k.public();
        let h = encode_to_curve(&TRUST, &y.0, b"same").unwrap();
        let hb = h.compress().to_bytes();
        let gamma = (x * h).compress().to_bytes();
        let kk = Scalar::from_bytes_mod_order([42; 32]);
        let u = EdwardsPoint::mul_base(&kk).compress().to_bytes();
        let v = (kk * h).compress().to_bytes();
        let c = challenge(&TRUST, [&y.0, &hb, &gamma, &u, &v]);
        let s = kk + challenge_scalar(&c) * x;
        let mut bytes = [0u8; PROOF_LEN];
        bytes[..32].copy_from_slice(&gamma);
        bytes[32..48].copy_from_slice(&c);
        bytes[48..].copy_from_slice(s.as_bytes());
        let other = VrfProof::from_bytes(bytes).unwrap();
        assert_ne!(other.as_bytes(), p1.as_bytes());
        assert_eq!(other.verify(&y, b"same"), Ok(*p1.output()));
        // And another input, another output.
        assert_ne!(prove(&k, b"other").unwrap().output(), p1.output());
    }

    #[test]
    fn malformed_points_and_scalars_are_refused_without_panic() {
        let k = key("points");
        let pi = prove(&k, b"m").unwrap();
        // y = p (not canonical: it would decode as y = 0), and y = 2^255 - 1.
        let p_bytes: [u8; 32] =
            arr("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
        let mut ones = [0xff; 32];
        ones[31] = 0x7f;
        // x = 0 with the sign bit set: y = 1 (the identity) encoded with a negative zero.
        let mut neg_zero = [0u8; 32];
        neg_zero[0] = 1;
        neg_zero[31] = 0x80;
        // 2 is not the y of any point (y^2 - 1 over d y^2 + 1 is not a square).
        let mut not_a_point = [0u8; 32];
        not_a_point[0] = 2;
        for bad in [p_bytes, ones, neg_zero, not_a_point] {
            if CompressedEdwardsY(bad).decompress().is_some() {
                // Decodes leniently but is not canonical: still refused here.
                assert!(decode_point(&bad).is_none(), "{}", hex::encode(bad));
            }
            assert_eq!(
                pi.verify(&PublicKey(bad), b"m"),
                Err(VrfError::MalformedKey(PublicKey(bad)))
            );
            let mut bytes = *pi.as_bytes();
            bytes[..32].copy_from_slice(&bad);
            assert_eq!(
                VrfProof::from_bytes(bytes),
                Err(VrfError::MalformedProof("Gamma is not a curve point"))
            );
        }
        // The identity and the other small-order points are refused as keys.
        let identity = EdwardsPoint::default().compress().to_bytes();
        assert_eq!(
            pi.verify(&PublicKey(identity), b"m"),
            Err(VrfError::WeakKey(PublicKey(identity)))
        );
        for t in curve25519_dalek::constants::EIGHT_TORSION {
            let t = PublicKey(t.compress().to_bytes());
            assert_eq!(pi.verify(&t, b"m"), Err(VrfError::WeakKey(t)));
        }
        // s = L (the group order) is not canonical.
        let l: [u8; 32] = arr("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
        let mut bytes = *pi.as_bytes();
        bytes[48..].copy_from_slice(&l);
        assert_eq!(
            VrfProof::from_bytes(bytes),
            Err(VrfError::MalformedProof("s is not below the group order"))
        );
        // A proof that does not decode does not decode from the wire either.
        let mut wire = crate::encode(&pi);
        wire[..32].copy_from_slice(&not_a_point);
        assert!(crate::decode::<VrfProof>(&wire).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_proofs_and_keys_never_panic(
            bytes in prop::collection::vec(any::<u8>(), PROOF_LEN),
            pk in any::<[u8; 32]>(),
            alpha in prop::collection::vec(any::<u8>(), 0..64),
        ) {
            let bytes: [u8; PROOF_LEN] = bytes.try_into().unwrap();
            if let Ok(p) = VrfProof::from_bytes(bytes) {
                prop_assert!(p.verify(&PublicKey(pk), &alpha).is_err());
            }
            let _ = crate::decode::<VrfProof>(&bytes);
        }
    }

    /// RFC 9381 Appendix B.3, examples 16 to 18: under the RFC's own suite string and
    /// untagged nonce, this code gives the RFC's proofs and outputs.
    #[test]
    fn rfc_9381_test_vectors_under_the_rfc_suite() {
        let vectors: [(&str, &str, &str, &str, Option<&str>); 3] = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
                "",
                "8657106690b5526245a92b003bb079ccd1a92130477671f6fc01ad16f26f723f26f8a57ccaed74ee1b190bed1f479d9727d2d0f9b005a6e456a35d4fb0daab1268a1b0db10836d9826a528ca76567805",
                Some(
                    "90cf1df3b703cce59e2a35b925d411164068269d7b2d29f3301c03dd757876ff66b71dda49d2de59d03450451af026798e8f81cd2e333de5cdf4f3e140fdd8ae",
                ),
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
                "72",
                "f3141cd382dc42909d19ec5110469e4feae18300e94f304590abdced48aed5933bf0864a62558b3ed7f2fea45c92a465301b3bbf5e3e54ddf2d935be3b67926da3ef39226bbc355bdc9850112c8f4b02",
                Some(
                    "eb4440665d3891d668e7e0fcaf587f1b4bd7fbfe99d0eb2211ccec90496310eb5e33821bc613efb94db5e5b54c70a848a0bef4553a41befc57663b56373a5031",
                ),
            ),
            (
                "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
                "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
                "af82",
                "9bc0f79119cc5604bf02d23b4caede71393cedfbb191434dd016d30177ccbf8096bb474e53895c362d8628ee9f9ea3c0e52c7a5c691b6c18c9979866568add7a2d41b00b05081ed0f58ee5e31b3a970e",
                None,
            ),
        ];
        for (sk, pk, alpha, pi, beta) in vectors {
            let k = Keypair::from_seed(arr(sk));
            assert_eq!(k.public().to_hex(), pk);
            let alpha = hex::decode(alpha).unwrap();
            let proof = prove_with(&RFC9381, &k, &alpha).unwrap();
            assert_eq!(hex::encode(proof), pi);
            let out = verify_with(&RFC9381, &k.public(), &alpha, &proof).unwrap();
            if let Some(beta) = beta {
                assert_eq!(hex::encode(out), beta);
            }
            // The same key and input give another proof and output under this
            // protocol's suite, which the RFC suite does not accept.
            let ours = prove(&k, &alpha).unwrap();
            assert_ne!(ours.as_bytes(), &proof);
            assert!(verify_with(&RFC9381, &k.public(), &alpha, ours.as_bytes()).is_err());
        }
    }

    /// Why the nonce carries a tag: under the RFC suite, one Ed25519 signature over the
    /// 32 bytes of `H` and one VRF proof share their nonce, and together give away the
    /// secret scalar. Under this protocol's suite the same computation finds nothing.
    #[test]
    #[allow(clippy::arithmetic_side_effects)]
    fn an_ed25519_signature_never_shares_a_nonce_with_a_proof() {
        let k = key("reused account key");
        let alpha = b"block input";
        let extract = |suite: &Suite, pi: &[u8; PROOF_LEN]| {
            let h = encode_to_curve(suite, &k.public().0, alpha)
                .unwrap()
                .compress()
                .to_bytes();
            let sig = k.sign_raw(&h).0;
            let r: [u8; 32] = sig[..32].try_into().unwrap();
            let big_s = Scalar::from_canonical_bytes(sig[32..].try_into().unwrap()).unwrap();
            let e: [u8; 64] = Sha512::new()
                .chain_update(r)
                .chain_update(k.public().0)
                .chain_update(h)
                .finalize()
                .into();
            let e = Scalar::from_bytes_mod_order_wide(&e);
            let (_, c, s) = decode_proof(pi).unwrap();
            // S − s = (e − c)·x when both used the same nonce.
            let x = (big_s - s) * (e - challenge_scalar(&c)).invert();
            EdwardsPoint::mul_base(&x).compress().to_bytes() == k.public().0
        };
        let rfc = prove_with(&RFC9381, &k, alpha).unwrap();
        assert!(
            extract(&RFC9381, &rfc),
            "the RFC suite's nonce is Ed25519's"
        );
        let ours = prove(&k, alpha).unwrap();
        assert!(
            !extract(&TRUST, ours.as_bytes()),
            "the tagged nonce leaked the key"
        );
    }

    /// A known answer of this protocol's suite: a changed hash, tag or encoding fails here.
    #[test]
    fn golden_vector() {
        let k = Keypair::from_seed([7; 32]);
        let pi = prove(&k, b"trust golden vector").unwrap();
        assert_eq!(pi.to_string(), GOLDEN_PROOF);
        assert_eq!(pi.output().to_hex(), GOLDEN_OUTPUT);
        assert_eq!(
            pi.verify(&k.public(), b"trust golden vector"),
            Ok(*pi.output())
        );
    }

    const GOLDEN_PROOF: &str = "1824206690c9fc87e1ce1df5445d6112beaa6b7009715ec6d497f6fa0d450c7f338c7cf92b50f771106d3d27921e0b40f0a6d874216c7fb857da8d9498235557cd61eaa5dd9160287031ce4914a52d0d";
    const GOLDEN_OUTPUT: &str = "f42476319f576dab79aa4cf84c961e5e20e527a63d255aad20237651ece4a6b5418b5bf41cd164c507fc594531c6b1c6ac4d2abd2b994cab2414b3625df85bec";
}
