//! The Python client (`clients/python`, imported as `trust_client`) against a real local
//! network: installed with pip into a fresh venv, its own unit tests run, then the
//! cookbook's script (`examples/cookbook.py`) submits a sample trace to node 0, waits on
//! the event stream, prints each step with its text and verdict, exports the outcome's
//! proof over the API and verifies it with the `trust-node` binary against the genesis
//! file, as docs/python.md shows.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;

use crate::fixtures::{bin, network::Network, repo};

/// Runs `cmd` and prints `what` and what it said, for the test's output.
fn run(what: &str, cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    println!(
        "$ {what}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Copies the package's sources (no build output) from `from` to `to`, so that pip
/// builds in a scratch directory and never writes into the work tree.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("a directory entry");
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if matches!(&*text, "build" | "dist" | "__pycache__") || text.ends_with(".egg-info") {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
    }
}

/// A venv under `dir` with the package at `package` installed: first offline, from the
/// venv's own setuptools (`--no-build-isolation --no-index`); where that cannot build (a
/// setuptools without `bdist_wheel`, or none, as in a 3.12 venv), with pip's ordinary build
/// isolation. Returns the venv's python.
fn venv_with_client(dir: &Path, package: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let out = run(
        "python3 -m venv venv",
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
    );
    assert!(out.status.success(), "python3 -m venv failed");
    let python = venv.join("bin").join("python");
    let pip = |extra: &[&str]| {
        let mut cmd = Command::new(&python);
        cmd.args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
        ])
        .args(extra)
        .arg(package)
        .current_dir(dir);
        run(
            &format!("pip install {} clients/python", extra.join(" ")),
            &mut cmd,
        )
    };
    if !pip(&["--no-build-isolation", "--no-index"])
        .status
        .success()
    {
        let out = pip(&[]);
        assert!(out.status.success(), "pip install clients/python failed");
    }
    python
}

#[test]
fn the_python_client_submits_waits_reads_each_step_and_verifies_the_proof() {
    let net = Network::running(4);
    let dir = tempfile::tempdir().expect("tempdir");
    let package = dir.path().join("clients-python");
    copy_tree(&repo().join("clients").join("python"), &package);
    let python = venv_with_client(dir.path(), &package);

    // The package's own unit tests (a stand-in node and binary), on the installed package.
    let out = run(
        "python -m unittest discover -s clients/python/tests",
        Command::new(&python)
            .args(["-m", "unittest", "discover", "-v", "-s"])
            .arg(package.join("tests"))
            .current_dir(dir.path())
            .env("PYTHONIOENCODING", "utf-8"),
    );
    assert!(out.status.success(), "the client's unit tests failed");

    // The cookbook against node 0, as its operator: the token, the trace, the binary that
    // verifies and the network's genesis file.
    let trace = repo().join("examples/traces/fraction-incorrect.txt");
    let genesis = net.nodes[0].home.join("genesis.json");
    let proofs = dir.path().join("proofs");
    std::fs::create_dir_all(&proofs).expect("proofs dir");
    let out = run(
        "python clients/python/examples/cookbook.py",
        Command::new(&python)
            .arg(package.join("examples").join("cookbook.py"))
            .args(["--api", &net.nodes[0].api])
            .args(["--token", &net.operator_token(0)])
            .arg("--trace")
            .arg(&trace)
            .arg("--binary")
            .arg(bin())
            .arg("--genesis")
            .arg(&genesis)
            .arg("--out")
            .arg(&proofs)
            .args(["--timeout", "180"])
            .current_dir(dir.path())
            .env("PYTHONIOENCODING", "utf-8")
            .env_remove("TRUST_API_TOKEN")
            .env_remove("TRUST_NODE_BIN"),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the cookbook failed ({:?}):\n{text}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        net.logs_tail()
    );
    assert!(text.lines().any(|l| l == "verdict   FAIL"), "{text}");
    // Each step under its name with its text and verdict: O2 is the wrong one.
    let o2 = text
        .lines()
        .find(|l| l.trim_start().starts_with("O2 "))
        .unwrap_or_else(|| panic!("no O2 step line:\n{text}"));
    assert!(
        o2.contains("invalid") && o2.contains("5x = 9x − 20"),
        "{o2}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("ST1 ") && l.contains("Let the numerator be x")),
        "{text}"
    );
    // Issue 56: the README's loop over `s.steps` reads the model's own steps only, in trace
    // order; what the node planted is listed apart, after them.
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("steps     name"))
        .skip(1)
        .take_while(|l| l.starts_with("          "))
        .collect();
    let names: Vec<&str> = block
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains("honeypot")),
        "a planted step among the model's: {names:?}\n{text}"
    );
    let at = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} not among the steps {names:?}:\n{text}"))
    };
    assert!(
        at("ST1") < at("O1") && at("O1") < at("O2") && at("O2") < at("O3"),
        "not in trace order: {names:?}"
    );
    if text.contains("segments  ")
        && text
            .lines()
            .any(|l| l.starts_with("segments  ") && l.contains("honeypot:"))
    {
        assert!(
            text.lines().any(|l| l.starts_with("honeypots name")),
            "{text}"
        );
    }
    // The event stream was followed to the verdict and to finality.
    assert!(text.contains("session decided: fail"), "{text}");
    assert!(text.contains("session final"), "{text}");
    // The proof verified, final, and agrees with the node step by step.
    assert!(text.contains("verified  FAIL, final at block "), "{text}");
    assert!(text.contains("O2 invalid"), "{text}");
    assert!(
        text.contains("ok        the proof verified and agrees with the node, step by step"),
        "{text}"
    );

    // The bundle it wrote is the binary's own format: it verifies on its own, and the
    // session it proves is decided as node 1 sees it.
    let session = text
        .lines()
        .find_map(|l| l.strip_prefix("session   "))
        .unwrap_or_else(|| panic!("no session line:\n{text}"))
        .to_string();
    let bundle = proofs.join(format!("{session}.proof"));
    let out = run(
        "trust-node proof verify SESSION.proof --genesis genesis.json --trace TRACE --json",
        Command::new(bin())
            .args(["proof", "verify"])
            .arg(&bundle)
            .arg("--genesis")
            .arg(&genesis)
            .arg("--trace")
            .arg(&trace)
            .args(["--session", &session, "--json"]),
    );
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("proof verify --json");
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["final"], true, "{v}");
    assert_eq!(v["verdict"], "fail", "{v}");
    let s = net
        .get(1, &format!("/v1/sessions/{session}"))
        .expect("node 1 knows the session");
    assert_eq!(s["status"], "decided", "{s}");
    assert_eq!(s["outcome"]["trace"], "fail", "{s}");
}
