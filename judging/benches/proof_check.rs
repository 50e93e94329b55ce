//! Checking speed: 2,000-step proofs in each language (whole proof, and cut into steps and
//! checked step by step), and PL2-sized `from` steps (pyramid pebbling, pigeonhole,
//! Tseitin parity) whose SAT calls range over a hundred atoms or more.
//!
//! `cargo bench -p trust-judging --bench proof_check`
// criterion's macros generate the benchmark's entry points without docs.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use trust_judging::proof::{check_plan, check_proof, steps};

/// A 2,000-step modus-ponens chain: NDL (`BY mp on`), NDL_f (`from`).
fn chain(n: usize, ndl_f: bool) -> (String, String) {
    let mut problem = String::from("assert premise-0 := A0\n");
    for i in 1..=n {
        problem.push_str(&format!("assert premise-{i} := (A{} ==> A{i})\n", i - 1));
    }
    problem.push_str(&format!("Derive: A{n}\n"));
    let mut proof = String::from("{\n");
    for i in 1..=n {
        let sep = if i == n { "" } else { ";" };
        let prev = if i == 1 {
            "premise-0".to_string()
        } else {
            format!("A{}", i - 1)
        };
        if ndl_f {
            proof.push_str(&format!("  A{i} from premise-{i}, {prev}{sep}\n"));
        } else {
            proof.push_str(&format!("  A{i} BY mp on premise-{i}, {prev}{sep}\n"));
        }
    }
    proof.push('}');
    (problem, proof)
}

/// A 2,000-line Hilbert proof: premises and modus ponens.
fn hilbert(n: usize) -> (String, String) {
    let mut problem = String::from("Premises:\nPremise1 := A0\n");
    for i in 1..=n / 2 {
        problem.push_str(&format!("Premise{} := (A{} ==> A{i})\n", i + 1, i - 1));
    }
    problem.push_str(&format!("Goal: A{}\n", n / 2));
    let mut proof = String::from("1. A0, Premise1;\n");
    let mut line = 1;
    let mut last = 1;
    for i in 1..=n / 2 {
        line += 1;
        proof.push_str(&format!(
            "{line}. (A{} ==> A{i}), Premise{};\n",
            i - 1,
            i + 1
        ));
        line += 1;
        proof.push_str(&format!("{line}. A{i}, mp, {}, {last};\n", line - 1));
        last = line;
    }
    (problem, proof)
}

/// A 2,000-step equational chain: each step swaps both g-subterms (two redexes).
fn equational(n: usize) -> (String, String) {
    let problem =
        "E1: g(X,Y) = g(Y,X)\nGoal: h(g(a,b),f(c),g(d,e)) = h(g(a,b),f(c),g(d,e))\n".to_string();
    let mut proof = String::from("s = h(g(a,b),f(c),g(d,e))\n");
    for i in 0..n {
        let t = if i % 2 == 0 {
            "h(g(b,a),f(c),g(e,d))"
        } else {
            "h(g(a,b),f(c),g(d,e))"
        };
        proof.push_str(&format!("  = {t}   by E1, E1\n"));
    }
    (problem, proof)
}

fn conj(parts: &[String]) -> String {
    format!("({})", parts.join(" & "))
}

/// PL2 problems posed as ProofGrid poses them: premises split into five conjunctions, one
/// `from` step.
fn one_step(name: &str, clauses: Vec<String>, goal: &str) -> (String, String, String) {
    let chunk = clauses.len().div_ceil(5);
    let mut problem = String::new();
    for (i, c) in clauses.chunks(chunk).enumerate() {
        problem.push_str(&format!("assert premise-{} := {}\n", i + 1, conj(c)));
    }
    let k = clauses.chunks(chunk).count();
    problem.push_str(&format!("Derive: {goal}\n"));
    let justs: Vec<String> = (1..=k).map(|i| format!("premise-{i}")).collect();
    (
        name.to_string(),
        problem,
        format!("{goal} from {}", justs.join(", ")),
    )
}

