//! The TRUST node: daemon, CLI and everything that does I/O.
//!
//! Subsystems live in one module each, with a `//!` note saying what they own. Pure
//! protocol logic lives in `trust-protocol` and `trust-contracts`; this crate wires it to
//! files, terminals, and (in later milestones) the network.
#![forbid(unsafe_code)]

pub mod api;
pub mod audit;
pub mod blobs;
pub mod chain;
pub mod cli;
pub mod client;
pub mod config;
pub mod consensus;
pub mod daemon;
pub mod decompose;
pub mod keys;
pub mod ledger;
pub mod mempool;
pub mod metrics;
pub mod net;
pub mod report;
pub mod submit;
pub mod tasks;
pub mod view;
