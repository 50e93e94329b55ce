//! The judging core of TRUST nodes.
//!
//! This crate holds the deterministic (Computer-tier) checkers. Its first part is
//! [`proof`]: exact readers and checkers for the formal proofs of the ProofGrid benchmark
//! (NDL, NDL_f, Hilbert-style and equational proofs), the cutting of a proof into primitive
//! steps that auditor seats check one by one, and a seeded generator of labelled proofs.
//!
//! The crate is pure: no I/O, no async runtime, no clock and no OS randomness. The only
//! randomness is the generator's, drawn from a seed the caller passes in.
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

pub mod proof;
