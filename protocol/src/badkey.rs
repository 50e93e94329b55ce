//! A key that does not open, proven: what a seat shows the contract when the provider
//! sealed it a segment key it cannot open, so that the provider pays it as starved.
//!
//! A sealed key ([`SealedKey`]) is an X25519 ephemeral key `E` and a ciphertext. Its seat,
//! holding the X25519 secret `x` of its registered key `P`, derives the box key from the
//! shared secret `x·E` ([`crate::seal::open_key`]). Everything but `x·E` is public (the
//! sealed key is in the `KeyDelivered` event, the seat's key in the registry, the context
//! names session, segment and seat), so a seat that reveals `x·E` and proves it correct
//! lets anyone derive the box key exactly as the seat does and see that the box does not
//! open. The proof ([`BadKeyProof`]) is a Chaum-Pedersen proof of discrete-log equality:
//! `log_G(P) = log_E'(S)`, made without revealing `x`.
//!
//! # Construction
//!
//! Over edwards25519 (curve25519-dalek), in its prime-order subgroup:
//!
//! | step | computation |
//! |---|---|
//! | points | `P` and `E` are Montgomery u-coordinates; `P_ed = to_edwards(P, 0)`, `E_ed = to_edwards(E, 0)` |
//! | subgroup | an X25519 secret is clamped, a multiple of 8: `x = 8·x'`. With `G = 8·B` and `E' = 8·E_ed`, `x·B = x'·G` and `x·E_ed = x'·E'` |
//! | signs | a u-coordinate names a point up to its sign, so `P_ed = ±x'·G`; the prover uses `x'' = ±x'` with `P_ed = x''·G`, and `S = x''·E'` has the u-coordinate of `x·E` either way |
//! | nonce | `k = SHA-512(`[`DLEQ_TAG`]` ‖ 0x02 ‖ secret ‖ P ‖ E ‖ len(ctx) ‖ ctx) mod L` (derived, as in Ed25519: no OS randomness) |
//! | challenge | `c = SHA-512(`[`DLEQ_TAG`]` ‖ 0x01 ‖ P ‖ E ‖ len(ctx) ‖ ctx ‖ P_ed ‖ E' ‖ S ‖ R1 ‖ R2) mod L`, with `R1 = k·G`, `R2 = k·E'` |
//! | proof | `S ‖ c ‖ s` with `s = k + c·x''` (32 + 32 + 32 = 96 bytes) |
//! | verification | `P_ed` decodes, is torsion-free and not the identity; `S` is a canonical encoding of a torsion-free point that is not the identity, and its Montgomery form is the revealed shared secret; `c` and `s` are canonical; with `R1 = s·G − c·P_ed` and `R2 = s·E' − c·S`, the challenge is `c` |
//!
//! The verifier computes `P_ed`, `E'` and the box key from on-chain data only; the
//! prover chooses nothing but `S` (the one value that verifies) and its nonce. Requiring
//! `S` torsion-free matters: with a small-order part `T` in `S`, a challenge that happens
//! to kill `T` (one in eight) would let a false `S` verify.
//!
//! # Boxes that need no proof
//!
//! An honest sealer's ephemeral key is always `e·B`, a point of the prime-order subgroup.
//! Two other kinds of ephemeral key make a box that nobody can open, and the verifier sees
//! so from the box alone (the report's shared secret and proof are not looked at):
//! - **Small order** (`8·E_ed` is the identity): `x·E` is the identity for every clamped
//!   `x`, the all-zero shared secret, which [`crate::seal::open_key`] refuses.
//! - **Not on the curve** (a point of the twist): `x·E` lies on the twist, where its value
//!   is known to nobody who does not know `x` modulo the twist's large prime order, so no
//!   sealer can have made a box that opens under it. The seat never reveals such a
//!   product ([`prove_bad_key`] returns zeros): twist products leak bits of `x`.
//!
//! # What this does not prove
//!
//! A box that opens, but whose key does not decrypt the segment's ciphertext, cannot be
//! checked on chain: the ciphertext is a blob off chain. That seat abstains, unpaid, as
//! before. The report covers the boxes the contract recorded for the seat (delivered in
//! time; see [`record_key`]), which is when its seat counts as keyed.
//!
//! # What revealing a shared secret costs the seat
//!
//! Revealing `x·E` for an `E` the provider chose answers one static Diffie-Hellman query.
//! Each answer costs the provider one reward (the seat is paid as starved), and known
//! attacks with `q` answers gain at most about `sqrt(q)` against the discrete logarithm.
//! The sharper risk is confidentiality: an `E` copied from another box sealed to the same
//! key turns that box's shared secret public, and with it that box's key. A seat must
//! therefore never report a box whose ephemeral key it has seen in another box (the
//! node's seat keeps the ephemeral keys it was sent for this).
//!
//! Pure: no I/O, no clock, no OS randomness.

