//! `trust-node simulate` and `simulate sweep`, run as the real binary.

use std::{
    path::Path,
    process::{Command, Output},
};

use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .output()
        .expect("run trust-node")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&read(&dir.join("summary.json"))).unwrap()
}

#[test]
fn a_run_is_reproducible_from_its_seed() {
    let t = tempfile::tempdir().unwrap();
    let (a, b, c) = (t.path().join("a"), t.path().join("b"), t.path().join("c"));
    for (dir, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
        ok(&run(&[
            "simulate",
            "--seed",
            seed,
            "--sessions",
            "60",
            "--out",
            dir.to_str().unwrap(),
        ]));
    }
    let (sa, sb, sc) = (summary(&a), summary(&b), summary(&c));
    assert_eq!(sa["state_root"], sb["state_root"]);
    assert_ne!(sa["state_root"], sc["state_root"]);
    assert_eq!(sa["sessions_decided"], 60);
    for f in [
        "reputation.csv",
        "profit.csv",
        "reputation.svg",
        "profit.svg",
    ] {
        assert_eq!(
            read(&a.join(f)),
            read(&b.join(f)),
            "{f} differs between runs"
        );
    }
    let header = read(&a.join("reputation.csv"));
    let header = header.lines().next().unwrap();
    assert_eq!(
        header,
        "decided,height,honest,malicious,random,rubber-stamp,withholder,copy-cat"
    );
    assert!(read(&a.join("profit.svg")).contains("<svg"));
    let strategies = sa["strategies"].as_array().unwrap();
    let honest = strategies
        .iter()
        .find(|s| s["strategy"] == "honest")
        .unwrap();
    assert!(honest["final_profit_mean"].as_f64().unwrap() > 0.0);
    assert!(honest["final_reputation_mean"].as_f64().is_some());
}

#[test]
fn a_sweep_reports_every_rate() {
    let t = tempfile::tempdir().unwrap();
    let o = run(&[
        "simulate",
        "sweep",
        "--corruption",
        "0,0.2",
        "--sessions",
        "40",
        "--out",
        t.path().to_str().unwrap(),
    ]);
    ok(&o);
    let csv = read(&t.path().join("sweep.csv"));
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let cols: Vec<&str> = row.split(',').collect();
        let net: f64 = cols[1].parse().unwrap();
        assert!((0.0..=1.0).contains(&net), "{row}");
    }
    assert!(read(&t.path().join("sweep.svg")).contains("<svg"));
}

#[test]
fn bad_input_is_refused_clearly() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("o");
    let o = run(&[
        "simulate",
        "sweep",
        "--corruption",
        "1.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[0, 1]"));

    let cfg = t.path().join("bad.toml");
    std::fs::write(&cfg, "sesions = 5\n").unwrap();
    let o = run(&[
        "simulate",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("sesions"));

    let o = run(&[
        "simulate",
        "--sessions",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists(), "nothing is written for a refused run");
}

#[test]
fn a_config_file_sets_the_population() {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("sim.toml");
    std::fs::write(
        &cfg,
        "sessions = 30\nseed = 3\n\n[[population]]\ntier = \"Llm\"\nstrategy = \"honest\"\ncount = 8\n\n[[population]]\ntier = \"Human\"\nstrategy = \"honest\"\ncount = 8\n",
    )
    .unwrap();
    let out = t.path().join("o");
    ok(&run(&[
        "simulate",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let s = summary(&out);
    assert_eq!(s["seed"], 3);
    assert_eq!(s["sessions_decided"], 30);
    assert_eq!(s["strategies"].as_array().unwrap().len(), 1);
}

#[test]
fn the_example_config_is_the_default_written_out() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim/paper.toml");
    let cfg: trust_contracts::sim::SimConfig = toml::from_str(&read(&path)).unwrap();
    assert_eq!(cfg, trust_contracts::sim::SimConfig::default());
}
