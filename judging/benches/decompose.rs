//! Decomposition time against trace size: generated traces of numbered steps of 4 KB,
//! 64 KB and 1 MiB (the trace limit), to show that the heuristic decomposer stays linear.
//! `cargo bench -p trust-judging --bench decompose`; numbers go to BENCHMARKS.md.
// criterion's macros generate the benchmark's entry points without docs.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, black_box, criterion_group, criterion_main};
use trust_judging::decompose::{Options, decompose, sample::counter_trace};
use trust_protocol::trace::{MAX_TRACE_BYTES, Trace};

/// Bytes per step line: about the length of a written-out reasoning step.
const LINE_BYTES: usize = 208;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("decompose");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, bytes) in [
        ("4 KB", 4 * 1024),
        ("64 KB", 64 * 1024),
        ("1 MiB", MAX_TRACE_BYTES),
    ] {
        // As many whole steps as fit in `bytes` with the headings.
        let steps = bytes.saturating_sub(256) / (LINE_BYTES + 1);
        let text = counter_trace(steps, LINE_BYTES, 0, None);
        assert!(text.len() <= bytes, "{name}: {} bytes", text.len());
        let trace = Trace::parse(&text).expect("a generated trace parses");
        decompose(&trace, &Options::default()).expect("decomposes");
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("counter trace", format!("{name} ({steps} steps)")),
            &trace,
            |b, t| b.iter(|| decompose(black_box(t), &Options::default())),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
