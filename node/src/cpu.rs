//! Where a node's CPU time goes: a profile by part, exported at `/metrics`.
//!
//! Every long-running task is polled inside [`Measured`] (its part named after the task,
//! [`Part::of_task`]), and the stages that matter for a vote's cost are measured where they
//! run ([`measure`]): decrypting a segment, judging it, signing a transaction, checking a
//! signature, executing a block and computing its state root. Time is the calling thread's
//! own CPU time (`CLOCK_THREAD_CPUTIME_ID`), read before and after a synchronous piece of
//! work or one `poll` of a future, so waiting never counts and another task's work run
//! meanwhile on the same thread cannot leak in. A stage measured inside another (a state
//! root inside a block's execution, a signature check inside a task's poll) is counted for
//! itself and subtracted from the one around it, so the parts add up to the CPU the node
//! measured, never more: `trust_cpu_seconds_total{part=...}`, with what no part claims
//! (the runtime's own threads, the allocator's background work, blocking threads nobody
//! wrapped) the process total less their sum, which `bench network` reports as "other".
//!
//! Cost: two `clock_gettime` calls (a vDSO read, tens of nanoseconds) per measured piece
//! and per poll; a relaxed atomic add.

use std::{
    cell::Cell,
    future::Future,
    pin::Pin,
    sync::atomic::{AtomicU64, Ordering},
    task::{Context, Poll},
};

use crate::metrics::MetricsSource;

/// A part of the node that CPU time is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A seat fetching a ciphertext (its side of the request; the transport is `Network`).
    Fetch,
    /// Decrypting a segment.
    Decrypt,
    /// A judge checking a segment (the Computer tier's checkers; an LLM judge's HTTP
    /// client).
    Judge,
    /// Signing this node's transactions.
    Sign,
    /// Checking a transaction's signature on its way into the mempool.
    Verify,
    /// Building or executing a block (every transaction applied, signature checks in the
    /// contract included), less its state root.
    Execute,
    /// The state root of a block: the Merkle tree's update.
    StateRoot,
    /// The libp2p swarm: gossip, the blob protocols, Bitswap, connections, encryption.
    Network,
    /// The consensus task (votes, proposals, storing blocks) less the blocks it executes.
    Consensus,
    /// The mempool task.
    Mempool,
    /// The seats' task and their vote tasks, less the stages above and the provider.
    Seats,
    /// This node's provider following its sessions (sealing keys, opening mappings).
    Provider,
    /// The API and the web pages.
    Api,
    /// Every other named task (gossip intake, peers, summary, alerts, ...).
    Tasks,
}

impl Part {
    /// Every part, in the order the profile lists them.
    pub const ALL: [Part; 14] = [
        Part::Fetch,
        Part::Decrypt,
        Part::Judge,
        Part::Sign,
        Part::Verify,
        Part::Execute,
        Part::StateRoot,
        Part::Network,
        Part::Consensus,
        Part::Mempool,
        Part::Seats,
        Part::Provider,
        Part::Api,
        Part::Tasks,
    ];

    /// Its label at `/metrics`.
    pub fn name(self) -> &'static str {
        match self {
            Part::Fetch => "fetch",
            Part::Decrypt => "decrypt",
            Part::Judge => "judge",
            Part::Sign => "sign",
            Part::Verify => "verify",
            Part::Execute => "execute",
            Part::StateRoot => "state_root",
            Part::Network => "network",
            Part::Consensus => "consensus",
            Part::Mempool => "mempool",
            Part::Seats => "seats",
            Part::Provider => "provider",
            Part::Api => "api",
            Part::Tasks => "tasks",
        }
    }

    /// The part a task of [`crate::tasks::Tasks`] named `name` counts against.
    pub fn of_task(name: &str) -> Part {
        match name {
            "net" => Part::Network,
            "consensus" => Part::Consensus,
            "mempool" => Part::Mempool,
            "seats" => Part::Seats,
            "api" => Part::Api,
            _ => Part::Tasks,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

static NANOS: Table = [const { AtomicU64::new(0) }; Part::ALL.len()];

thread_local! {
    /// CPU nanoseconds that stages measured inside the current one took (so the current
    /// one counts only its own).
    static INNER: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's CPU time so far, nanoseconds (0 where the clock cannot be read).
fn thread_nanos() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| {
            u64::try_from(t.tv_sec())
                .unwrap_or(0)
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::try_from(t.tv_nsec()).unwrap_or(0))
        })
        .unwrap_or(0)
}

