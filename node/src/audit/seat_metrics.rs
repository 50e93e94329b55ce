//! The seat's counters, exported at `/metrics`: the seat pipeline (`seat.rs`) and its
//! sender of votes (`sending.rs`) both count into them.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::metrics::MetricsSource;

/// Seat counters exported at `/metrics`.
#[derive(Debug, Default)]
pub struct SeatMetrics {
    /// Votes committed.
    pub committed: AtomicU64,
    /// Votes revealed.
    pub revealed: AtomicU64,
    /// Segments the auditor abstained on.
    pub abstained: AtomicU64,
    /// Keys, blobs or ciphertexts that failed.
    pub failures: AtomicU64,
    /// Seats still reading or judging their segment when their commit window was about to
    /// close, which committed an abstention instead.
    pub gave_up: AtomicU64,
    /// Keys that did not open, reported with a proof (`ReportBadKey`).
    pub bad_keys_reported: AtomicU64,
}

impl MetricsSource for SeatMetrics {
    fn render(&self, out: &mut String) {
        for (name, v) in [
            ("trust_seat_votes_committed_total", &self.committed),
            ("trust_seat_votes_revealed_total", &self.revealed),
            ("trust_seat_abstained_total", &self.abstained),
            ("trust_seat_failures_total", &self.failures),
            ("trust_seat_gave_up_total", &self.gave_up),
            (
                "trust_seat_bad_keys_reported_total",
                &self.bad_keys_reported,
            ),
        ] {
            out.push_str(&format!(
                "# TYPE {name} counter\n{name} {}\n",
                v.load(Ordering::Relaxed)
            ));
        }
    }
}
