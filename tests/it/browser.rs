//! The audit form in a real headless Chromium, on a real network of every tier: four
//! validators (Computer seats), three LLM nodes judging through a real llama.cpp server
//! (SmolLM2-135M, which fails its calibration, so its seats abstain and their segments
//! escalate) and one Human node (`testnet init --human-nodes 1`), all `trust-node run`
//! processes on loopback. A person (the browser) logs in with the Human node's
//! operator token, opens the segment its seat was drawn for, votes Invalid, and follows
//! the seat's progress until the chain's verdict on that segment counts the vote. The
//! seats nobody answers (the escalations that reach the Human tier) abstain at their
//! deadline and the session still decides. Every page loads without a console error;
//! screenshots go to `<target tmp>/screenshots/`.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::fixtures::{browser::Browser, example, llm::model_server, network::Network, wait_until};

/// Longest wait for one condition: a session with an escalation round whose Human seats
/// nobody answers runs its whole commit window.
const DEADLINE: Duration = Duration::from_secs(300);
/// LLM nodes: the LLM tier's three seats per segment.
const LLM_NODES: u16 = 3;

fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
}

/// Reloads `url` until `cond` holds on the page's text, failing at [`DEADLINE`].
fn poll_page(
    browser: &mut Browser,
    net: &Network,
    url: &str,
    what: &str,
    mut cond: impl FnMut(&mut Browser) -> bool,
) {
    wait_until(
        what,
        DEADLINE,
        Duration::from_millis(500),
        || {
            browser.goto(url);
            cond(browser)
        },
        || net.logs_tail(),
    );
}

