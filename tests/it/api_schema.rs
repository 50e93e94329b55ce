//! The API against its own OpenAPI document, by schemathesis (PyPI): a live node of a
//! four-validator network on loopback is sent generated requests, valid and invalid, with
//! and without the operator token, and every answer is checked against the document
//! (status, content type, headers, body schema; no 5xx; invalid input refused; the token
//! not ignored). Settings: `scripts/api/schemathesis.toml`.

use std::process::Command;

use crate::fixtures::network::Network;

/// The schemathesis command (`scripts/test.sh` installs it with pip).
fn schemathesis() -> Command {
    let probe = Command::new("schemathesis").arg("--version").output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "schemathesis is not installed: python3 -m pip install schemathesis==4.32.5 (scripts/test.sh does)"
    );
    Command::new("schemathesis")
}

#[test]
fn the_api_conforms_to_its_openapi_document_under_generated_requests() {
    let net = Network::running(4);
    let api = &net.nodes[0].api;
    let config = format!(
        "{}/../scripts/api/schemathesis.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let out = schemathesis()
        .args(["--config-file", &config, "run"])
        .arg(format!("http://{api}/v1/openapi.json"))
        .args([
            "--header",
            &format!("Authorization: Bearer {}", net.operator_token(0)),
        ])
        .args(["--max-examples", "25", "--workers", "1", "--seed", "7"])
        .args(["--request-timeout", "30", "--wait-for-schema", "30"])
        .env("NO_COLOR", "1")
        // Its cache of failures goes to a scratch directory, not into the work tree.
        .current_dir(&scratch)
        .output()
        .expect("run schemathesis");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "schemathesis found failures:\n{text}");
    // It did test every operation of the document (a run that reached none passes too).
    // (Every documented operation but the event stream, which the settings leave out.)
    assert!(text.contains("Tested: 16"), "{text}");
    assert!(text.contains("passed"), "{text}");
    // Whatever it sent, the node still works and its ledger kept going.
    let h = net.height(0).expect("node 0 answers");
    net.wait_for("another block after the run", |n| {
        n.height(1).is_some_and(|x| x > h)
    });
}