use curve25519_dalek::{
    constants::ED25519_BASEPOINT_POINT,
    edwards::{CompressedEdwardsY, EdwardsPoint},
    montgomery::MontgomeryPoint,
    scalar::{Scalar, clamp_integer},
    traits::IsIdentity,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha512};

use crate::{
    Hash, SealingPublicKey,
    seal::{SealedKey, SealingSecret, open_with_shared},
};

/// A sealed key as its seat received it, for a [`Call::ReportBadKey`](crate::tx::Call::ReportBadKey): the segment whose
/// key it is (the seat's own, or a premise's) and the sealed bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveredKey {
    /// Segment index of the key.
    pub segment: u16,
    /// The sealed segment key, as delivered.
    pub sealed: SealedKey,
}

/// The tag every hash of the proof starts with.
pub const DLEQ_TAG: &[u8] = b"trust/v1/bad-key-dleq";
/// The tag of the running digest of the keys on record for a seat ([`record_key`]).
pub const RECORD_TAG: &str = "trust/v1/seat-keys";
/// Length of a proof: `S` (32) ‖ `c` (32) ‖ `s` (32).
pub const PROOF_LEN: usize = 96;

const CHALLENGE: u8 = 0x01;
const NONCE: u8 = 0x02;

crate::bytes::byte_array_newtype!(
    /// The X25519 shared secret of a sealed key and its seat's key, as X25519 gives it
    /// (a Montgomery u-coordinate): revealed by the seat when the box does not open.
    SharedSecret,
    32
);

crate::bytes::byte_array_newtype!(
    /// A proof that a [`SharedSecret`] is the seat's secret times a box's ephemeral key:
    /// `S ‖ c ‖ s` (see the module documentation). Travels unchecked; only
    /// [`verify_bad_key`] gives it meaning.
    BadKeyProof,
    96
);

/// Why a report of a key that does not open does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadKeyError {
    /// The seat's registered key is not the u-coordinate of a curve point.
    #[error("sealing key {0} is not a curve point")]
    MalformedKey(SealingPublicKey),
    /// The seat's registered key is of small order or has a small-order part: no proof
    /// about it is sound (an honest seat's key never is).
    #[error("sealing key {0} is not a point of the prime-order subgroup")]
    WeakKey(SealingPublicKey),
    /// The proof's bytes do not decode: which part is wrong.
    #[error("malformed proof: {0}")]
    MalformedProof(&'static str),
    /// The revealed shared secret is not the Montgomery form of the proof's point.
    #[error("the revealed shared secret is not the proof's point")]
    SharedMismatch,
    /// The proof does not verify for this key, box and context.
    #[error("the proof does not show the shared secret is the seat's")]
    Invalid,
    /// The box opens under the proven shared secret: the key is good, the report false.
    #[error("the sealed key opens: it is not a bad key")]
    Opens,
    /// The secret is not the one the key was sealed for (the prover's side only).
    #[error("the secret does not belong to sealing key {0}")]
    NotMine(SealingPublicKey),
}

/// Why a box does not open, as the verifier found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unopenable {
    /// Its ephemeral key is of small order: no key agreement with it gives a secret.
    SmallOrderEphemeral,
    /// Its ephemeral key is not a point of the curve: no sealer knows the secret.
    EphemeralOffCurve,
    /// The proven shared secret derives a key under which it does not open.
    Proven,
}

/// One step of the running digest of the keys a seat has on record: `prev` extended by a
/// key delivered for `segment`. The contract extends a seat's digest with the first key
/// of each segment it needs that lands in time, in delivery order, from [`Hash::ZERO`];
/// a report carries those keys, and the contract recomputes the digest from them
/// ([`record_of`]) instead of storing every sealed key.
pub fn record_key(prev: &Hash, segment: u16, sealed: &SealedKey) -> Hash {
    Hash::of_parts(
        RECORD_TAG,
        &[
            prev.as_ref(),
            &segment.to_le_bytes(),
            sealed.ephemeral.as_ref(),
            &sealed.ciphertext,
        ],
    )
}

/// The digest of `keys` delivered in this order ([`record_key`] from [`Hash::ZERO`]).
pub fn record_of<'a>(keys: impl IntoIterator<Item = &'a DeliveredKey>) -> Hash {
    keys.into_iter()
        .fold(Hash::ZERO, |h, k| record_key(&h, k.segment, &k.sealed))
}

