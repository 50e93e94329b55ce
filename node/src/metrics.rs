//! Prometheus text from every subsystem: each keeps its own counters (atomics it alone
//! bumps) and renders them through [`MetricsSource`]; the API's `/metrics` route
//! concatenates what every source writes.

/// A subsystem's counters, appended to `/metrics` as Prometheus text.
pub trait MetricsSource: Send + Sync + std::fmt::Debug {
    /// Writes `# HELP`/`# TYPE` lines and samples.
    fn render(&self, out: &mut String);
}
