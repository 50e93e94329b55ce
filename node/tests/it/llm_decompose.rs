//! The paper's LLM decomposition (appendix 0.0.9.1) replayed through a **scripted
//! stand-in server**: an OpenAI-compatible endpoint written here that answers each of the
//! five step prompts with the appendix's own example output for that step (the files in
//! `tests/llm_decompose/`, copied from the paper as it is, artefacts included), for the
//! appendix's own example trace. No model runs; the test checks that the five prompts go
//! out in order with the earlier answers in them, that the paper's formats parse, and
//! that the HDAG built has the paper's levels and edges.
//!
//! The same stand-in, told to answer one step with garbage or not to listen at all,
//! shows the fallback to the heuristic builder, with a warning naming the step.

use std::{
    collections::BTreeSet,
    process::Command,
    sync::{Arc, Mutex},
};

use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};
use trust_judging::decompose::{
    self, Options,
    llm::{self, Step},
};
use trust_node::{
    audit::llm::client::{ChatClient, Endpoint, LlmMetrics},
    cli::local::{ask_endpoint, decompose_limits},
};
use trust_protocol::{
    hdag::{AbstractionLevel, AuditorType, Hdag, Relationship},
    trace::Trace,
};

const TRACE: &str = include_str!("llm_decompose/trace.txt");
const REPLIES: [&str; 5] = [
    include_str!("llm_decompose/step1.md"),
    include_str!("llm_decompose/step2.md"),
    include_str!("llm_decompose/step3.md"),
    include_str!("llm_decompose/step4.md"),
    include_str!("llm_decompose/step5.md"),
];

/// What the stand-in answers to step `n` (1-5).
#[derive(Clone, Copy, Debug)]
enum Script {
    /// The appendix's example output for every step.
    Paper,
    /// The appendix's output, except garbage for this step.
    GarbageAt(u8),
    /// The appendix's output, except a 10 MB reply for this step.
    HugeAt(u8),
}

/// The step a request is for, read from the system prompt ("step N of 5").
fn step_of(body: &Value) -> Option<u8> {
    let system = body["messages"][0]["content"].as_str()?;
    let at = system.find("step ")?;
    system[at + 5..]
        .chars()
        .next()?
        .to_digit(10)
        .map(|d| d as u8)
}

fn completion(content: &str) -> String {
    serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}]
    })
    .to_string()
}

/// Reads one HTTP request; returns its body.
async fn read_request(s: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let k = s.read(&mut chunk).await.ok()?;
        if k == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..k]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            return Some(buf[end + 4..end + 4 + len].to_vec());
        }
    }
}

async fn respond(s: &mut tokio::net::TcpStream, body: &str) {
    let _ = s
        .write_all(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await;
}

/// A stand-in for a node's HTTP API (named as such): records each `POST /v1/sessions`
/// body and answers like a node that opened a session. Returns `host:port`.
async fn node_stand_in() -> (String, Arc<Mutex<Vec<Value>>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let Some(body) = read_request(&mut s).await else {
                continue;
            };
            log.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            // Every field a node's reply has (`Submitted`): the CLI reads it as that type.
            let reply = serde_json::json!({
                "session": "ab".repeat(32), "tx": "cd".repeat(32), "fee": 1,
                "segments": [["G1", "Human"]], "left_out": [], "honeypots": 0
            });
            respond(&mut s, &reply.to_string()).await;
        }
    });
    (addr.to_string(), seen)
}

/// Starts the scripted stand-in server; returns its base URL and the requests it got.
async fn stand_in(script: Script) -> (String, Arc<Mutex<Vec<Value>>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let Some(body) = read_request(&mut s).await else {
                    return;
                };
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let step = step_of(&body).unwrap_or(0);
                log.lock().unwrap().push(body);
                let content = match script {
                    Script::GarbageAt(n) if n == step => {
                        "I think the trace is fine. Here is a poem about tunnels instead."
                    }
                    Script::HugeAt(n) if n == step => {
                        let huge = completion(&"# Abstraction Block Analysis\n".repeat(350_000));
                        respond(&mut s, &huge).await;
                        return;
                    }
                    _ => REPLIES
                        .get(usize::from(step).wrapping_sub(1))
                        .copied()
                        .unwrap_or(""),
                };
                respond(&mut s, &completion(content)).await;
            });
        }
    });
    (format!("http://{addr}/v1"), seen)
}

