//! An LLM seat against endpoints that misbehave: dead, slow (answers after the window),
//! garbage-speaking, and one that replies 10 MB. Each is a **stand-in server** written
//! here (no real server misbehaves on request); the seat must abstain before its deadline
//! every time, count the failure by kind, and never panic. A scripted stand-in that
//! answers well shows the same judge votes when the endpoint is sound.

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
use trust_protocol::{Hash, Vote, tx::Tier};

use crate::fixtures::stand_in::{Behaviour, dead, recording, stand_in};

const DEADLINE: Duration = Duration::from_secs(3);

/// The judge's settings for the transport tests: no calibration and no consistency
/// probes, so that the stand-ins' scripted answers reach ARES unfiltered and every call
/// counted here is a scoring call. `the_default_judge_abstains_when_its_model_fails_calibration`
/// tests the default settings.
fn plain() -> AresParams {
    AresParams {
        consistency_probes: false,
        calibration_min: 0,
        ..AresParams::default()
    }
}

fn judge(url: &str) -> (LlmAuditor, Arc<LlmMetrics>) {
    judge_with(url, plain())
}

fn judge_with(url: &str, ares: AresParams) -> (LlmAuditor, Arc<LlmMetrics>) {
    let metrics = Arc::new(LlmMetrics::default());
    let client = ChatClient::new(
        Endpoint::new(url, "stand-in", None).unwrap(),
        Limits {
            request_timeout: Duration::from_secs(1),
            retries: 2,
            backoff: Duration::from_millis(50),
            ..Limits::default()
        },
        metrics.clone(),
    )
    .unwrap();
    (LlmAuditor::new(client, ares, DEADLINE), metrics)
}

fn segment() -> SegmentView {
    SegmentView {
        claim: "The denominator is 3x − 7".into(),
        premises: vec!["Let the numerator be x".into()],
        givens: vec!["The denominator of a fraction is 7 less than 3 times the numerator.".into()],
        ..SegmentView::default()
    }
}

/// Judges through `url`; the decision and how long it took.
async fn run(url: &str) -> (trust_judging::judge::Decision, Duration, Arc<LlmMetrics>) {
    let (j, m) = judge(url);
    assert_eq!(j.tier(), Tier::Llm);
    let t = Instant::now();
    let d = j.judge(&segment(), &Hash::ZERO).await;
    (d, t.elapsed(), m)
}

fn errors(m: &LlmMetrics, kind: usize) -> u64 {
    m.errors[kind].load(Ordering::Relaxed)
}

// Error kinds, in `LlmMetrics::errors` order.
const TRANSPORT: usize = 0;
const TIMEOUT: usize = 1;
const TOO_LARGE: usize = 3;
const MALFORMED: usize = 4;

/// Slack past the deadline for the judge to return once the deadline fires (not a
/// performance bound: a seat that missed its deadline would take the whole reply time).
const SLACK: Duration = Duration::from_secs(2);

/// A STEP's calculations that the Computer tier found to hold reach the model as checked
/// premises of the prompt context; one that could not be checked does not.
#[tokio::test]
async fn the_model_is_shown_the_calculations_the_computer_tier_checked() {
    use trust_judging::judge::{CheckedOperation, Decision};
    let (url, asked) = recording(Behaviour::Entailed).await;
    let (j, _) = judge(&url);
    let mut view = SegmentView {
        claim: "Mike has 21 + 3 = 24 points.".into(),
        givens: vec!["Mike has 21 points and Jim has 3 more than Mike.".into()],
        ..SegmentView::default()
    };
    view.operations = vec![
        CheckedOperation {
            text: "21 + 3 = 24".into(),
            decision: Decision {
                vote: Vote::Valid,
                reason: "every equality in the step holds".into(),
            },
        },
        CheckedOperation {
            text: "24 points".into(),
            decision: Decision::abstain("no equation or calculation found"),
        },
    ];
    let d = j.judge(&view, &Hash::ZERO).await;
    assert_ne!(d.vote, Vote::Invalid, "{}", d.reason);
    let asked = asked.lock().unwrap().clone();
    assert!(!asked.is_empty(), "the model was asked nothing");
    // Every question put to the model about the claim shows the checked calculation in
    // the prompt context, and none shows the unchecked one as a premise.
    let about: Vec<&String> = asked
        .iter()
        .filter(|a| a.contains("Mike has 21 + 3 = 24 points."))
        .collect();
    assert!(!about.is_empty());
    for a in &about {
        assert!(
            a.contains("`21 + 3 = 24` holds (checked by the Computer tier"),
            "{a}"
        );
        assert!(!a.contains("`24 points`"), "{a}");
    }
}

