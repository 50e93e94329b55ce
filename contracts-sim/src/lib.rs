//! The TRUST audit contract as a deterministic state machine.
//!
//! Every node runs the same [`Contract`] on the same ordered blocks and compares
//! [`Contract::state_root`]. The root is a Jellyfish Merkle Tree over the state's entries,
//! updated per block with only what the block touched ([`commitment`]), so any entry can
//! be proven against it. The contract holds the registry of auditors and their stake,
//! opens audit sessions from a provider's manifest, draws seats by seeded sortition
//! ([`assign`]), runs commit-reveal voting in windows counted in blocks, tallies seat,
//! segment and trace quorums with ARES-style error propagation ([`tally`]), and applies
//! the paper's economics ([`econ`]): EMA reputation, rewards from the session fee,
//! reputation-weighted slashing with deterministic draws, and honeypot-based detection of
//! rubber-stampers.
//!
//! Pure: no async runtime, no clock (time is the block height), no OS randomness (the
//! only randomness is the block hash in [`BlockCtx`]), no floats in state, and no panic
//! reachable from any transaction. The seeded network simulator lives in [`sim`] behind
//! the `sim` feature and drives this same contract with real signed transactions.
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

pub mod admission;
mod appeal;
pub(crate) mod assign;
mod block;
pub mod commitment;
mod contract;
pub mod econ;
mod error;
mod events;
mod expiry;
mod params;
mod registry;
mod sessions;
mod state;
pub mod tally;
mod windows;

#[cfg(feature = "sim")]
pub mod sim;

pub use appeal::{APPEAL_ROUND0, seats_of_an_appeal};
pub use assign::sight;
pub use block::BlockCtx;
pub use commitment::{EntryProof, ProofError, StateKey, verify_entry};
pub use contract::{Contract, SnapshotError};
pub use error::TxError;
pub use events::Event;
pub use expiry::expired;
pub use params::{
    DEFAULT_MAX_TAU, DEFAULT_MIN_DOMAIN_SHARE, Floors, Genesis, GenesisAccount, GenesisAuditor,
    GenesisError, MAX_MIN_PROVIDERS, Params, RubberStampRule,
};
pub use registry::{
    bond_refused, exit_refused, held_stake, pause_refused, seat_held, withdrawable,
};
pub use sessions::{
    BadKeyReport, batch_seated, check_bad_key_report, check_terms, domain_floor, honeypot_bond,
    minimum_fee, recording_round, settles_with, tau_ceiling,
};
pub use state::{
    Account, AppealRecord, AppealResult, AppealRound, AppealTarget, AppealedSegment, Auditor,
    Backer, CastVote, Coverage, Failure, FailureBound, Finality, HoneypotStats, LeftOutOutcome,
    LocalVerdict, MAX_BACKERS, MAX_PENDING_STAKE, MAX_UNBONDINGS, Map, OpenAppeal, Outcome,
    PastAuditor, PendingExpertise, PendingIncoherence, PendingPause, PendingStake, Phase,
    QueuedSegment, Seat, SeatSlash, SegmentOutcome, SegmentState, SegmentVerdict, Session, Set,
    SlashReason, State, TraceVerdict, Unbonding, VoteCounts,
};
pub use windows::key_deadline;