/// The keys on record for a seat, found among the keys it was `delivered` (in delivery
/// order, every round's and every segment's, late ones and repeats included): the first
/// key of each segment in `needs` (its own and its premises'), from the first delivery of
/// its round, whose digest is `record`. The seat does not know which deliveries landed in
/// time; the record says so. `None` when no such run exists (or nothing is on record).
/// Quadratic in the deliveries at worst: the caller bounds how many it keeps.
pub fn find_record(
    delivered: &[DeliveredKey],
    needs: &[u16],
    record: &Hash,
) -> Option<Vec<DeliveredKey>> {
    if *record == Hash::ZERO {
        return None;
    }
    let mine: Vec<&DeliveredKey> = delivered
        .iter()
        .filter(|k| needs.contains(&k.segment))
        .collect();
    // A round's deliveries follow the earlier rounds', and the keys that landed in time
    // come before the late ones: the record is the first key of each segment along some
    // run that starts at one delivery.
    for start in 0..mine.len() {
        let mut digest = Hash::ZERO;
        let mut keys: Vec<DeliveredKey> = Vec::new();
        for k in mine.iter().skip(start) {
            if keys.iter().any(|e| e.segment == k.segment) {
                continue;
            }
            digest = record_key(&digest, k.segment, &k.sealed);
            keys.push((*k).clone());
            if digest == *record {
                return Some(keys);
            }
            if keys.len() >= needs.len() {
                break;
            }
        }
    }
    None
}

/// `G = 8·B`, the generator of the prime-order subgroup the proof works in.
fn generator() -> EdwardsPoint {
    ED25519_BASEPOINT_POINT.mul_by_cofactor()
}

/// The seat's key as an Edwards point of the prime-order subgroup.
fn recipient_point(key: &SealingPublicKey) -> Result<EdwardsPoint, BadKeyError> {
    let p = MontgomeryPoint(key.0)
        .to_edwards(0)
        .ok_or(BadKeyError::MalformedKey(*key))?;
    if p.is_small_order() || !p.is_torsion_free() {
        return Err(BadKeyError::WeakKey(*key));
    }
    Ok(p)
}

/// `E' = 8·E_ed` for an ephemeral key on the curve and not of small order; otherwise why
/// no box under it opens.
fn ephemeral_point(e: &SealingPublicKey) -> Result<EdwardsPoint, Unopenable> {
    let e = MontgomeryPoint(e.0)
        .to_edwards(0)
        .ok_or(Unopenable::EphemeralOffCurve)?
        .mul_by_cofactor();
    if e.is_identity() {
        return Err(Unopenable::SmallOrderEphemeral);
    }
    Ok(e)
}

/// A SHA-512 digest over `parts` under the proof's tag and `purpose`, as a scalar.
fn hash_scalar(purpose: u8, parts: &[&[u8]]) -> Scalar {
    let mut h = Sha512::new();
    h.update(DLEQ_TAG);
    h.update([purpose]);
    for p in parts {
        h.update(p);
    }
    let digest: [u8; 64] = h.finalize().into();
    Scalar::from_bytes_mod_order_wide(&digest)
}

/// The statement's public part, hashed by both the nonce and the challenge.
struct Statement<'a> {
    recipient: &'a SealingPublicKey,
    ephemeral: &'a SealingPublicKey,
    context: &'a [u8],
}

impl Statement<'_> {
    fn challenge(&self, points: [&EdwardsPoint; 5]) -> Scalar {
        let encoded = points.map(|p| p.compress().to_bytes());
        let len = u64::try_from(self.context.len())
            .unwrap_or(u64::MAX)
            .to_le_bytes();
        let [p, e, s, r1, r2] = &encoded;
        hash_scalar(
            CHALLENGE,
            &[
                self.recipient.as_ref(),
                self.ephemeral.as_ref(),
                &len,
                self.context,
                p,
                e,
                s,
                r1,
                r2,
            ],
        )
    }
}

/// The seat's secret as the proof's scalar: the clamped X25519 scalar divided by 8 (exact,
/// and below the group order, so no reduction happens).
fn subgroup_scalar(secret: &SealingSecret) -> Scalar {
    let x = clamp_integer(secret.to_bytes());
    let mut out = [0u8; 32];
    let mut carry = 0u8;
    for (o, b) in out.iter_mut().zip(x.iter()).rev() {
        *o = (b >> 3) | carry;
        carry = b << 5;
    }
    Scalar::from_bytes_mod_order(out)
}