/// A URL where nothing listens.
async fn dead() -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/v1")
}

fn client(url: &str) -> ChatClient {
    ChatClient::new(
        Endpoint::new(url, "stand-in", None).unwrap(),
        decompose_limits(),
        Arc::new(LlmMetrics::default()),
    )
    .unwrap()
}

fn trace() -> Trace {
    Trace::parse(TRACE).expect("the paper's example trace parses")
}

/// The appendix's final HDAG (Step 5, "Finalized Edges"): levels of its 14 nodes.
const PAPER_LEVELS: [(&str, AbstractionLevel); 14] = [
    ("G1", AbstractionLevel::Goal),
    ("S1", AbstractionLevel::Strategy),
    ("T1", AbstractionLevel::Tactic),
    ("ST1", AbstractionLevel::Step),
    ("ST2", AbstractionLevel::Step),
    ("ST3", AbstractionLevel::Step),
    ("ST4", AbstractionLevel::Step),
    ("ST5", AbstractionLevel::Step),
    ("ST6", AbstractionLevel::Step),
    ("ST7", AbstractionLevel::Step),
    ("O1", AbstractionLevel::Operation),
    ("O2", AbstractionLevel::Operation),
    ("O3", AbstractionLevel::Operation),
    ("O4", AbstractionLevel::Operation),
];

/// The appendix's final edge list, as printed (36 edges; its summary says 28).
fn paper_edges() -> BTreeSet<(String, String, Relationship)> {
    use Relationship::*;
    let list: &[(&str, &str, Relationship)] = &[
        ("G1", "S1", DecomposesTo),
        ("S1", "T1", DecomposesTo),
        ("T1", "ST1", DecomposesTo),
        ("T1", "ST2", DecomposesTo),
        ("T1", "ST3", DecomposesTo),
        ("T1", "ST4", DecomposesTo),
        ("T1", "ST5", DecomposesTo),
        ("T1", "ST6", DecomposesTo),
        ("T1", "ST7", DecomposesTo),
        ("ST1", "O1", DecomposesTo),
        ("ST2", "O2", DecomposesTo),
        ("ST3", "O1", DecomposesTo),
        ("ST4", "O2", DecomposesTo),
        ("ST5", "O2", DecomposesTo),
        ("ST6", "O3", DecomposesTo),
        ("ST7", "O4", DecomposesTo),
        ("ST3", "ST1", DependsOn),
        ("ST4", "ST2", DependsOn),
        ("ST4", "ST3", DependsOn),
        ("ST5", "ST4", DependsOn),
        ("ST6", "ST5", DependsOn),
        ("ST7", "ST6", DependsOn),
        ("O1", "ST3", Enables),
        ("O2", "ST4", Enables),
        ("O3", "ST6", Enables),
        ("O4", "ST7", Enables),
        ("O1", "ST1", Exemplifies),
        ("O1", "ST3", Exemplifies),
        ("O2", "ST2", Exemplifies),
        ("O2", "ST4", Exemplifies),
        ("O3", "ST6", Exemplifies),
        ("O4", "ST7", Exemplifies),
        ("O1", "ST3", Validates),
        ("O2", "ST4", Validates),
        ("O3", "ST6", Validates),
        ("O4", "ST7", Validates),
    ];
    list.iter()
        .map(|(a, b, r)| (a.to_string(), b.to_string(), *r))
        .collect()
}

/// The edges of the HDAG the model built: without the OPERATIONs (`<id>-op<k>`) that
/// re-routing adds below a claim in words the model gave the Computer tier.
fn edges(h: &Hdag) -> BTreeSet<(String, String, Relationship)> {
    h.edges
        .iter()
        .filter(|e| !e.from.contains("-op") && !e.to.contains("-op"))
        .map(|e| (e.from.clone(), e.to.clone(), e.relationship))
        .collect()
}

