//! The command line as a new user meets it, against a real node: the API address in the
//! form `testnet init` prints it, a second `run` on a home a node holds, and what an idle
//! node writes to its log.

use std::process::{Command, Output};

use crate::fixtures::{bin, network::Network};

/// `trust-node ARGS` with `env` set and neither `TRUST_HOME` nor `TRUST_API` inherited.
fn trust_node(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("TRUST_HOME")
        .env_remove("TRUST_API");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run trust-node");
    println!(
        "$ trust-node {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `--api` and `TRUST_API` take the address as `testnet init` prints it
/// (`api http://127.0.0.1:PORT`), with or without a trailing slash, as well as
/// `HOST:PORT`; any other form is refused before anything is asked, naming the forms.
#[test]
fn the_api_address_reads_as_testnet_init_prints_it() {
    let net = Network::running(1);
    let api = net.api(0);
    let url = format!("http://{api}");
    let slash = format!("http://{api}/");
    for given in [&api, &url, &slash] {
        let out = trust_node(&["status", "--api", given, "--json"], &[]);
        assert!(out.status.success(), "--api {given}: {}", stderr(&out));
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
        assert!(s["height"].as_u64().unwrap() >= 1, "{s}");
    }
    let out = trust_node(&["status", "--json"], &[("TRUST_API", &slash)]);
    assert!(out.status.success(), "TRUST_API={slash}: {}", stderr(&out));
    let session = "ab".repeat(32);
    // `query` reaches the node too: it answers that it knows no such session.
    let out = trust_node(&["query", &session, "--api", &url], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no session"), "{}", stderr(&out));
    for bad in [
        format!("https://{api}"),
        format!("http://{api}/v1/status"),
        "garbage".to_string(),
    ] {
        let out = trust_node(&["status", "--api", &bad], &[]);
        assert_eq!(out.status.code(), Some(2), "--api {bad}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("give HOST:PORT or http://HOST:PORT"),
            "--api {bad}: {}",
            stderr(&out)
        );
        let out = trust_node(&["status"], &[("TRUST_API", &bad)]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "TRUST_API={bad}: {}",
            stderr(&out)
        );
    }
}

/// A second `trust-node run` on the home a running node holds says the home is in use and
/// exits non-zero, and the node that holds it goes on answering and deciding blocks.
#[test]
fn a_second_run_on_a_home_in_use_is_refused_and_the_first_goes_on() {
    let net = Network::running(1);
    let home = net.nodes[0].home.to_str().expect("utf-8 home").to_string();
    // Other ports than the first node's: what stops it must be the home, not a port.
    let out = trust_node(
        &[
            "run",
            "--home",
            &home,
            "--api-listen",
            "127.0.0.1:0",
            "--p2p-listen",
            "/ip4/127.0.0.1/tcp/0",
            "--consensus-listen",
            "/ip4/127.0.0.1/tcp/0",
        ],
        &[],
    );
    assert!(!out.status.success(), "a second node ran on {home}");
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "the home {home} is in use by another trust-node process (its database is locked); stop it first"
        )),
        "{said}"
    );
    assert!(!said.contains("could not acquire lock"), "{said}");
    // `ledger verify` cannot open it either, and says why the same way.
    let out = trust_node(&["ledger", "verify", "--home", &home], &[]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is in use by another trust-node process"));
    // The first node still answers, and still decides blocks.
    let h = net.height(0).expect("the first node answers");
    net.wait_height(0, h + 2);
}

/// An idle node at INFO writes no line per block: over many short blocks its log grows by
/// far fewer INFO lines than blocks (a summary comes once a minute); a block that carries
/// a transaction still has its INFO line. The node logs with its own default filter, as
/// an operator's does.
#[test]
fn an_idle_node_logs_no_info_line_per_block() {
    let mut net = Network::new(1).block_time(40);
    net.set_log_filter(0, None);
    net.start(0);
    net.wait_height(0, 3);
    let info_lines = |net: &Network| net.log(0).lines().filter(|l| l.contains(" INFO ")).count();
    let (h0, before) = (net.height(0).unwrap(), info_lines(&net));
    let blocks = 150;
    net.wait_height(0, h0 + blocks);
    let (h1, after) = (net.height(0).unwrap(), info_lines(&net));
    let idle = after - before;
    let per_block = idle as f64 / (h1 - h0) as f64;
    assert!(
        idle * 20 <= usize::try_from(h1 - h0).unwrap(),
        "{idle} INFO lines over {} idle blocks ({per_block:.2} a block):\n{}",
        h1 - h0,
        net.logs_tail()
    );
    // A block with a transaction is worth its line.
    let to = net.keys(0);
    let tx = net.transfer(0, 0, &to, 1);
    net.send_tx(0, &tx).expect("transfer admitted");
    net.wait_for("the transfer's block to be logged at INFO", |n| {
        n.log(0)
            .lines()
            .any(|l| l.contains(" INFO ") && l.contains("block committed") && l.contains("txs=1"))
    });
}
