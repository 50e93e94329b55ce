//! contracts-sim's integration tests, one binary (one link instead of one per file): the
//! scenario tests through the contract's public API, the property tests, and, behind the `sim` feature, the seeded simulator.

mod common;

mod adversary;
mod appeal;
mod contract;
mod costs;
mod integrity;
mod invariants;
mod payload;
#[cfg(feature = "sim")]
mod sim;