#[test]
fn a_person_logs_in_votes_invalid_on_the_audit_form_and_sees_the_vote_counted() {
    let started = Instant::now();
    // First, so that a missing Chromium fails the test at once and says how to get one.
    let mut browser = Browser::launch();
    let server = model_server(LLM_NODES.into())
        .expect("a real llama.cpp server for the LLM seats (scripts/llm/serve.sh)");
    let mut net = Network::with_tiers(
        4,
        Some((LLM_NODES, &server.url, "smollm2-135m-instruct")),
        1,
        &["--commit-window", "100"],
    )
    .block_time(300)
    .deadline(DEADLINE);
    // The Human node comes after the validators and the LLM nodes.
    let human = 4 + usize::from(LLM_NODES);
    let llm_nodes = 4..human;
    net.start_all();
    net.wait_running();
    let base = format!("http://{}", net.nodes[human].api);
    let shots = screenshots();

    // Not logged in: the login form only.
    browser.goto(&format!("{base}/audit"));
    let text = browser.text();
    assert!(text.contains("Operator token"), "{text}");
    assert!(!text.contains("Waiting for you"), "{text}");
    // A wrong token is refused.
    browser.eval_and_load(
        "document.getElementById('token').value = 'not-the-token'; \
         document.querySelector('main form button[type=submit]').click()",
    );
    let text = browser.text();
    assert!(
        text.contains("That is not this node's operator token"),
        "{text}"
    );
    // The refusal is a 401, which the browser logs; nothing else may be logged.
    assert!(
        browser.console_errors.len() == 1
            && browser.console_errors[0].contains("401")
            && browser.console_errors[0].contains("/audit/login"),
        "{:#?}",
        browser.console_errors
    );
    browser.console_errors.clear();
    // The node's own token logs in.
    let token = net.operator_token(human);
    browser.eval_and_load(&format!(
        "document.getElementById('token').value = '{token}'; \
         document.querySelector('main form button[type=submit]').click()"
    ));
    assert_eq!(browser.url(), format!("{base}/audit"));
    let text = browser.text();
    assert!(text.contains("Audit queue"), "{text}");

    // A trace goes to the network through a validator; the steps its Computer and LLM
    // seats abstain on escalate to the Human tier.
    let trace = example("traces/fraction-correct.txt");
    let r = net
        .post_json(0, "/v1/sessions", &json!({ "trace": trace }))
        .expect("node 0 opens the session");
    let session = r["session"].as_str().expect("session id").to_string();
    let submitted = Instant::now();

    // The Human node's seat appears in the queue.
    let mut seat_url = String::new();
    poll_page(
        &mut browser,
        &net,
        &format!("{base}/audit"),
        "a seat in the audit queue",
        |b| {
            let href = b.eval(&format!(
                "(document.querySelector('a[href^=\"/audit/{session}/\"]') || {{}}).href || ''"
            ));
            seat_url = href.as_str().unwrap_or_default().to_string();
            !seat_url.is_empty()
        },
    );
    let queued = submitted.elapsed();
    let text = browser.text();
    assert!(text.contains("blocks (about"), "deadline shown: {text}");
    browser.screenshot(&shots.join("audit-queue.png"));
    let segment: usize = seat_url
        .rsplit('/')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("segment index in the link");

    // The form: the paper's four parts and criteria.
    browser.goto(&seat_url);
    let text = browser.text();
    for part in [
        "Prompt context",
        "Verified dependencies",
        "Current reasoning",
        "Implications",
        "Logical consistency",
        "Mathematical accuracy",
        "Completeness",
        "Clarity",
        "Unsure",
    ] {
        assert!(text.contains(part), "{part} missing from the form: {text}");
    }
    browser.eval(
        "document.querySelector('input[name=vote][value=invalid]').checked = true; \
         document.getElementById('note').value = 'Judged in a browser test.'; true",
    );
    browser.screenshot(&shots.join("audit-form.png"));
    browser.eval_and_load("document.querySelector('#judgement button[type=submit]').click()");
    assert_eq!(browser.url(), seat_url, "back on the seat's page");
    let text = browser.text();
    assert!(text.contains("Invalid at height"), "{text}");
    assert!(text.contains("Judged in a browser test."), "{text}");

    // Committed, revealed, and counted in the segment's verdict, as the chain says.
    poll_page(
        &mut browser,
        &net,
        &seat_url,
        "the segment's verdict to count the person's vote",
        |b| {
            let v = b.eval("(document.getElementById('verdict') || {}).textContent || ''");
            v.as_str() == Some("Invalid")
        },
    );
    let decided = submitted.elapsed();
    let text = browser.text();
    assert!(text.contains("1 invalid"), "{text}");
    assert!(text.contains("Invalid (counted)"), "{text}");
    browser.screenshot(&shots.join("audit-progress.png"));
    let outcome: Value = net
        .get(0, &format!("/v1/sessions/{session}"))
        .expect("session");
    assert_eq!(outcome["status"], "decided", "{outcome}");
    let g = &outcome["outcome"]["segments"][segment];
    assert_eq!(g["verdict"], "invalid", "{outcome}");
    assert_eq!(g["tier"], "human", "{outcome}");
    assert_eq!(g["votes"]["invalid"], 1, "{outcome}");

    // The seats nobody answered abstained at their deadline, and the session decided.
    browser.goto(&format!("{base}/audit"));
    let text = browser.text();
    let expired = text.matches("abstained at the deadline").count();
    // Every Human seat but the one the person judged.
    let unjudged = outcome["outcome"]["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter(|s| s["tier"] == "human")
        .count()
        - 1;
    assert_eq!(
        expired, unjudged,
        "every Human seat nobody judged abstained: {text}\n{outcome}"
    );
    if unjudged > 0 {
        let late = browser.eval(
            "[...document.querySelectorAll('a')].filter(a => a.textContent === 'Progress' \
             && a.closest('tr').textContent.includes('abstained')).map(a => a.href)[0] || ''",
        );
        browser.goto(late.as_str().expect("a link"));
        let text = browser.text();
        assert!(
            text.contains("no human judgement before the deadline"),
            "{text}"
        );
    }
    browser.screenshot(&shots.join("audit-queue-after.png"));
    assert_eq!(net.counter(human, "trust_human_judged_total"), 1);
    assert_eq!(
        net.counter(human, "trust_human_expired_total"),
        u64::try_from(unjudged).unwrap()
    );

    // The LLM seats took part: drawn, committed and revealed (abstentions, with this
    // model), and the session still decided.
    let llm_committed: u64 = llm_nodes
        .clone()
        .map(|i| net.counter(i, "trust_seat_votes_committed_total"))
        .sum();
    let llm_abstained: u64 = llm_nodes
        .map(|i| net.counter(i, "trust_llm_abstained_total"))
        .sum();
    assert!(
        llm_committed > 0 && llm_abstained > 0,
        "no LLM seat voted in the session: committed {llm_committed}, abstained {llm_abstained}"
    );

    // Every read-only page of this session, its deciding block and the Human auditor
    // renders as HTML in the browser; the outcome and auditor pages are screenshotted.
    let me = net.keys(human).account_id();
    let height = outcome["outcome"]["decided_at"]
        .as_u64()
        .expect("the deciding block's height");
    let session_id: trust_protocol::Hash = session.parse().expect("session id");
    for path in trust_node::web::page_paths(height, &session_id, &me) {
        browser.goto(&format!("{base}{path}"));
        let text = browser.text();
        assert!(
            text.contains("TRUST") && !text.contains("\"code\""),
            "{path} is not a page: {text}"
        );
        if path.starts_with("/sessions/") {
            assert!(text.contains("Invalid"), "{path}: {text}");
            browser.screenshot(&shots.join("outcome.png"));
        } else if path.starts_with("/auditors/") {
            assert!(text.contains("Human"), "{path}: {text}");
            browser.screenshot(&shots.join("auditor.png"));
        }
    }

    assert!(
        browser.console_errors.is_empty(),
        "console errors: {:#?}",
        browser.console_errors
    );
    eprintln!(
        "browser test: seat queued {:.1}s after submit, segment decided {:.1}s after submit, {} Human seats nobody judged abstained, {:.1}s in all; screenshots in {}",
        queued.as_secs_f64(),
        decided.as_secs_f64(),
        unjudged,
        started.elapsed().as_secs_f64(),
        shots.display()
    );
}