/// Issue 54: a tool call reaches the model in words, never as the trace's marker lines:
/// the `TU` claim asks whether the code does what the problem asks, and a call among the
/// premises says what was run and what it reported.
#[tokio::test]
async fn the_model_reads_tool_calls_in_words_not_markers() {
    use trust_protocol::trace::blocks::{Semantics, render_tool};
    let (url, asked) = recording(Behaviour::Entailed).await;
    let (j, _) = judge(&url);
    let call = render_tool(
        "call_1",
        "python",
        Some(Semantics::Script),
        "print(240 - 7.5 * 18 + 3)",
        "108.0",
    )
    .unwrap();
    let view = SegmentView {
        claim: call.clone(),
        givens: vec!["A tank holds 240 litres and drains 7.5 litres a minute for 18 minutes; 3 litres of rain are added.".into()],
        premises: vec![call],
        ..SegmentView::default()
    };
    let _ = j.judge(&view, &Hash::ZERO).await;
    let asked = asked.lock().unwrap().clone();
    assert!(!asked.is_empty(), "the model was asked nothing");
    for a in &asked {
        assert!(
            !a.contains("<<<tool"),
            "a marker line reached the model: {a}"
        );
    }
    assert!(
        asked
            .iter()
            .any(|a| a.contains("computes what the problem asks")
                && a.contains("print(240 - 7.5 * 18 + 3)")
                && a.contains("108.0")),
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_dead_endpoint_makes_the_seat_abstain_after_its_retries() {
    let (d, took, m) = run(&dead().await).await;
    assert_eq!(d.vote, Vote::Abstain, "{}", d.reason);
    assert!(
        d.reason.contains("LLM tier could not judge"),
        "{}",
        d.reason
    );
    assert!(took < DEADLINE + SLACK, "{took:?}");
    assert_eq!(errors(&m, TRANSPORT), 3, "first attempt and two retries");
    assert_eq!(m.abstained.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn an_endpoint_that_answers_after_the_window_makes_the_seat_abstain_in_time() {
    let url = stand_in(Behaviour::Slow(Duration::from_secs(30))).await;
    let (d, took, m) = run(&url).await;
    assert_eq!(d.vote, Vote::Abstain, "{}", d.reason);
    assert!(took < DEADLINE + SLACK, "the seat waited {took:?}");
    assert!(errors(&m, TIMEOUT) >= 1, "attempts time out");
}

#[tokio::test]
async fn a_garbage_speaking_endpoint_is_rejected_with_a_reason() {
    for b in [Behaviour::Garbage, Behaviour::OffSchema] {
        let url = stand_in(b).await;
        let (d, took, m) = run(&url).await;
        assert_eq!(d.vote, Vote::Abstain, "{b:?}: {}", d.reason);
        assert!(
            d.reason.contains("malformed") || d.reason.contains("reply"),
            "{b:?}: {}",
            d.reason
        );
        assert!(took < DEADLINE + SLACK);
        assert_eq!(
            errors(&m, MALFORMED),
            1,
            "{b:?}: rejected once, not retried"
        );
    }
}

#[tokio::test]
async fn a_ten_megabyte_reply_is_dropped_at_the_cap() {
    let url = stand_in(Behaviour::Huge).await;
    let (d, took, m) = run(&url).await;
    assert_eq!(d.vote, Vote::Abstain, "{}", d.reason);
    assert!(d.reason.contains("larger than"), "{}", d.reason);
    assert!(took < DEADLINE + SLACK);
    assert_eq!(errors(&m, TOO_LARGE), 1);
}

#[tokio::test]
async fn a_sound_endpoint_gets_a_vote_through_the_same_judge() {
    let url = stand_in(Behaviour::Entailed).await;
    let (d, _, m) = run(&url).await;
    assert_eq!(d.vote, Vote::Valid, "{}", d.reason);
    assert!(d.reason.contains("ARES stability 1.00"), "{}", d.reason);
    // The premise, then the claim, each with the given always included: two subsets.
    assert_eq!(m.calls.load(Ordering::Relaxed), 2);
    assert_eq!(m.entailments.load(Ordering::Relaxed), 2);
    assert_eq!(m.errors_total(), 0);
    // The Prometheus text names the counters.
    let mut text = String::new();
    trust_node::api::MetricsSource::render(&*m, &mut text);
    assert!(text.contains("trust_llm_calls_total 2"), "{text}");
    assert!(text.contains("trust_llm_request_seconds_count 2"), "{text}");
}

#[tokio::test]
async fn an_endpoint_that_refuses_json_schemas_is_asked_without_one_and_read_as_strictly() {
    let url = stand_in(Behaviour::RefusesSchema).await;
    let (j, m) = judge(&url);
    let d = j.judge(&segment(), &Hash::ZERO).await;
    assert_eq!(d.vote, Vote::Valid, "{}", d.reason);
    // One refused attempt, then two unconstrained calls (premise and claim); the refusal
    // is remembered, so it is not asked with a schema again.
    assert_eq!(m.calls.load(Ordering::Relaxed), 3);
    assert_eq!(m.errors[2].load(Ordering::Relaxed), 1);
    let again = j.judge(&segment(), &Hash::sha256(b"another seat")).await;
    assert_eq!(again.vote, Vote::Valid);
    assert_eq!(m.calls.load(Ordering::Relaxed), 5);
}

#[tokio::test]
async fn one_seat_judged_twice_at_once_costs_one_judgement() {
    let url = stand_in(Behaviour::Slow(Duration::from_millis(200))).await;
    let (j, m) = judge(&url);
    let seg = segment();
    let (a, b) = tokio::join!(j.judge(&seg, &Hash::ZERO), j.judge(&seg, &Hash::ZERO));
    assert_eq!(a, b);
    assert_eq!(a.vote, Vote::Valid, "{}", a.reason);
    assert_eq!(m.segments.load(Ordering::Relaxed), 1);
    assert_eq!(m.calls.load(Ordering::Relaxed), 2);
    // Another seat (another seed) is judged afresh.
    let c = j.judge(&seg, &Hash::sha256(b"other seat")).await;
    assert_eq!(c.vote, Vote::Valid);
    assert_eq!(m.segments.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn bench_quality_for_the_llm_tier_counts_votes_calls_and_time() {
    use trust_node::audit::llm::bench;
    let url = stand_in(Behaviour::Entailed).await;
    let (j, _) = judge(&url);
    let corpus = crate::fixtures::example("corpus/quality.jsonl");
    let r = bench::run(&corpus, &j, 2, Duration::from_secs(60))
        .await
        .unwrap();
    let o = &r.overall;
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    assert_eq!(o.traces, 2);
    assert!(o.segments > 0 && o.steps > 0);
    // A model that finds everything entailed votes Valid on every segment: full
    // coverage, nothing flagged, one call per claim and premise.
    assert_eq!(o.abstained, 0);
    assert_eq!(o.coverage(), 1.0);
    assert_eq!((o.caught, o.false_alarms), (0, 0));
    assert!(o.calls_per_segment() >= 1.0, "{o:?}");
    assert!(o.seconds > 0.0);
    // --limit bounds the work.
    let one = bench::run(&corpus, &j, 1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(one.overall.traces, 1);
}

#[tokio::test]
async fn the_default_judge_abstains_when_its_model_fails_calibration() {
    // A stand-in that says "entailed" to every question: ARES alone would score the step
    // 1.00 and vote Valid (previous test). With the default settings the model must first
    // answer the calibration questions, half of which are not entailed.
    let url = stand_in(Behaviour::Entailed).await;
    let (j, m) = judge_with(&url, AresParams::default());
    let d = j.judge(&segment(), &Hash::ZERO).await;
    assert_eq!(d.vote, Vote::Abstain, "{}", d.reason);
    assert!(
        d.reason
            .contains("calibration failed (8 of 16 right, 14 needed)"),
        "{}",
        d.reason
    );
    assert_eq!(m.calls.load(Ordering::Relaxed), 16, "the calibration only");
    assert_eq!(m.entailments.load(Ordering::Relaxed), 0, "no scoring call");
    assert_eq!(m.calibrated.load(Ordering::Relaxed), 0);
    assert_eq!(m.calibration_right.load(Ordering::Relaxed), 8);
    // A second segment reuses the finished calibration: no new call.
    let mut other = segment();
    other.claim = "The numerator is 14".into();
    let again = j.judge(&other, &Hash::ZERO).await;
    assert_eq!(again.vote, Vote::Abstain);
    assert_eq!(m.calls.load(Ordering::Relaxed), 16);
    // With the calibration skipped, the consistency probes still refuse the vote: the
    // stand-in finds the step's negation entailed too.
    let (j, m) = judge_with(
        &url,
        AresParams {
            calibration_min: 0,
            ..AresParams::default()
        },
    );
    let d = j.judge(&segment(), &Hash::ZERO).await;
    assert_eq!(d.vote, Vote::Abstain, "{}", d.reason);
    assert!(d.reason.contains("would vote Valid"), "{}", d.reason);
    assert!(d.reason.contains("negation entailed too"), "{}", d.reason);
    assert_eq!(m.probes.load(Ordering::Relaxed), 1);
    assert_eq!(m.probes_failed.load(Ordering::Relaxed), 1);
}
