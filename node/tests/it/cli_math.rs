//! The `econ` and `quorum` commands, run as the real binary.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;
use trust_protocol::math::{TraceSpec, segment_pass_probability, trace_analysis};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .output()
        .expect("run trust-node")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(o)))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// `v[key]` equals `want` up to the last bits, which serde_json's fast float parser may
/// round differently.
fn assert_same(v: &Value, key: &str, want: f64) {
    let got = num(v, key);
    assert!(
        (got - want).abs() <= 1e-14 * got.abs().max(want.abs()),
        "{key}: {got} vs {want}"
    );
}

/// Asserts exit code 2 and a one-line `error: ...` mentioning every needle.
fn assert_usage_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    let line = err.trim_end();
    assert!(line.starts_with("error: "), "{err}");
    assert!(!line.contains('\n'), "more than one line: {err}");
    for n in needles {
        assert!(line.contains(n), "{n:?} not in {err:?}");
    }
}

#[test]
fn econ_check_default_text_reproduces_the_paper() {
    let o = run(&["econ", "check"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "mu_min = (1-eps_H) R - eps_H P p_max           3\n",
        "25.8",
        "e^-203.77",
        "e^-63.56",
        "-4\n",
        "16\n",
        "0.4\n",
        "0.3333",
        "FAIL  p_min",
        "PASS  mu_min",
        "PASS  reward",
        "PASS  statistical",
        "FAIL  guesser",
        "agreement a* = settled reputation r*           0.7516\n",
        "3 of 5 dials pass.",
    ] {
        assert!(out.contains(needle), "{needle:?} not in:\n{out}");
    }
    assert!(stderr(&o).contains("p_min"), "{}", stderr(&o));
}

#[test]
fn econ_check_default_json_reproduces_the_paper() {
    let o = run(&["econ", "check", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    assert!(close(num(&v, "mu_min"), 3.0, 1e-12));
    assert!(close(num(&v, "sigma2_h"), 25.8, 1e-12));
    assert!(close(num(&v, "b"), 6.0, 0.0));
    assert!(close(num(&v, "ln_honest_bound"), -203.77, 0.01));
    assert!(close(num(&v, "ln_malicious_bound"), -63.56, 0.01));
    assert!(close(num(&v, "e_x_mal"), -4.0, 1e-12));
    assert!(close(num(&v, "var_x_mal"), 16.0, 1e-12));
    assert!(close(num(&v, "alpha"), 0.4, 1e-12));
    assert!(close(num(&v, "p_min_required"), 1.0 / 3.0, 1e-12));
    assert_eq!(v["ok"], Value::Bool(false));

    let dials = v["dials"].as_array().expect("dials");
    let dial = |name: &str| {
        dials
            .iter()
            .find(|d| d["name"] == name)
            .unwrap_or_else(|| panic!("no dial {name} in {dials:?}"))
    };
    assert_eq!(dial("p_min")["ok"], Value::Bool(false));
    assert!(dial("p_min")["detail"].as_str().unwrap().contains("0.3333"));
    assert_eq!(dial("reward")["ok"], Value::Bool(true));
    assert_eq!(dial("mu_min")["ok"], Value::Bool(true));
    assert_eq!(dial("statistical")["ok"], Value::Bool(true));
    // The paper's parameters price only the always-wrong seat: a seat voting Valid 80% of
    // the time without looking agrees with its 5-seat panel 75% of the time and profits.
    assert_eq!(dial("guesser")["ok"], Value::Bool(false));
    let g = &v["guesser"];
    assert!(close(num(g, "agreement"), 0.75158, 1e-9));
    assert!(close(num(g, "e_x"), 3.963898, 1e-6));
    assert!(close(num(g, "coin_agreement"), 0.6323, 1e-9));

    let safety = &v["safety"];
    assert_eq!(safety["segments"], 20);
    assert!(num(safety, "actual_gap") >= num(safety, "required_gap"));
}

#[test]
fn econ_check_paper_toml_matches_the_defaults() {
    let paper = examples().join("econ/paper.toml");
    let o = run(&[
        "econ",
        "check",
        "--json",
        "--config",
        paper.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let default = run(&["econ", "check", "--json"]);
    assert_eq!(json(&o), json(&default));
}

#[test]
fn econ_check_balanced_passes() {
    let balanced = examples().join("econ/balanced.toml");
    let o = run(&["econ", "check", "--config", balanced.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("5 of 5 dials pass."));
    assert!(stdout(&o).contains("PASS  guesser"));
    assert!(!stdout(&o).contains("FAIL"));
    let o = run(&[
        "econ",
        "check",
        "--json",
        "--config",
        balanced.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(v["ok"], Value::Bool(true));
    // The network's defaults: the best unflagged guesser (q = 0.6) agrees 67.2% of the
    // time and loses 0.197 per vote.
    assert!(close(num(&v["guesser"], "agreement"), 0.67206, 1e-9));
    assert!(close(num(&v["guesser"], "e_x"), -0.197429, 1e-6));
    assert!(num(&v, "mu_min") > 0.0);
}

#[test]
fn econ_check_bad_configs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "unknown.toml",
            "reward = 6\nrewrd = 7\n",
            &["line 2", "unknown field `rewrd`"],
        ),
        (
            "type.toml",
            "penalty = \"eight\"\n",
            &["line 1", "invalid type"],
        ),
        (
            "pmin.toml",
            "p_min = 0.7\n",
            &["p_min must be in (0, p_max = 0.5), got 0.7"],
        ),
        (
            "eps.toml",
            "eps_H = 1.5\n",
            &["eps_H must be in [0, 1), got 1.5"],
        ),
        (
            "beta.toml",
            "[safety]\nbeta = 1.5\n",
            &["beta must be in (0, 1), got 1.5"],
        ),
        (
            "tier.toml",
            "[safety.spec]\ntau = 0.5\nsegments = [\"C\", \"X\"]\n[safety.spec.tiers.C]\nk = 1\neps = 0.0\nw = 1\n",
            &["unknown tier \"X\" in segments[1]"],
        ),
    ];
    for (name, text, needles) in cases {
        let path = write(name, text);
        assert_usage_error(&run(&["econ", "check", "--config", &path]), needles);
    }
    let missing = dir.path().join("missing.toml");
    assert_usage_error(
        &run(&["econ", "check", "--config", missing.to_str().unwrap()]),
        &["cannot read", "missing.toml"],
    );
}

#[test]
fn quorum_segment_matches_the_library() {
    for (k, eps, rho, tau, q) in [
        ("5", 0.3, 0.1, 0.5, 3),
        ("5", 0.3, 0.1, 0.6, 3),
        ("3", 0.05, 0.0, 0.5, 2),
        ("1", 0.0, 0.0, 0.5, 1),
    ] {
        let o = run(&[
            "quorum",
            "segment",
            "--k",
            k,
            "--eps",
            &eps.to_string(),
            "--rho",
            &rho.to_string(),
            "--tau",
            &tau.to_string(),
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v = json(&o);
        let want = segment_pass_probability(k.parse().unwrap(), eps, rho, tau).unwrap();
        assert_eq!(v["q"], q);
        assert_same(&v, "p_pass", want);
    }
    let o = run(&[
        "quorum", "segment", "--k", "3", "--eps", "0.05", "--tau", "0.5",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(
        out.contains("q = ceil(tau k) = 2") && out.contains("0.99275"),
        "{out}"
    );
}

#[test]
fn quorum_trace_json() {
    let spec = examples().join("quorum/figure4.json");
    let o = run(&[
        "quorum",
        "trace",
        "--spec",
        spec.to_str().unwrap(),
        "--beta",
        "0.7",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);

    let text = std::fs::read_to_string(&spec).unwrap();
    let parsed: TraceSpec = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, TraceSpec::representative());
    let resolved = parsed.resolve().unwrap();
    let a = trace_analysis(&resolved.segments, 0.7).unwrap();

    assert_eq!(v["segments"], 20);
    assert_eq!(v["total_weight"], 39);
    assert_same(&v, "w_beta", a.w_beta);
    assert_same(&v, "mu_vote", a.moments.mu_vote);
    assert_same(&v, "sigma2_vote", a.moments.sigma2_vote);
    assert_eq!(num(&v, "sigma2_max"), 89.0);
    assert_same(&v, "exact", a.exact);
    assert_same(&v, "ln_exact", a.ln_exact);
    assert_same(&v, "hoeffding", a.hoeffding.value);
    assert_same(&v, "chernoff", a.chernoff.value);
    assert_same(&v, "ln_hoeffding", a.hoeffding.ln);
    assert_same(&v, "ln_chernoff", a.chernoff.ln);
    let exact = num(&v, "exact");
    assert!(exact > 0.0 && exact <= num(&v, "chernoff") && exact <= num(&v, "hoeffding"));
}

#[test]
fn quorum_sweep_writes_svg_and_table() {
    let spec = examples().join("quorum/figure4.json");
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("fig4.svg");
    let o = run(&[
        "quorum",
        "sweep",
        "--spec",
        spec.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.lines()
            .filter(|l| l.trim_start().starts_with("0."))
            .count(),
        50
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg"));
    for label in ["exact (DP)", "Hoeffding bound", "Chernoff bound"] {
        assert!(drawn.contains(label), "{label} missing from the SVG");
    }
    assert!(drawn.matches("<polyline").count() >= 3);

    let o = run(&[
        "quorum",
        "sweep",
        "--spec",
        spec.to_str().unwrap(),
        "--from",
        "0.6",
        "--to",
        "0.8",
        "--step",
        "0.05",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows = json(&o);
    let rows = rows.as_array().unwrap();
    let betas: Vec<f64> = rows.iter().map(|r| num(r, "beta")).collect();
    assert_eq!(betas, [0.6, 0.65, 0.7, 0.75, 0.8]);
    for r in rows {
        let exact = num(r, "exact");
        assert!(exact <= num(r, "hoeffding") + 1e-12 && exact <= num(r, "chernoff") + 1e-12);
    }
    let a = trace_analysis(
        &TraceSpec::representative().resolve().unwrap().segments,
        0.7,
    )
    .unwrap();
    assert_same(&rows[2], "exact", a.exact);
}

#[test]
fn quorum_bad_arguments_exit_2() {
    let spec = examples().join("quorum/figure4.json");
    let spec = spec.to_str().unwrap();
    let seg = |k: &str, eps: &str, rho: &str, tau: &str| {
        run(&[
            "quorum", "segment", "--k", k, "--eps", eps, "--rho", rho, "--tau", tau,
        ])
    };
    assert_usage_error(&seg("0", "0.1", "0", "0.5"), &["k must be at least 1"]);
    assert_usage_error(
        &seg("3", "1.5", "0", "0.5"),
        &["eps must be in [0, 1], got 1.5"],
    );
    assert_usage_error(
        &seg("3", "-0.1", "0", "0.5"),
        &["eps must be in [0, 1], got -0.1"],
    );
    assert_usage_error(
        &seg("3", "0.1", "1.1", "0.5"),
        &["rho must be in [0, 1], got 1.1"],
    );
    assert_usage_error(
        &seg("3", "0.1", "0", "0"),
        &["tau must be in (0, 1], got 0"],
    );
    assert_usage_error(&seg("3", "0.1", "0", "1.01"), &["tau must be in (0, 1]"]);

    for beta in ["0", "1", "-0.5", "1.5"] {
        assert_usage_error(
            &run(&["quorum", "trace", "--spec", spec, "--beta", beta]),
            &["beta must be in (0, 1)"],
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let tier = r#""C": {"k": 1, "eps": 0, "w": 1}"#;
    let unknown = write(
        "unknown.json",
        &format!(r#"{{"tau": 0.5, "tiers": {{{tier}}}, "segments": ["C", "C", "C", "X"]}}"#),
    );
    assert_usage_error(
        &run(&["quorum", "trace", "--spec", &unknown, "--beta", "0.5"]),
        &["unknown tier \"X\" in segments[3]"],
    );
    let extra = write(
        "extra.json",
        &format!(r#"{{"tau": 0.5, "tiers": {{{tier}}}, "segments": ["C"], "beta": 1}}"#),
    );
    assert_usage_error(
        &run(&["quorum", "trace", "--spec", &extra, "--beta", "0.5"]),
        &["malformed spec", "unknown field `beta`"],
    );
    let broken = write("broken.json", r#"{"tau": 0.5, "tiers": "#);
    assert_usage_error(
        &run(&["quorum", "sweep", "--spec", &broken]),
        &["malformed spec", "broken.json"],
    );
    let zero_w = write(
        "zero_w.json",
        r#"{"tau": 0.5, "tiers": {"C": {"k": 1, "eps": 0, "w": 0}}, "segments": ["C"]}"#,
    );
    assert_usage_error(
        &run(&["quorum", "trace", "--spec", &zero_w, "--beta", "0.5"]),
        &["tier \"C\": w must be at least 1"],
    );
    let bad_eps = write(
        "bad_eps.json",
        r#"{"tau": 0.5, "tiers": {"H": {"k": 5, "eps": 2, "rho": 0.1, "w": 3}}, "segments": ["H"]}"#,
    );
    assert_usage_error(
        &run(&["quorum", "trace", "--spec", &bad_eps, "--beta", "0.5"]),
        &["tier \"H\": eps must be in [0, 1], got 2"],
    );
    let missing = dir.path().join("missing.json");
    assert_usage_error(
        &run(&[
            "quorum",
            "trace",
            "--spec",
            missing.to_str().unwrap(),
            "--beta",
            "0.5",
        ]),
        &["cannot read", "missing.json"],
    );
    assert_usage_error(
        &run(&[
            "quorum", "sweep", "--spec", spec, "--from", "0.9", "--to", "0.5",
        ]),
        &["from (0.9) must not be greater than to (0.5)"],
    );
    assert_usage_error(
        &run(&[
            "quorum", "sweep", "--spec", spec, "--from", "0", "--to", "0.5",
        ]),
        &["from must be a beta in (0, 1), got 0"],
    );
    assert_usage_error(
        &run(&["quorum", "sweep", "--spec", spec, "--step", "0"]),
        &["step must be positive"],
    );
    // clap's own errors also exit 2.
    let o = run(&["quorum", "segment", "--k", "3", "--tau", "0.5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--eps"));
}