/// The nodes re-routing added: each an OPERATION for the Computer tier below the node it
/// is named after, which went to the LLM tier.
fn rerouted(h: &Hdag) -> Vec<(String, String)> {
    h.nodes
        .iter()
        .filter_map(|n| {
            let (parent, _) = n.id.split_once("-op")?;
            assert_eq!(n.primary_auditor, AuditorType::Auto, "{}", n.id);
            let p = h.nodes.iter().find(|p| p.id == parent).expect("its parent");
            assert_eq!(p.primary_auditor, AuditorType::Llm, "{}", p.id);
            assert!(
                p.content.contains(&n.content),
                "{} in {}",
                n.content,
                p.content
            );
            Some((parent.to_string(), n.content.clone()))
        })
        .collect()
}

#[tokio::test]
async fn the_appendix_example_replayed_gives_the_papers_hdag() {
    let (url, seen) = stand_in(Script::Paper).await;
    let t = trace();
    let d = ask_endpoint(&client(&url), &t)
        .await
        .unwrap_or_else(|e| panic!("the paper's own outputs decompose: {e}"));
    assert!(!d.fell_back);

    // The five prompts went out in order, each with the answers it builds on.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().filter_map(step_of).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    let user = |i: usize| {
        seen[i]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(user(0).contains("## Thinking Process:"));
    assert!(
        user(1).contains("## STRATEGY Level"),
        "step 2 gets step 1's blocks"
    );
    assert!(
        user(2).contains("### Segment ST7"),
        "step 3 gets the segments"
    );
    assert!(
        user(3).contains("ST4 depends_on ST2"),
        "step 4 gets the relationships"
    );
    assert!(
        user(4).contains("### Segment G1 - Goal") && user(4).contains("### Segment O4"),
        "step 5 gets segments, relationships and assignments"
    );
    // Free-text replies: no JSON schema is imposed on a markdown answer.
    assert!(seen.iter().all(|b| b.get("response_format").is_none()));

    // The paper's levels, node for node: an OPERATION the paper gives the Computer tier
    // that says more in words than its calculation becomes the STEP it is, with its bare
    // calculation as an OPERATION below it (`<id>-op1`).
    let h = &d.hdag;
    let moved = rerouted(h);
    let levels: Vec<(&str, AbstractionLevel)> = h
        .nodes
        .iter()
        .filter(|n| !n.id.contains("-op"))
        .map(|n| (n.id.as_str(), n.abstraction_level))
        .collect();
    let expected: Vec<(&str, AbstractionLevel)> = PAPER_LEVELS
        .iter()
        .map(|&(id, level)| match level {
            AbstractionLevel::Operation if moved.iter().any(|(p, _)| p == id) => {
                (id, AbstractionLevel::Step)
            }
            _ => (id, level),
        })
        .collect();
    assert_eq!(levels, expected, "{:#?}", d.warnings);
    // The paper's edges, all 36 of its final list and nothing else but the re-routing's.
    assert_eq!(edges(h), paper_edges());
    assert!(h.edges.len() > 36);
    // Step 5's auditor assignment (which overrides step 4's T_LLM for G1), except where a
    // claim in words went to the Computer tier: then the LLM tier, and a warning.
    let primary = |id: &str| h.nodes.iter().find(|n| n.id == id).unwrap().primary_auditor;
    assert_eq!(primary("G1"), AuditorType::Human);
    assert_eq!(primary("S1"), AuditorType::Llm);
    for id in ["T1", "ST1", "ST4", "ST7", "O1", "O4"] {
        let told = d
            .warnings
            .iter()
            .any(|w| w.starts_with(&format!("{id} is a claim in words")));
        if told {
            assert_eq!(primary(id), AuditorType::Llm, "{id}");
        } else {
            assert_eq!(primary(id), AuditorType::Auto, "{id}");
        }
    }
    // Every node the Computer tier keeps is one its checks cover whole.
    for n in h
        .nodes
        .iter()
        .filter(|n| n.primary_auditor == AuditorType::Auto)
    {
        assert!(
            trust_judging::decompose::computer_covers(&n.content, &t.problem, false),
            "{}: {}",
            n.id,
            n.content
        );
    }
    // Every segment is the audited model's own words: an exact span of the trace. A node takes
    // this HDAG from a provider and prepares a session of it.
    h.validate().unwrap();
    h.validate_spans(&t).unwrap();
    decompose::from_provider(&t, &serde_json::to_string(h).unwrap()).unwrap();
    let restricted = trust_judging::session::prepare::restrict(h, |_| true);
    assert_eq!(restricted.hdag.nodes.len(), 14);
    trust_judging::session::prepare::prepare(
        &restricted,
        trust_judging::session::DEFAULT_QUORUM,
        trust_judging::session::prepare::TierWeights::EQUAL,
        0,
        "math",
        &mut rand::rngs::OsRng,
    )
    .expect("a session can be prepared from the LLM HDAG");
    // The paper's contents are reformatted (LaTeX rewritten, step 5 paraphrased), so they
    // were mapped to the closest exact spans, and the user is told.
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("mapped to the closest exact span")),
        "{:?}",
        d.warnings
    );
    let content = |id: &str| h.nodes.iter().find(|n| n.id == id).unwrap().content.clone();
    assert!(content("G1").starts_with("A construction company was building a tunnel."));
    assert!(content("ST1").contains("0.96"), "{}", content("ST1"));
    assert!(content("O4").contains("180"), "{}", content("O4"));
    eprintln!("warnings: {:#?}", d.warnings);
    for (id, _) in PAPER_LEVELS {
        eprintln!("{id:>4}: {}", content(id).replace('\n', " "));
    }
}

