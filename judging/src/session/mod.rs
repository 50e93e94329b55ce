//! The provider's session planning, pure: what a provider decides before and after it
//! opens a session, with no storage, network or clock.
//!
//! - [`prepare`]: an HDAG becomes a manifest: segments routed to the tiers this network
//!   staffs (the others left out, their `depends_on` edges bridged), each segment's
//!   document, blinded id and quorum weight, and the mapping commitment.
//! - [`honeypot`]: known-error segments forged from the trace's own steps and planted
//!   among the real ones, so a seat that votes without checking is caught.
//! - [`terms`]: the provider's assurance choices (k, windows, domains, honeypots) checked
//!   and resolved against the node's defaults.
//! - [`exposure`]: how much of the trace one auditor may see, and the segments that would
//!   exceed it.
//! - [`opening`]: whether a proven outcome is about a given trace (`proof verify --trace`).
//!
//! The node's provider (in `trust-node`) keeps the records, encrypts,
//! stores the ciphertexts and sends the transactions.

use trust_protocol::{
    tx::{QuorumParams, Tier},
    units::Ppm,
};

pub mod exposure;
pub mod honeypot;
pub mod opening;
pub mod prepare;
mod restrict;
pub mod terms;

/// Seats per segment and quorums used for sessions a node opens.
pub const DEFAULT_QUORUM: QuorumParams = QuorumParams {
    k: [3, 3, 3],
    extra_seats: 0,
    tau: Ppm(600_000),
    beta: Ppm(600_000),
};

/// A tier's name as the provider's reports spell it.
pub fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Computer => "Computer",
        Tier::Llm => "LLM",
        Tier::Human => "Human",
    }
}

/// A tier's index in per-tier arrays (`[Computer, LLM, Human]`).
pub fn tier_index(t: Tier) -> usize {
    match t {
        Tier::Computer => 0,
        Tier::Llm => 1,
        Tier::Human => 2,
    }
}
