//! The TRUST node: daemon, CLI and everything that does I/O.
//!
//! Subsystems live in one module each, with a `//!` note saying what they own. Pure logic
//! lives in `trust-protocol` (wire formats, signatures, sealing), `trust-contracts` (the
//! audit contract) and `trust-judging` (decomposition, the checkers, ARES, the provider's
//! session planning, the duties planner); this crate wires them to files, terminals and
//! the network. `daemon` assembles a running node from the parts.
#![forbid(unsafe_code)]
// Errors are returned, not unwrapped: a node must not die on bad input or a failed call.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

/// The error underneath another, kept as its cause (`Error::source`) rather than flattened
/// into text; a plain message (`String`, `&str`) converts into one too.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

pub mod alerts;
pub mod api;
pub mod audit;
pub mod blobs;
pub mod chain;
pub mod chat;
pub mod cli;
pub mod config;
pub mod consensus;
pub mod cpu;
pub mod daemon;
pub mod feed;
pub mod keys;
pub mod ledger;
pub mod mempool;
pub mod metrics;
pub mod misbehave;
pub mod net;
pub mod proof;
pub mod query;
pub mod report;
pub mod statesync;
pub mod tasks;
#[cfg(test)]
pub(crate) mod testchain;
pub mod view;
pub mod web;

/// Test support for reopening a sled database in the same process. After the last handle
/// is dropped, sled's I/O threads can hold the directory's file lock a moment longer (longer
/// on a busy machine), so a reopen right away may find it locked: tests wait, with a
/// deadline, for that lock and for nothing else.
#[cfg(test)]
pub(crate) mod reopen {
    use std::time::{Duration, Instant};

    /// Calls `open` until it does not fail on sled's file lock, for at most 10 s.
    pub(crate) fn when_unlocked<T, E: std::fmt::Display>(
        mut open: impl FnMut() -> Result<T, E>,
    ) -> Result<T, E> {
        let start = Instant::now();
        loop {
            match open() {
                Err(e)
                    if e.to_string().contains("could not acquire lock")
                        && start.elapsed() < Duration::from_secs(10) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                r => return r,
            }
        }
    }
}
