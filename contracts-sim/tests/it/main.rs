//! contracts-sim's integration tests, one binary (one link instead of one per file): the
//! scenario tests through the contract's public API, the property tests, the layering of
//! the crate's modules and, behind the `sim` feature, the seeded simulator.

mod common;

mod adversary;
mod appeal;
mod contract;
mod costs;
mod invariants;
mod layering;
#[cfg(feature = "sim")]
mod sim;