#[tokio::test]
async fn garbage_at_any_step_falls_back_to_the_heuristic_builder_naming_the_step() {
    let t = trace();
    let heuristic = decompose::decompose(&t, &Options::default()).unwrap();
    for step in Step::ALL {
        let (url, seen) = stand_in(Script::GarbageAt(step.number())).await;
        let r = ask_endpoint(&client(&url), &t).await;
        let e = r.clone().expect_err("garbage is not a decomposition");
        assert_eq!(e.step(), step, "{e}");
        // The steps after the garbage are not asked.
        assert_eq!(seen.lock().unwrap().len(), usize::from(step.number()));
        let d = llm::or_heuristic(&t, &Options::default(), r).unwrap();
        assert!(d.fell_back);
        assert_eq!(d.hdag, heuristic);
        let w = d.warnings.join("\n");
        assert!(
            w.contains(&format!("step {}", step.number())) && w.contains(step.name()),
            "{w}"
        );
        assert!(w.contains("heuristic"), "{w}");
    }
}

#[tokio::test]
async fn a_10_mb_reply_is_dropped_and_falls_back_naming_the_step() {
    let t = trace();
    let (url, _) = stand_in(Script::HugeAt(2)).await;
    let r = ask_endpoint(&client(&url), &t).await;
    let e = r.clone().unwrap_err();
    assert_eq!(e.step(), Step::Segments, "{e}");
    assert!(e.to_string().contains("larger than"), "{e}");
    assert!(
        llm::or_heuristic(&t, &Options::default(), r)
            .unwrap()
            .fell_back
    );
}

#[tokio::test]
async fn a_dead_endpoint_falls_back() {
    let t = trace();
    let r = ask_endpoint(&client(&dead().await), &t).await;
    let e = r.clone().unwrap_err();
    assert_eq!(e.step(), Step::Levels);
    assert!(e.to_string().contains("no reply"), "{e}");
    let d = llm::or_heuristic(&t, &Options::default(), r).unwrap();
    assert!(d.fell_back);
    assert_eq!(
        d.hdag,
        decompose::decompose(&t, &Options::default()).unwrap()
    );
}

