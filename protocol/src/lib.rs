//! The shared language of TRUST nodes.
//!
//! Everything two nodes must agree on byte for byte lives here: keys and account ids,
//! [`Signed`] envelopes with a domain-separation tag per message kind, the one canonical
//! binary encoding ([`encoding`]), hashes and vote commitments, the transaction set,
//! trace and HDAG types with validation, and the paper's quorum and economics math.
//!
//! The crate is pure: no I/O, no async runtime, no clock and no OS randomness. Time is a
//! block height and randomness is derived from ledger data, both passed in by the caller.
//! Floats appear only in [`math`] (analysis); nothing in consensus state depends on them.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

pub mod badkey;
pub mod block;
mod bytes;
pub mod cid;
pub mod commit;
pub mod encoding;
pub mod hash;
pub mod hdag;
pub mod keys;
pub mod math;
pub mod seal;
pub mod signed;
pub mod trace;
pub mod tx;
pub mod units;
pub mod vrf;

pub use commit::{
    Commitment, MAX_REASON_BYTES, MappingEntry, ReasonError, Salt, TraceOpening, Vote, commitment,
    fit_reason, honeypot_commitment, honeypot_set_commitment, mapping_commitment,
    mapping_document_hash, reason_error, verify_commitment,
};
pub use encoding::{DecodeError, MAX_MESSAGE_BYTES, decode, encode};
pub use hash::Hash;
pub use keys::{AccountId, Keypair, PublicKey, SealingPublicKey, Signature, SignatureError};
pub use signed::{Domain, Signed, SignedMessage};
