//! Throughput of the pure audit path: trace decomposition and Computer-tier checks.
//! `cargo bench -p trust-judging --bench audit`; numbers go to BENCHMARKS.md.
// criterion's macros generate the benchmark's entry points without docs.
#![allow(missing_docs)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use trust_judging::{
    computer::{StepInput, check},
    decompose::{Options, decompose},
};
use trust_protocol::{Hash, trace::Trace};

fn trace(name: &str) -> Trace {
    let text = std::fs::read_to_string(format!(
        "{}/../examples/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("sample trace");
    Trace::parse(&text).expect("parses")
}

fn bench(c: &mut Criterion) {
    let tunnel = trace("tunnel.json");
    c.bench_function("decompose tunnel trace (12 segments)", |b| {
        b.iter(|| decompose(black_box(&tunnel), &Options::default()))
    });
    let seed = Hash::sha256(b"bench");
    let derived = StepInput {
        claim: "Therefore, 5x = 6x − 14",
        premises: &["So x / (3x − 7) = 2/5"],
        context: "If the fraction is equivalent to 2/5, what is the numerator?",
    };
    c.bench_function("check derived linear equation", |b| {
        b.iter(|| check(black_box(&derived), &seed))
    });
    let chain = StepInput {
        claim: "Time for the rest: t2 = (2/3)/(0.96 D) = 2/(2.88 D) = 0.694444/D.",
        premises: &["Original daily output = D."],
        context: "",
    };
    c.bench_function("check symbolic equality chain", |b| {
        b.iter(|| check(black_box(&chain), &seed))
    });
    let rule = StepInput {
        claim: "I use rule (VD → H3) to derive H3",
        premises: &["I use rule (G8 → VD) to derive VD"],
        context: "Rules: H3 → AZ; SG → C6; C6 → GM; VD → H3; G8 → VD. Fact: I have G8.",
    };
    c.bench_function("check rule application", |b| {
        b.iter(|| check(black_box(&rule), &seed))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
