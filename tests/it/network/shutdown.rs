//! A node told to stop (SIGTERM) stops in order: intake first, then its duties, then
//! consensus and the mempool, and the ledger is flushed last; it exits 0, its ledger
//! verifies and holds every block it announced, and it starts again from there.

use crate::fixtures::network::Network;

/// The line numbers of the log lines that contain every one of `parts`.
fn lines_with(log: &str, parts: &[&str]) -> Vec<usize> {
    log.lines()
        .enumerate()
        .filter(|(_, l)| parts.iter().all(|p| l.contains(p)))
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn sigterm_stops_intake_first_flushes_the_ledger_last_and_exits_zero() {
    let mut net = Network::running(1);
    // A transfer in a block, so the ledger holds more than empty blocks.
    let to = net.keys(0);
    let tx = net.transfer(0, 0, &to, 5);
    let id = tx.id().to_string();
    net.send_tx(0, &tx).expect("admitted");
    net.wait_for("the transfer to be included", |n| {
        n.get(0, &format!("/v1/tx/{id}"))
            .is_ok_and(|v| v["status"] == "included")
    });
    let announced = net.height(0).expect("status answers");

    let status = net.terminate(0);
    let log = net.log(0);
    assert!(status.success(), "exit {status:?} after SIGTERM\n{log}");

    // The stages stop in order, and the ledger is flushed after the last of them.
    let stage = |name: &str| {
        let at = lines_with(
            &log,
            &["shutdown: stopping stage", &format!("stage=\"{name}\"")],
        );
        assert_eq!(at.len(), 1, "stage {name} stopped once:\n{log}");
        at[0]
    };
    let order = [
        stage("intake"),
        stage("duties"),
        stage("consensus"),
        stage("mempool"),
    ];
    assert!(order.is_sorted(), "stages out of order {order:?}:\n{log}");
    let api = lines_with(&log, &["shutdown: task stopped", "task=\"api\""]);
    let consensus = lines_with(&log, &["shutdown: task stopped", "task=\"consensus\""]);
    let flushed = lines_with(&log, &["shutdown: ledger flushed"]);
    assert_eq!(
        (api.len(), consensus.len(), flushed.len()),
        (1, 1, 1),
        "{log}"
    );
    assert!(
        api[0] < consensus[0] && consensus[0] < flushed[0],
        "api, then consensus, then the ledger:\n{log}"
    );
    assert!(
        lines_with(&log, &["did not stop in time"]).is_empty(),
        "every task stopped when asked:\n{log}"
    );

    // Every announced block is on disk and replays.
    let (ok, out) = net.verify_ledger(0);
    assert!(ok, "{out}");
    let blocks: u64 = out
        .split("ledger ok: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no block count in {out:?}"));
    assert!(
        blocks >= announced,
        "{blocks} blocks on disk, {announced} announced"
    );

    // It starts again from its ledger and goes on.
    net.start(0);
    net.wait_height(0, blocks + 2);
    assert_eq!(
        net.get(0, &format!("/v1/tx/{id}")).unwrap()["status"],
        "included"
    );
}
