//! The judging core of TRUST nodes: everything a node decides by computation alone.
//!
//! - [`decompose`]: a trace becomes an HDAG of segments (heuristic cuts, an LLM's five
//!   replies read strictly, or a formal proof's primitive steps).
//! - [`computer`]: the Computer tier's deterministic checkers (arithmetic, equations,
//!   rule applications, `FROM` steps, final answers), and [`computer::readable`], what
//!   they can read, which `decompose` asks when it routes a unit to a tier.
//! - [`proof`]: exact readers and checkers for the formal proofs of the ProofGrid
//!   benchmark (NDL, NDL_f, Hilbert-style and equational), cut into primitive steps a
//!   seat checks alone, and a seeded generator of labelled proofs.
//! - [`judge`]: one judging interface for every tier ([`judge::Auditor`]) and the view a
//!   seat judges; [`llm`]: the LLM tier's ARES scoring, its entailment question and the
//!   strict reading of the model's reply, calibration and consistency probes (the HTTP
//!   client stays in the node).
//! - [`session`]: the provider's session planning (which segments go to which tier, the
//!   blinded ids, honeypots, the provider's assurance terms and exposure budget, and the
//!   opening that ties an outcome back to its trace); [`duties`]: what a decided block
//!   asks of this node.
//! - [`preview`] and [`quality`]: a local preview of a network audit and its scoring
//!   against a labelled corpus.
//!
//! The crate is pure: no I/O, no async runtime, no clock and no OS randomness (its
//! `Cargo.toml` has no tokio, networking or storage crate). Randomness comes from a
//! generator the caller passes in; async traits are plain futures the caller drives.
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

pub mod computer;
pub mod decompose;
pub mod duties;
#[cfg(test)]
mod formal_tests;
pub mod judge;
pub mod llm;
pub mod preview;
pub mod proof;
pub mod quality;
pub mod session;