/// The Chaum-Pedersen proof that `S = x''·E'` for the seat of `secret` (its key `P_ed =
/// x''·G`), whatever the box holds. The caller decides whether the box opens.
/// The group and scalar arithmetic of curve25519-dalek is modular and total.
#[allow(clippy::arithmetic_side_effects)]
fn dleq_prove(
    secret: &SealingSecret,
    sealed: &SealedKey,
    context: &[u8],
    e: &EdwardsPoint,
) -> Result<(SharedSecret, BadKeyProof), BadKeyError> {
    let recipient = secret.public();
    let p = recipient_point(&recipient)?;
    let g = generator();
    let x = subgroup_scalar(secret);
    let x = if x * g == p {
        x
    } else if -x * g == p {
        -x
    } else {
        return Err(BadKeyError::NotMine(recipient));
    };
    let s_point = x * e;
    let st = Statement {
        recipient: &recipient,
        ephemeral: &sealed.ephemeral,
        context,
    };
    let len = u64::try_from(context.len())
        .unwrap_or(u64::MAX)
        .to_le_bytes();
    let k = hash_scalar(
        NONCE,
        &[
            &secret.to_bytes(),
            recipient.as_ref(),
            sealed.ephemeral.as_ref(),
            &len,
            context,
        ],
    );
    let r1 = k * g;
    let r2 = k * e;
    let c = st.challenge([&p, e, &s_point, &r1, &r2]);
    let s = k + c * x;
    let mut proof = [0u8; PROOF_LEN];
    for (o, b) in proof.iter_mut().zip(
        s_point
            .compress()
            .as_bytes()
            .iter()
            .chain(c.as_bytes())
            .chain(s.as_bytes()),
    ) {
        *o = *b;
    }
    Ok((
        SharedSecret(s_point.to_montgomery().to_bytes()),
        BadKeyProof(proof),
    ))
}

/// The report a seat holding `secret` makes of `sealed`, sealed to it under `context`,
/// when it does not open: the shared secret and its proof. [`BadKeyError::Opens`] when
/// the box opens (there is nothing to report). For a box that needs no proof (an
/// ephemeral key of small order or off the curve) both are zeros: the product with such a
/// key is never revealed.
pub fn prove_bad_key(
    secret: &SealingSecret,
    sealed: &SealedKey,
    context: &[u8],
) -> Result<(SharedSecret, BadKeyProof), BadKeyError> {
    let shared = secret.shared_with(&sealed.ephemeral);
    if open_with_shared(&secret.public(), &shared, sealed, context).is_ok() {
        return Err(BadKeyError::Opens);
    }
    match ephemeral_point(&sealed.ephemeral) {
        Err(_) => Ok((SharedSecret([0; 32]), BadKeyProof([0; PROOF_LEN]))),
        Ok(e) => {
            let (proven, proof) = dleq_prove(secret, sealed, context, &e)?;
            // The Edwards route gives X25519's own answer (checked, not assumed).
            if proven.0 != shared {
                return Err(BadKeyError::SharedMismatch);
            }
            Ok((proven, proof))
        }
    }
}

/// A canonically encoded point of the prime-order subgroup other than the identity.
fn decode_subgroup_point(bytes: &[u8; 32]) -> Option<EdwardsPoint> {
    let p = CompressedEdwardsY(*bytes).decompress()?;
    (p.compress().as_bytes() == bytes && !p.is_identity() && p.is_torsion_free()).then_some(p)
}

