//! `init`, `testnet init` and `ledger verify`, run as the real binary.

use std::{
    path::Path,
    process::{Command, Output},
};

use trust_node::{
    chain::{Tip, build_block},
    config::{self, GenesisDoc},
    keys,
    ledger::{Ledger, StoredBlock},
};
use trust_protocol::{
    Hash, Signed,
    tx::{Call, Tx},
};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .env_remove("TRUST_HOME")
        .output()
        .expect("run trust-node")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn testnet(dir: &Path, n: &str) -> Output {
    run(&[
        "testnet",
        "init",
        "--nodes",
        n,
        "--home",
        dir.to_str().unwrap(),
    ])
}

#[test]
fn testnet_init_makes_consistent_homes() {
    let t = tempfile::tempdir().unwrap();
    let o = testnet(t.path(), "4");
    assert!(o.status.success(), "{}", text(&o));
    let docs: Vec<GenesisDoc> = (0..4)
        .map(|i| config::load_genesis(&t.path().join(format!("node{i}"))).unwrap())
        .collect();
    assert!(docs.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(docs[0].validators.len(), 4);
    assert_eq!(docs[0].genesis.auditors.len(), 4);
    assert!(text(&o).contains(&docs[0].chain_id().to_hex()));
    let mut ports = std::collections::BTreeSet::new();
    for i in 0..4 {
        let home = t.path().join(format!("node{i}"));
        let cfg = config::load_config(&home).unwrap();
        assert_eq!(cfg.bootstrap.len(), 3);
        assert!(cfg.bootstrap.iter().all(|a| a.contains("/p2p/")));
        for a in [&cfg.p2p_listen, &cfg.consensus_listen, &cfg.api_listen] {
            assert!(ports.insert(a.clone()), "{a} used twice");
            assert!(a.contains("127.0.0.1"));
        }
        let k = keys::load(&home).unwrap();
        assert_eq!(docs[0].validators[i], k.account_id());
    }
    // Never overwrites, and refuses nonsense.
    let again = testnet(t.path(), "4");
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again).contains("refusing to overwrite"));
    let zero = testnet(&t.path().join("x"), "0");
    assert_eq!(zero.status.code(), Some(2));
}

#[test]
fn init_creates_keys_and_config_once() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("h");
    let o = run(&[
        "init",
        "--home",
        home.to_str().unwrap(),
        "--moniker",
        "alice",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(config::load_config(&home).unwrap().moniker, "alice");
    let k = keys::load(&home).unwrap();
    assert!(text(&o).contains(&k.account_id().to_string()));
    let again = run(&["init", "--home", home.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(keys::load(&home).unwrap().account_id(), k.account_id());
}

#[test]
fn ledger_verify_replays_the_chain_and_names_a_bad_block() {
    let t = tempfile::tempdir().unwrap();
    assert!(testnet(t.path(), "2").status.success());
    let home = t.path().join("node0");
    let home_arg = home.to_str().unwrap();
    let doc = config::load_genesis(&home).unwrap();
    let me = keys::load(&home).unwrap();
    let other = doc.validators[1];
    let mut contract = trust_contracts::Contract::new(&doc.genesis).unwrap();
    let mut tip = Tip {
        chain: doc.chain_id(),
        height: 0,
        hash: Hash::ZERO,
    };
    let mut append = |lie: bool| {
        let ledger = Ledger::open(&config::ledger_dir(&home)).unwrap();
        let tx = Signed::sign(
            &me.account,
            Tx {
                nonce: tip.height,
                call: Call::Transfer {
                    to: other,
                    amount: 5,
                },
            },
        );
        let (mut block, done, dropped) =
            build_block(&contract, &tip, me.account_id(), std::slice::from_ref(&tx));
        assert!(dropped.is_empty());
        if lie {
            block.header.state_root = Hash::sha256(b"not the state");
        }
        let stored = StoredBlock {
            block: block.clone(),
            certificate: vec![],
        };
        ledger.append(&stored, &[]).unwrap();
        contract = done.contract;
        tip = tip.after(&block);
    };
    append(false);
    append(false);
    let o = run(&["ledger", "verify", "--home", home_arg]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("2 blocks, 2 transactions"),
        "{}",
        text(&o)
    );
    append(true);
    let o = run(&["ledger", "verify", "--home", home_arg]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains('3'), "{}", text(&o));
    assert!(text(&o).contains("state root"), "{}", text(&o));

    let empty = t.path().join("node1");
    let o = run(&["ledger", "verify", "--home", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no ledger"), "{}", text(&o));
}