/// Runs `f`, counting the CPU time it takes on this thread against `part` (less what
/// stages measured inside it took: those count for themselves).
pub fn measure<T>(part: Part, f: impl FnOnce() -> T) -> T {
    measure_in(&NANOS, part, f)
}

type Table = [AtomicU64; Part::ALL.len()];

fn measure_in<T>(table: &Table, part: Part, f: impl FnOnce() -> T) -> T {
    let outer = INNER.with(|c| c.replace(0));
    let start = thread_nanos();
    let out = f();
    let took = thread_nanos().saturating_sub(start);
    let inner = INNER.with(|c| c.replace(outer.saturating_add(took)));
    if let Some(n) = table.get(part.index()) {
        n.fetch_add(took.saturating_sub(inner), Ordering::Relaxed);
    }
    out
}

/// A future whose every poll counts against a part ([`measure`]).
#[derive(Debug)]
pub struct Measured<F> {
    part: Part,
    inner: Pin<Box<F>>,
}

impl<F: Future> Measured<F> {
    /// `inner`, measured as `part`.
    pub fn new(part: Part, inner: F) -> Self {
        Self {
            part,
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for Measured<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let part = self.part;
        measure(part, || self.inner.as_mut().poll(cx))
    }
}

/// CPU seconds counted against each part so far, in [`Part::ALL`]'s order.
pub fn seconds() -> Vec<(Part, f64)> {
    Part::ALL
        .iter()
        .map(|p| {
            let n = NANOS
                .get(p.index())
                .map_or(0, |n| n.load(Ordering::Relaxed));
            (*p, n as f64 / 1e9)
        })
        .collect()
}

/// The profile at `/metrics`.
#[derive(Debug, Default)]
pub struct CpuProfile;

impl MetricsSource for CpuProfile {
    fn render(&self, out: &mut String) {
        out.push_str(
            "# HELP trust_cpu_seconds_total CPU seconds this node spent, by part (threads' own CPU time).\n# TYPE trust_cpu_seconds_total counter\n",
        );
        for (p, s) in seconds() {
            out.push_str(&format!(
                "trust_cpu_seconds_total{{part=\"{}\"}} {s:.6}\n",
                p.name()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(nanos: u64) {
        let start = thread_nanos();
        while thread_nanos().saturating_sub(start) < nanos {
            std::hint::black_box(0u64);
        }
    }

    fn count(p: Part) -> u64 {
        NANOS[p.index()].load(Ordering::Relaxed)
    }

    /// A stage inside another counts for itself and not for the one around it; a sleep
    /// counts for nothing. (A table of its own: other tests count into the global one.)
    #[test]
    fn nested_stages_count_for_themselves_and_waiting_counts_nothing() {
        let table: Table = [const { AtomicU64::new(0) }; Part::ALL.len()];
        measure_in(&table, Part::Consensus, || {
            spin(5_000_000);
            measure_in(&table, Part::StateRoot, || spin(20_000_000));
            std::thread::sleep(std::time::Duration::from_millis(30));
        });
        let outer = table[Part::Consensus.index()].load(Ordering::Relaxed);
        let inner = table[Part::StateRoot.index()].load(Ordering::Relaxed);
        assert!(inner >= 20_000_000, "inner {inner}");
        assert!(outer >= 5_000_000, "outer {outer}");
        // The outer part did not also count the inner 20 ms nor the 30 ms asleep.
        assert!(
            outer < 20_000_000,
            "outer {outer} counted the inner stage or the sleep"
        );
    }

    /// (The global table: other tests may add to it, never take away, so only a lower
    /// bound is read.)
    #[test]
    fn a_measured_future_counts_its_polls() {
        let before = count(Part::Api);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(Measured::new(Part::Api, async { spin(10_000_000) }));
        assert!(count(Part::Api) - before >= 10_000_000);
    }
}