/// Checks a report that `sealed`, sealed to the seat whose registered key is `recipient`
/// under `context`, does not open: `shared` must be proven by `proof` to be the seat's
/// secret times the box's ephemeral key, and the box must not open under the key derived
/// from it exactly as [`crate::seal::open_key`] derives it. Any input is safe: bytes that
/// are not points or scalars are refused, never a panic.
/// Arithmetic as in [`dleq_prove`].
#[allow(clippy::arithmetic_side_effects)]
pub fn verify_bad_key(
    recipient: &SealingPublicKey,
    sealed: &SealedKey,
    context: &[u8],
    shared: &SharedSecret,
    proof: &BadKeyProof,
) -> Result<Unopenable, BadKeyError> {
    let p = recipient_point(recipient)?;
    let e = match ephemeral_point(&sealed.ephemeral) {
        Ok(e) => e,
        Err(why) => return Ok(why),
    };
    let (s_bytes, rest) = proof
        .0
        .split_first_chunk::<32>()
        .ok_or(BadKeyError::MalformedProof("too short"))?;
    let (c_bytes, s_scalar) = rest
        .split_first_chunk::<32>()
        .ok_or(BadKeyError::MalformedProof("too short"))?;
    let s_scalar: [u8; 32] = s_scalar
        .try_into()
        .map_err(|_| BadKeyError::MalformedProof("too short"))?;
    let s_point = decode_subgroup_point(s_bytes).ok_or(BadKeyError::MalformedProof(
        "S is not a point of the prime-order subgroup",
    ))?;
    if s_point.to_montgomery().to_bytes() != shared.0 {
        return Err(BadKeyError::SharedMismatch);
    }
    let c = Option::<Scalar>::from(Scalar::from_canonical_bytes(*c_bytes)).ok_or(
        BadKeyError::MalformedProof("c is not below the group order"),
    )?;
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_scalar)).ok_or(
        BadKeyError::MalformedProof("s is not below the group order"),
    )?;
    // R1 = s·G − c·P = (8s)·B − c·P;  R2 = s·E' − c·S.
    let r1 = EdwardsPoint::vartime_double_scalar_mul_basepoint(&(-c), &p, &(s * Scalar::from(8u8)));
    let r2 = s * e - c * s_point;
    let st = Statement {
        recipient,
        ephemeral: &sealed.ephemeral,
        context,
    };
    if st.challenge([&p, &e, &s_point, &r1, &r2]) != c {
        return Err(BadKeyError::Invalid);
    }
    match open_with_shared(recipient, &shared.0, sealed, context) {
        Ok(_) => Err(BadKeyError::Opens),
        Err(_) => Ok(Unopenable::Proven),
    }
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::constants::EIGHT_TORSION;
    use proptest::prelude::*;

    use super::*;
    use crate::seal::{open_key, seal_key};

    fn secret(label: &str) -> SealingSecret {
        SealingSecret::from_bytes(Hash::of_parts("test-bad-key", &[label.as_bytes()]).0)
    }

    fn ctx(label: &str) -> Vec<u8> {
        format!("context {label}").into_bytes()
    }

    /// A box sealed to `to` whose ciphertext is replaced by `garbage` (when given).
    fn sealed_to(to: &SealingPublicKey, label: &str, garbage: Option<Vec<u8>>) -> SealedKey {
        let eph = Hash::of_parts("test-ephemeral", &[label.as_bytes()]).0;
        let mut b = seal_key(to, &[5u8; 32], eph, &ctx(label)).unwrap();
        if let Some(g) = garbage {
            b.ciphertext = g;
        }
        b
    }

    #[test]
    fn the_subgroup_scalar_is_the_x25519_secret_over_eight() {
        let mut signs = [0usize; 2];
        for i in 0..32 {
            let sk = secret(&format!("seat {i}"));
            let x = subgroup_scalar(&sk);
            let q = x * generator();
            assert_eq!(q.to_montgomery().to_bytes(), sk.public().0, "seat {i}");
            let p = recipient_point(&sk.public()).unwrap();
            signs[usize::from(q != p)] += 1;
            assert!(q == p || -q == p);
        }
        // Both signs occur: the prover's choice of `x''` is exercised.
        assert!(signs[0] > 0 && signs[1] > 0, "{signs:?}");
    }

    #[test]
    fn a_garbage_box_yields_a_report_that_verifies() {
        for i in 0..8 {
            let seat = secret(&format!("garbage {i}"));
            let label = format!("g{i}");
            let bad = sealed_to(&seat.public(), &label, Some(vec![0xAB; 48]));
            assert!(open_key(&seat, &bad, &ctx(&label)).is_err());
            let (shared, proof) = prove_bad_key(&seat, &bad, &ctx(&label)).unwrap();
            assert_ne!(shared.0, [0; 32]);
            assert_eq!(
                verify_bad_key(&seat.public(), &bad, &ctx(&label), &shared, &proof),
                Ok(Unopenable::Proven)
            );
        }
        // A ciphertext of the wrong length (a 31-byte key, an empty one) does not open
        // either.
        let seat = secret("short");
        for ct in [vec![], vec![1u8; 47], vec![2u8; 10]] {
            let bad = sealed_to(&seat.public(), "s", Some(ct));
            let (shared, proof) = prove_bad_key(&seat, &bad, &ctx("s")).unwrap();
            assert_eq!(
                verify_bad_key(&seat.public(), &bad, &ctx("s"), &shared, &proof),
                Ok(Unopenable::Proven)
            );
        }
    }

    #[test]
    fn a_box_sealed_to_another_key_yields_a_report_that_verifies() {
        let seat = secret("seat");
        let other = secret("other");
        let misaddressed = sealed_to(&other.public(), "m", None);
        assert!(open_key(&other, &misaddressed, &ctx("m")).is_ok());
        assert!(open_key(&seat, &misaddressed, &ctx("m")).is_err());
        let (shared, proof) = prove_bad_key(&seat, &misaddressed, &ctx("m")).unwrap();
        assert_eq!(
            verify_bad_key(&seat.public(), &misaddressed, &ctx("m"), &shared, &proof),
            Ok(Unopenable::Proven)
        );
        // Sealed to the right key under another context (another segment): same.
        let wrong_ctx = sealed_to(&seat.public(), "other segment", None);
        let (shared, proof) = prove_bad_key(&seat, &wrong_ctx, &ctx("m")).unwrap();
        assert_eq!(
            verify_bad_key(&seat.public(), &wrong_ctx, &ctx("m"), &shared, &proof),
            Ok(Unopenable::Proven)
        );
    }

    /// A good box never yields a report that holds: the seat's prover refuses, and a
    /// correct proof of its true shared secret is refused by the check that opens it.
    #[test]
    fn a_good_box_never_yields_a_report_that_verifies() {
        for i in 0..8 {
            let seat = secret(&format!("good {i}"));
            let label = format!("ok{i}");
            let good = sealed_to(&seat.public(), &label, None);
            assert!(open_key(&seat, &good, &ctx(&label)).is_ok());
            assert_eq!(
                prove_bad_key(&seat, &good, &ctx(&label)),
                Err(BadKeyError::Opens)
            );
            let e = ephemeral_point(&good.ephemeral).unwrap();
            let (shared, proof) = dleq_prove(&seat, &good, &ctx(&label), &e).unwrap();
            assert_eq!(
                verify_bad_key(&seat.public(), &good, &ctx(&label), &shared, &proof),
                Err(BadKeyError::Opens)
            );
            // And no other shared secret can be made to verify for it: a wrong one fails
            // the proof, whatever is claimed.
            let mut wrong = shared;
            wrong.0[0] ^= 1;
            assert!(verify_bad_key(&seat.public(), &good, &ctx(&label), &wrong, &proof).is_err());
        }
    }

    #[test]
    fn a_proof_for_another_seat_box_or_context_is_refused() {
        let seat = secret("seat");
        let other = secret("other");
        let bad = sealed_to(&seat.public(), "b1", Some(vec![9; 48]));
        let bad2 = sealed_to(&seat.public(), "b2", Some(vec![9; 48]));
        let (shared, proof) = prove_bad_key(&seat, &bad, &ctx("b1")).unwrap();
        // Another seat's key: the statement is about another point.
        assert_eq!(
            verify_bad_key(&other.public(), &bad, &ctx("b1"), &shared, &proof),
            Err(BadKeyError::Invalid)
        );
        // Another box (another ephemeral key).
        assert_eq!(
            verify_bad_key(&seat.public(), &bad2, &ctx("b1"), &shared, &proof),
            Err(BadKeyError::Invalid)
        );
        // The same box under another context: bound by the challenge.
        assert_eq!(
            verify_bad_key(&seat.public(), &bad, &ctx("b2"), &shared, &proof),
            Err(BadKeyError::Invalid)
        );
        // Another seat's honest report of its own bad box does not serve this seat.
        let theirs = sealed_to(&other.public(), "t", Some(vec![1; 48]));
        let (s2, p2) = prove_bad_key(&other, &theirs, &ctx("t")).unwrap();
        assert!(verify_bad_key(&other.public(), &theirs, &ctx("t"), &s2, &p2).is_ok());
        assert_eq!(
            verify_bad_key(&seat.public(), &theirs, &ctx("t"), &s2, &p2),
            Err(BadKeyError::Invalid)
        );
    }

    #[test]
    fn a_tampered_shared_secret_or_proof_byte_is_refused() {
        let seat = secret("tamper");
        let bad = sealed_to(&seat.public(), "t", Some(vec![3; 48]));
        let (shared, proof) = prove_bad_key(&seat, &bad, &ctx("t")).unwrap();
        for i in 0..32 {
            for bit in 0..8 {
                let mut s = shared;
                s.0[i] ^= 1 << bit;
                assert!(
                    verify_bad_key(&seat.public(), &bad, &ctx("t"), &s, &proof).is_err(),
                    "shared byte {i} bit {bit}"
                );
            }
        }
        let mut by_kind = std::collections::BTreeMap::<String, usize>::new();
        for i in 0..PROOF_LEN {
            for bit in 0..8 {
                let mut p = proof;
                p.0[i] ^= 1 << bit;
                let r = verify_bad_key(&seat.public(), &bad, &ctx("t"), &shared, &p);
                let e = r.expect_err(&format!("proof byte {i} bit {bit} verified"));
                *by_kind.entry(format!("{e:?}")).or_default() += 1;
            }
        }
        // The sign bit of S keeps its Montgomery form: only the challenge catches that.
        let mut p = proof;
        p.0[31] ^= 0x80;
        assert_eq!(
            verify_bad_key(&seat.public(), &bad, &ctx("t"), &shared, &p),
            Err(BadKeyError::Invalid)
        );
        assert!(by_kind.contains_key("Invalid"), "{by_kind:?}");
    }

    #[test]
    fn low_order_and_invalid_points_are_refused_without_panic() {
        let seat = secret("points");
        let bad = sealed_to(&seat.public(), "p", Some(vec![4; 48]));
        let (shared, proof) = prove_bad_key(&seat, &bad, &ctx("p")).unwrap();
        // The seat's key: small order, or not a curve point.
        for t in EIGHT_TORSION {
            let k = SealingPublicKey(t.to_montgomery().to_bytes());
            let r = verify_bad_key(&k, &bad, &ctx("p"), &shared, &proof);
            assert!(
                matches!(
                    r,
                    Err(BadKeyError::WeakKey(_) | BadKeyError::MalformedKey(_))
                ),
                "{r:?}"
            );
        }
        let twist = twist_point();
        assert_eq!(
            verify_bad_key(&twist, &bad, &ctx("p"), &shared, &proof),
            Err(BadKeyError::MalformedKey(twist))
        );
        // A key with a small-order part: a point, but not of the subgroup.
        let p = recipient_point(&seat.public()).unwrap();
        let mixed = SealingPublicKey((p + EIGHT_TORSION[1]).to_montgomery().to_bytes());
        assert_eq!(
            verify_bad_key(&mixed, &bad, &ctx("p"), &shared, &proof),
            Err(BadKeyError::WeakKey(mixed))
        );
        // S replaced by the identity, a small-order point, or S plus a small-order part,
        // with the shared secret claimed to match: refused before any challenge.
        let s = CompressedEdwardsY(proof.0[..32].try_into().unwrap())
            .decompress()
            .unwrap();
        for forged in EIGHT_TORSION
            .iter()
            .copied()
            .chain(EIGHT_TORSION.iter().skip(1).map(|t| s + t))
        {
            let mut p = proof;
            p.0[..32].copy_from_slice(forged.compress().as_bytes());
            let claimed = SharedSecret(forged.to_montgomery().to_bytes());
            assert_eq!(
                verify_bad_key(&seat.public(), &bad, &ctx("p"), &claimed, &p),
                Err(BadKeyError::MalformedProof(
                    "S is not a point of the prime-order subgroup"
                ))
            );
        }
        // c or s at the group order: not canonical.
        let l: [u8; 32] =
            hex::decode("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
                .unwrap()
                .try_into()
                .unwrap();
        for (at, what) in [(32, "c"), (64, "s")] {
            let mut p = proof;
            p.0[at..at + 32].copy_from_slice(&l);
            assert_eq!(
                verify_bad_key(&seat.public(), &bad, &ctx("p"), &shared, &p),
                Err(BadKeyError::MalformedProof(if what == "c" {
                    "c is not below the group order"
                } else {
                    "s is not below the group order"
                }))
            );
        }
    }

    /// A u-coordinate of the twist: not a curve point.
    fn twist_point() -> SealingPublicKey {
        (2u8..)
            .map(|u| {
                let mut b = [0u8; 32];
                b[0] = u;
                b
            })
            .find(|b| MontgomeryPoint(*b).to_edwards(0).is_none())
            .map(SealingPublicKey)
            .unwrap()
    }

    /// A box whose ephemeral key is of small order or off the curve opens for nobody:
    /// the verifier says so from the box alone, and the seat reveals no product.
    #[test]
    fn boxes_under_ephemerals_nobody_can_agree_with_need_no_proof() {
        let seat = secret("eph");
        let mut small = EIGHT_TORSION
            .iter()
            .map(|t| SealingPublicKey(t.to_montgomery().to_bytes()))
            .collect::<Vec<_>>();
        small.dedup();
        for (eph, why) in small
            .into_iter()
            .map(|e| (e, Unopenable::SmallOrderEphemeral))
            .chain([(twist_point(), Unopenable::EphemeralOffCurve)])
        {
            let b = SealedKey {
                ephemeral: eph,
                ciphertext: vec![7; 48],
            };
            assert!(open_key(&seat, &b, &ctx("e")).is_err());
            let (shared, proof) = prove_bad_key(&seat, &b, &ctx("e")).unwrap();
            assert_eq!((shared.0, proof.0), ([0; 32], [0; PROOF_LEN]));
            assert_eq!(
                verify_bad_key(&seat.public(), &b, &ctx("e"), &shared, &proof),
                Ok(why)
            );
        }
    }

    #[test]
    fn the_record_digest_binds_every_key_and_its_order() {
        let a = DeliveredKey {
            segment: 0,
            sealed: sealed_to(&secret("r").public(), "r0", None),
        };
        let b = DeliveredKey {
            segment: 1,
            sealed: sealed_to(&secret("r").public(), "r1", None),
        };
        let ab = record_of([&a, &b]);
        assert_eq!(
            ab,
            record_key(&record_key(&Hash::ZERO, 0, &a.sealed), 1, &b.sealed)
        );
        assert_ne!(ab, record_of([&b, &a]));
        assert_ne!(ab, record_of([&a]));
        assert_eq!(record_of([]), Hash::ZERO);
        let mut c = b.clone();
        c.segment = 2;
        assert_ne!(ab, record_of([&a, &c]));
        let mut d = b.clone();
        d.sealed.ciphertext[0] ^= 1;
        assert_ne!(ab, record_of([&a, &d]));
        let mut e = b.clone();
        e.sealed.ephemeral.0[0] ^= 1;
        assert_ne!(ab, record_of([&a, &e]));
    }

    /// A seat finds its record among everything it was sent: earlier rounds' keys, keys
    /// for segments it does not need, repeats and late keys around it.
    #[test]
    fn the_record_is_found_among_every_key_a_seat_was_sent() {
        let to = secret("find").public();
        let k = |segment: u16, label: &str| DeliveredKey {
            segment,
            sealed: sealed_to(&to, label, None),
        };
        let round0 = [k(3, "r0-own"), k(1, "r0-premise")];
        let round1 = [
            k(7, "r1-other segment"),
            k(1, "r1-premise"),
            k(3, "r1-own"),
            k(1, "r1-premise again"),
            k(3, "r1-own late"),
        ];
        let all: Vec<DeliveredKey> = round0.iter().chain(&round1).cloned().collect();
        let needs = [3, 1];
        // Round 1's record: its premise key, then its own key (repeats not on record).
        let record = record_of([&round1[1], &round1[2]]);
        assert_eq!(
            find_record(&all, &needs, &record),
            Some(vec![round1[1].clone(), round1[2].clone()])
        );
        // Round 0's record, and a record of only the first key.
        assert_eq!(
            find_record(&all, &needs, &record_of(&round0)),
            Some(round0.to_vec())
        );
        assert_eq!(
            find_record(&all, &needs, &record_of([&round1[1]])),
            Some(vec![round1[1].clone()])
        );
        // Nothing on record, or a record of keys never sent: none.
        assert_eq!(find_record(&all, &needs, &Hash::ZERO), None);
        assert_eq!(
            find_record(&all, &needs, &record_of([&k(3, "never")])),
            None
        );
        // A key of a segment the seat does not need is never part of its record.
        assert_eq!(find_record(&all, &needs, &record_of([&round1[0]])), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_reports_never_panic_the_verifier(
            key in any::<[u8; 32]>(),
            eph in any::<[u8; 32]>(),
            ct in prop::collection::vec(any::<u8>(), 0..64),
            context in prop::collection::vec(any::<u8>(), 0..64),
            shared in any::<[u8; 32]>(),
            proof in prop::collection::vec(any::<u8>(), PROOF_LEN),
        ) {
            let sealed = SealedKey { ephemeral: SealingPublicKey(eph), ciphertext: ct };
            let proof = BadKeyProof(proof.try_into().unwrap());
            let _ = verify_bad_key(
                &SealingPublicKey(key), &sealed, &context, &SharedSecret(shared), &proof,
            );
        }

        #[test]
        fn arbitrary_proofs_of_a_real_bad_box_do_not_verify(
            shared in any::<[u8; 32]>(),
            proof in prop::collection::vec(any::<u8>(), PROOF_LEN),
        ) {
            let seat = secret("prop");
            let bad = sealed_to(&seat.public(), "prop", Some(vec![1; 48]));
            let proof = BadKeyProof(proof.try_into().unwrap());
            prop_assert!(verify_bad_key(
                &seat.public(), &bad, &ctx("prop"), &SharedSecret(shared), &proof,
            ).is_err());
        }
    }

    /// A known answer: a changed tag, transcript or encoding fails here on purpose.
    #[test]
    fn golden_vector() {
        let seat = SealingSecret::from_bytes([7; 32]);
        let bad = SealedKey {
            ephemeral: seal_key(&seat.public(), &[1; 32], [9; 32], b"golden")
                .unwrap()
                .ephemeral,
            ciphertext: vec![0x42; 48],
        };
        let (shared, proof) = prove_bad_key(&seat, &bad, b"golden").unwrap();
        assert_eq!(
            verify_bad_key(&seat.public(), &bad, b"golden", &shared, &proof),
            Ok(Unopenable::Proven)
        );
        // The revealed secret is X25519's own answer for the seat and the box.
        assert_eq!(shared.0, seat.shared_with(&bad.ephemeral));
        assert_eq!(shared.to_hex(), GOLDEN_SHARED);
        assert_eq!(proof.to_hex(), GOLDEN_PROOF);
    }

    const GOLDEN_SHARED: &str = "2ffe325b2a26611bf1911325d4a62b33749b8f350d0e88ba91e316acaae66554";
    const GOLDEN_PROOF: &str = "d03c0e483ee810d7a3f8f6f78386a706c7f412c98623d04790846130904c9c5ee113dfebcd0b14eb90dda9a6457b0c88925a04853b0c63140cabbb8976bb61056cecbe7378c78fc0c7103b548686a3bee1ffea1b7985bbb500d4d2b70191d103";
}
