//! What a tool segment costs a seat: `cargo run -p trust-sandbox --example cost`.
//! Prints the time to start the sandbox (resolving the interpreter and the probe run), a
//! trivial script, a fourth cell replayed after three earlier ones, and a cell that imports
//! sympy, each the median of several runs. Nothing is asserted: the numbers depend on the
//! machine.

use std::time::{Duration, Instant};

use trust_sandbox::{Config, Execute, Mode, Outcome, Request, Sandbox};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn time(n: usize, f: impl Fn() -> Outcome) -> Duration {
    median(
        (0..n)
            .map(|_| {
                let t = Instant::now();
                let out = f();
                let d = t.elapsed();
                assert!(matches!(out, Outcome::Ran(_)), "{out:?}");
                d
            })
            .collect(),
    )
}

fn main() {
    let starts: Vec<Duration> = (0..3)
        .map(|_| {
            let t = Instant::now();
            let s = Sandbox::start(&Config::default());
            let d = t.elapsed();
            if let Err(e) = s {
                eprintln!("{e}");
                std::process::exit(1);
            }
            d
        })
        .collect();
    let sandbox = Sandbox::start(&Config::default()).unwrap_or_else(|e| panic!("{e}"));
    let run = |mode, earlier: &[&str], code: &str| {
        sandbox.execute(&Request {
            mode,
            earlier: earlier.iter().map(|s| s.to_string()).collect(),
            code: code.into(),
        })
    };
    let n = 7;
    let trivial = time(n, || run(Mode::Script, &[], "print(1 + 1)"));
    let cell1 = time(n, || run(Mode::Cell, &[], "1 + 1"));
    let earlier = [
        "a = 3",
        "b = a * 4\nprint(b)",
        "c = [i * i for i in range(b)]",
    ];
    let replay = time(n, || run(Mode::Cell, &earlier, "sum(c) + a"));
    let sympy = time(3, || {
        run(
            Mode::Cell,
            &["import sympy\nx = sympy.Symbol('x')"],
            "sympy.solve(x**2 - 2, x)",
        )
    });
    println!(
        "interpreter: {} (IPython display: {})",
        sandbox.interpreter(),
        sandbox.has_ipython()
    );
    println!("| what | median |");
    println!("| --- | --- |");
    println!(
        "| sandbox start (resolve python, probe run) | {:?} |",
        median(starts)
    );
    println!("| trivial script | {trivial:?} |");
    println!("| one cell (IPython pretty loaded) | {cell1:?} |");
    println!("| 4-cell replay (3 earlier + 1) | {replay:?} |");
    println!("| cell importing sympy | {sympy:?} |");
}