fn pyramid(height: usize) -> (String, String, String) {
    // node (r, c), r = 0 is the apex; leaves at r = height
    let atom = |r: usize, c: usize, k: usize| format!("P{r}_{c}_{k}");
    let mut clauses = Vec::new();
    for c in 0..=height {
        clauses.push(format!("({} | {})", atom(height, c, 1), atom(height, c, 2)));
    }
    for r in 0..height {
        for c in 0..=r {
            for i in 1..=2 {
                for j in 1..=2 {
                    clauses.push(format!(
                        "({} & {} ==> {} | {})",
                        atom(r + 1, c, i),
                        atom(r + 1, c + 1, j),
                        atom(r, c, 1),
                        atom(r, c, 2)
                    ));
                }
            }
        }
    }
    let goal = format!("({} | {})", atom(0, 0, 1), atom(0, 0, 2));
    one_step(&format!("pebbling pyramid h={height}"), clauses, &goal)
}

fn pigeonhole(holes: usize) -> (String, String, String) {
    let p = |i: usize, j: usize| format!("X{i}_{j}");
    let mut clauses = Vec::new();
    for i in 0..=holes {
        let row: Vec<String> = (0..holes).map(|j| p(i, j)).collect();
        clauses.push(format!("({})", row.join(" | ")));
    }
    for j in 0..holes {
        for i in 0..=holes {
            for k in i + 1..=holes {
                clauses.push(format!("({} ==> ~{})", p(i, j), p(k, j)));
            }
        }
    }
    // the goal is the negation of the first clause (the paper's conversion)
    let first = clauses.remove(0);
    one_step(
        &format!("pigeonhole {}->{holes}", holes + 1),
        clauses,
        &format!("(~ {first})"),
    )
}

fn tseitin(nodes: usize) -> (String, String, String) {
    // a circulant graph: i ~ i+1, i ~ i+2 (4-regular); charge 1 on node 0 only
    let mut edges = Vec::new();
    for i in 0..nodes {
        edges.push((i, (i + 1) % nodes));
        edges.push((i, (i + 2) % nodes));
    }
    let mut clauses = Vec::new();
    for v in 0..nodes {
        let inc: Vec<String> = edges
            .iter()
            .enumerate()
            .filter(|(_, (a, b))| *a == v || *b == v)
            .map(|(k, _)| format!("Y{k}"))
            .collect();
        // parity as nested biconditionals: x1 <==> x2 <==> ... is true iff an even number
        // of them are false; written with explicit parentheses
        let mut parity = inc[0].clone();
        for x in &inc[1..] {
            parity = format!("(~ ({parity} <==> {x}))");
        }
        let charged = v == 0;
        clauses.push(if charged {
            parity
        } else {
            format!("(~ {parity})")
        });
    }
    one_step(
        &format!("tseitin {nodes} nodes {} edges", edges.len()),
        clauses,
        "false",
    )
}

fn bench(c: &mut Criterion) {
    let n = 2_000;
    for (name, (problem, proof)) in [
        ("ndl 2000-step chain", chain(n, false)),
        ("ndl_f 2000-step chain", chain(n, true)),
        ("hilbert 2000-line chain", hilbert(n)),
        ("equational 2000-step chain", equational(n)),
    ] {
        let report = check_proof(&problem, &proof).expect("recognised");
        assert!(report.passed(), "{name}: {:?}", report.verdict);
        assert!(report.steps >= n, "{name}: {} steps", report.steps);
        c.bench_function(&format!("check_proof {name}"), |b| {
            b.iter(|| check_proof(black_box(&problem), black_box(&proof)))
        });
        c.bench_function(&format!("steps+check_plan {name}"), |b| {
            b.iter(|| {
                let plan = steps(black_box(&problem), black_box(&proof))
                    .unwrap()
                    .unwrap();
                check_plan(&plan)
            })
        });
    }
    for (name, problem, proof) in [pyramid(13), pigeonhole(6), tseitin(60)] {
        let report = check_proof(&problem, &proof).expect("recognised");
        assert!(report.passed(), "{name}: {:?}", report.verdict);
        c.bench_function(&format!("pl2 {name}"), |b| {
            b.iter(|| check_proof(black_box(&problem), black_box(&proof)))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