/// Runs the binary with a stand-in in this process.
fn trust_node(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .env_remove("TRUST_LLM_URL")
        .env_remove("TRUST_LLM_MODEL")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn trace_file() -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), TRACE).unwrap();
    f
}

/// Runs the binary off the runtime (the stand-in keeps answering meanwhile).
async fn cli(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        trust_node(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_decompose_llm_prints_the_papers_hdag_and_falls_back_with_a_warning() {
    let f = trace_file();
    let path = f.path().to_str().unwrap();
    let (url, _) = stand_in(Script::Paper).await;
    let (code, out, err) = cli(&[
        "decompose",
        path,
        "--json",
        "--llm",
        "--llm-url",
        &url,
        "--llm-model",
        "stand-in",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let h: Hdag = serde_json::from_str(&out).unwrap();
    assert_eq!(edges(&h), paper_edges());
    assert!(err.contains("mapped to the closest exact span"), "{err}");
    // The paper gives the Computer tier steps that say things in words around their
    // calculations: they go to the LLM tier, their calculations to the Computer tier.
    let moved = rerouted(&h);
    assert!(!moved.is_empty());
    assert!(err.contains("routed to the LLM tier"), "{err}");

    // Garbage at step 3: the heuristic HDAG, and a warning on stderr naming the step.
    let (url, _) = stand_in(Script::GarbageAt(3)).await;
    let (code, out, err) = cli(&[
        "decompose",
        path,
        "--json",
        "--llm",
        "--llm-url",
        &url,
        "--llm-model",
        "m",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    let h: Hdag = serde_json::from_str(&out).unwrap();
    assert_eq!(
        h,
        decompose::decompose(&trace(), &Options::default()).unwrap()
    );
    assert!(
        err.contains("warning") && err.contains("step 3 (extract relationships)"),
        "{err}"
    );

    // A dead endpoint: the same fallback.
    let url = dead().await;
    let (code, _, err) = cli(&[
        "decompose",
        path,
        "--llm",
        "--llm-url",
        &url,
        "--llm-model",
        "m",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("step 1 (identify abstraction levels)"),
        "{err}"
    );

    // No endpoint named: a usage error, not a silent fallback.
    let (code, _, err) = cli(&["decompose", path, "--llm"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--llm-url"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_submit_decompose_llm_sends_the_llm_hdag_as_the_providers() {
    let f = trace_file();
    let path = f.path().to_str().unwrap();
    let (url, _) = stand_in(Script::Paper).await;
    let (api, posted) = node_stand_in().await;
    let home = tempfile::tempdir().unwrap();
    let home = home.path().to_str().unwrap();
    let submit = |url: String| {
        let (api, path, home) = (api.clone(), path.to_string(), home.to_string());
        async move {
            cli(&[
                "submit",
                &path,
                "--decompose",
                "llm",
                "--llm-url",
                &url,
                "--llm-model",
                "m",
                "--api",
                &api,
                "--home",
                &home,
            ])
            .await
        }
    };
    let (code, out, err) = submit(url).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("session"), "{out}");
    let sent = posted.lock().unwrap().pop().expect("a session was posted");
    // The trace goes in the network's JSON form, whatever form the file had.
    let sent_trace = sent["trace"].as_str().expect("a trace is sent");
    assert_eq!(Trace::parse(sent_trace).unwrap(), trace());
    assert_eq!(sent_trace, serde_json::to_string(&trace()).unwrap());
    let h: Hdag = serde_json::from_str(sent["hdag"].as_str().expect("an HDAG is sent")).unwrap();
    assert_eq!(edges(&h), paper_edges());
    h.validate_spans(&trace()).unwrap();

    // Garbage at step 5: no provider HDAG, so the node builds the heuristic one.
    let (url, _) = stand_in(Script::GarbageAt(5)).await;
    let (code, _, err) = submit(url).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("step 5 (refine and construct the HDAG)"),
        "{err}"
    );
    let sent = posted.lock().unwrap().pop().expect("a session was posted");
    assert!(sent["hdag"].is_null(), "{sent}");
}
