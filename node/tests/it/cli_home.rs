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
    // The four validators and the two auditor-only homes `testnet init` adds by default.
    assert_eq!(docs[0].genesis.auditors.len(), 6);
    assert!(text(&o).contains(&docs[0].chain_id().to_hex()));
    let mut ports = std::collections::BTreeSet::new();
    for i in 0..6 {
        let home = t.path().join(format!("node{i}"));
        let cfg = config::load_config(&home).unwrap();
        assert_eq!(cfg.network.bootstrap.len(), 5);
        assert!(cfg.network.bootstrap.iter().all(|a| a.contains("/p2p/")));
        for a in [&cfg.network.listen, &cfg.consensus.listen, &cfg.api.listen] {
            assert!(ports.insert(a.clone()), "{a} used twice");
            assert!(a.contains("127.0.0.1"));
        }
        let k = keys::load(&home).unwrap();
        // Nodes 4 and 5 are auditors only: not validators.
        assert_eq!(
            docs[0].validators.contains(&k.account_id()),
            i < 4,
            "node{i}"
        );
    }
    // Never overwrites, and refuses nonsense.
    let again = testnet(t.path(), "4");
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again).contains("refusing to overwrite"));
    let zero = testnet(&t.path().join("x"), "0");
    assert_eq!(zero.status.code(), Some(2));
}

/// `--hosts` (one container per node, as in docker-compose.yml): nodes listen on 0.0.0.0
/// on the same ports and dial each other by name; provider nodes are funded accounts
/// only; `--keep-existing` makes a second run a no-op; empty home folders (fresh volume
/// mounts) are not in the way.
#[test]
fn testnet_init_on_hosts_of_their_own() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().to_str().unwrap();
    std::fs::create_dir_all(t.path().join("node0")).unwrap();
    let args = [
        "testnet",
        "init",
        "--nodes",
        "2",
        "--llm-nodes",
        "1",
        "--provider-nodes",
        "1",
        "--llm-url",
        "http://model:8089/v1",
        "--hosts",
        "v0,v1,llm0,provider",
        "--home",
        dir,
        "--keep-existing",
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("api http://provider:26602"),
        "{}",
        text(&o)
    );
    let names = ["v0", "v1", "llm0", "provider"];
    let homes: Vec<_> = (0..4).map(|i| t.path().join(format!("node{i}"))).collect();
    let ids: Vec<_> = homes
        .iter()
        .map(|h| keys::load(h).unwrap().account_id())
        .collect();
    let doc = config::load_genesis(&homes[0]).unwrap();
    assert_eq!(doc.validators, ids[..2].to_vec());
    assert_eq!(doc.genesis.accounts.len(), 4);
    let auditors: Vec<_> = doc.genesis.auditors.iter().map(|a| a.id).collect();
    assert_eq!(auditors, ids[..3].to_vec(), "the provider is no auditor");
    for (i, h) in homes.iter().enumerate() {
        let cfg = config::load_config(h).unwrap();
        assert_eq!(cfg.moniker, names[i]);
        assert_eq!(cfg.network.listen, "/ip4/0.0.0.0/tcp/26600");
        assert_eq!(cfg.consensus.listen, "/ip4/0.0.0.0/tcp/26601");
        assert_eq!(cfg.api.listen, "0.0.0.0:26602");
        let others: Vec<_> = names.iter().filter(|n| **n != names[i]).collect();
        assert_eq!(cfg.network.bootstrap.len(), 3);
        for (a, n) in cfg.network.bootstrap.iter().zip(&others) {
            assert!(a.starts_with(&format!("/dns4/{n}/tcp/26600/p2p/")), "{a}");
        }
        for (a, n) in cfg.consensus.bootstrap.iter().zip(&others) {
            assert!(a.starts_with(&format!("/dns4/{n}/tcp/26601/p2p/")), "{a}");
        }
        assert_eq!(
            cfg.llm.url.is_some(),
            i == 2,
            "only the LLM node judges by LLM"
        );
    }
    let genesis = std::fs::read(homes[0].join(config::GENESIS_FILE)).unwrap();
    let again = run(&args);
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("nothing changed"));
    assert_eq!(keys::load(&homes[3]).unwrap().account_id(), ids[3]);
    assert_eq!(
        std::fs::read(homes[0].join(config::GENESIS_FILE)).unwrap(),
        genesis
    );
    // A partly made home is not taken for a finished one.
    std::fs::remove_file(homes[1].join(config::CONFIG_FILE)).unwrap();
    let partial = run(&args);
    assert_eq!(partial.status.code(), Some(1), "{}", text(&partial));
    assert!(text(&partial).contains("refusing to overwrite"));
    assert_eq!(keys::load(&homes[1]).unwrap().account_id(), ids[1]);
}

#[test]
fn testnet_init_refuses_bad_hosts_and_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("net");
    for (hosts, why) in [
        ("a,b,c", "names 3 hosts but there are 2 nodes"),
        ("a,-b", "is not a host name"),
        ("a,b/c", "is not a host name"),
        ("a,a", "twice"),
    ] {
        let o = run(&[
            "testnet",
            "init",
            "--nodes",
            "2",
            "--hosts",
            hosts,
            "--home",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{hosts}: {}", text(&o));
        assert!(text(&o).contains(why), "{hosts}: {}", text(&o));
        assert!(!dir.exists(), "{hosts}: nothing is written");
    }
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

/// A `--home` with no config.toml (mistyped, or the default `~/.trust-node` never made)
/// is said to be no node home, by every command that reads a home, instead of falling
/// back to the defaults and blaming a node at the default port; nothing is created there.
#[test]
fn a_home_without_a_config_is_no_node_home() {
    let t = tempfile::tempdir().unwrap();
    let o = testnet(t.path(), "1");
    assert!(o.status.success(), "{}", text(&o));
    let typo = t.path().join("nod0");
    let typo_s = typo.to_str().unwrap();
    let real = t.path().join("node0");
    let sid = "ab".repeat(32);
    let no_home = |at: &Path| {
        format!(
            "no node home at {} (no config.toml): pass --home DIR of a node made by `trust-node init`/`testnet init`",
            at.display()
        )
    };
    let as_user = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_trust-node"))
            .args(args)
            .env_remove("TRUST_HOME")
            .env_remove("TRUST_API")
            .env("HOME", t.path())
            .output()
            .expect("run trust-node")
    };
    for args in [
        vec!["status", "--home", typo_s],
        vec!["query", &sid, "--home", typo_s],
        vec!["watch", "--home", typo_s],
        vec!["proof", "export", &sid, "-o", "x.proof", "--home", typo_s],
        vec!["auditor", "status", "--home", typo_s],
        vec!["auditor", "withdraw", "--home", typo_s],
        vec!["run", "--home", typo_s],
        vec!["ledger", "verify", "--home", typo_s],
        vec!["keys", "show", "--home", typo_s],
        vec!["keys", "show", "--api-token", "--home", typo_s],
        vec!["keys", "rotate-api-token", "--home", typo_s],
        vec!["config", "migrate", "--home", typo_s],
    ] {
        let o = as_user(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(&no_home(&typo)), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("refused"), "{args:?}: {}", text(&o));
    }
    // Commands that can reach a node without a home say how.
    let o = as_user(&["status", "--home", typo_s]);
    assert!(text(&o).contains(", or --api HOST:PORT"), "{}", text(&o));
    // The default home, `~/.trust-node`, is said the same way.
    let o = as_user(&["status"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&no_home(&t.path().join(".trust-node"))),
        "{}",
        text(&o)
    );
    assert!(!typo.exists(), "a command made the mistyped home");
    // `query --verify` needs a home for its genesis, or a genesis file.
    let o = as_user(&["query", &sid, "--verify", "--api", "127.0.0.1:1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--genesis FILE"), "{}", text(&o));
    // The real home is one.
    let o = as_user(&["ledger", "verify", "--home", real.to_str().unwrap()]);
    assert!(!text(&o).contains("no node home"), "{}", text(&o));
}

/// `query --verify --genesis FILE` needs no home: the genesis file is read (a file that is
/// none is refused before any node is asked), then the node named by `--api` is asked.
#[test]
fn query_verify_takes_a_genesis_file_instead_of_a_home() {
    let t = tempfile::tempdir().unwrap();
    let o = testnet(t.path(), "1");
    assert!(o.status.success(), "{}", text(&o));
    let genesis = t.path().join("node0").join("genesis.json");
    let sid = "ab".repeat(32);
    let o = run(&[
        "query",
        &sid,
        "--verify",
        "--genesis",
        genesis.to_str().unwrap(),
        "--api",
        "127.0.0.1:1",
        "--home",
        t.path().join("none").to_str().unwrap(),
    ]);
    // Past the genesis and the home: the node is asked (and is not there).
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("cannot reach the node API at 127.0.0.1:1"),
        "{}",
        text(&o)
    );
    let not_genesis = t.path().join("node0").join("config.toml");
    let o = run(&[
        "query",
        &sid,
        "--verify",
        "--genesis",
        not_genesis.to_str().unwrap(),
        "--api",
        "127.0.0.1:1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("the genesis file"), "{}", text(&o));
    // --genesis is for --verify only.
    let o = run(&[
        "query",
        &sid,
        "--genesis",
        genesis.to_str().unwrap(),
        "--api",
        "127.0.0.1:1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A flat `config.toml` of an earlier release still works, with a warning that names the
/// file and `config migrate`; `config migrate --print` shows the nested file,
/// `config migrate` rewrites it (keeping the flat one as config.toml.bak), and a second run
/// changes nothing. A file mixing the layouts is refused, naming where each flat key goes.
#[test]
fn a_flat_config_is_read_with_a_warning_and_config_migrate_converts_it() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("h");
    let h = home.to_str().unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let flat =
        "moniker = \"old\"\napi_listen = \"127.0.0.1:1\"\nblock_time_ms = 300\nhuman = true\n";
    std::fs::write(home.join(config::CONFIG_FILE), flat).unwrap();
    // At the default log level, whatever the environment says.
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_trust-node"))
            .args(args)
            .env_remove("TRUST_HOME")
            .env_remove("RUST_LOG")
            .output()
            .expect("run trust-node")
    };
    // `status` reads the API address from the flat file (and finds nobody there).
    let o = run(&["status", "--home", h]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert_eq!(err.matches("WARN").count(), 1, "{err}");
    for part in [
        &format!("{h}/config.toml is in the flat config.toml layout, which is deprecated"),
        &format!("`trust-node config migrate --home {h}`"),
    ] {
        assert!(err.contains(part.as_str()), "{part} not in {err}");
    }
    let o = run(&["config", "migrate", "--home", h, "--print"]);
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout).to_string();
    for part in [
        "moniker = \"old\"\n",
        "[consensus]\n",
        "block_time = \"300ms\"\n",
        "[api]\nlisten = \"127.0.0.1:1\"\n",
        "[auditor]\nhuman = true\n",
    ] {
        assert!(shown.contains(part), "{part:?} not in {shown}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(config::CONFIG_FILE)).unwrap(),
        flat,
        "--print changes nothing"
    );
    let o = run(&["config", "migrate", "--home", h]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("config.toml.bak"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(home.join("config.toml.bak")).unwrap(),
        flat
    );
    let loaded = config::load_config_with_layout(&home).unwrap();
    assert_eq!(loaded.layout, config::Layout::Nested);
    assert_eq!(
        loaded.config.consensus.block_time,
        std::time::Duration::from_millis(300)
    );
    assert_eq!(
        format!("{}\n", shown.trim_end()),
        std::fs::read_to_string(home.join(config::CONFIG_FILE)).unwrap()
    );
    let o = run(&["config", "migrate", "--home", h]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("already in the nested layout"),
        "{}",
        text(&o)
    );
    let o = run(&["status", "--home", h]);
    assert!(!text(&o).contains("WARN"), "{}", text(&o));

    std::fs::write(
        home.join(config::CONFIG_FILE),
        "api_listen = \"127.0.0.1:1\"\n[consensus]\nblock_time = \"1s\"\n",
    )
    .unwrap();
    let o = run(&["status", "--home", h]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("`api_listen` is `listen` in [api]"),
        "{}",
        text(&o)
    );
}

/// How a block appended by [`append_chain`] is wrong, if at all.
#[derive(Clone, Copy, PartialEq)]
enum Lie {
    None,
    /// Its header claims a state root the transactions do not lead to.
    StateRoot,
    /// Its seed proof is another validator's (for the same input), under our name.
    SeedProof,
}

/// Builds from genesis one block per entry of `blocks`, each with one transfer by the
/// node's account and wrong as the entry says, and appends to `home`'s ledger those above
/// its tip (the ones below are built again exactly as they were stored).
fn append_chain(home: &Path, doc: &GenesisDoc, blocks: &[Lie]) {
    let me = keys::load(home).unwrap();
    let other = doc.validators[1];
    let stranger = trust_protocol::Keypair::from_label("another validator");
    let mut contract = trust_contracts::Contract::new(&doc.genesis)
        .unwrap()
        .with_chain(doc.chain_id());
    let mut tip = Tip::genesis(doc.chain_id());
    let ledger = Ledger::open(&config::ledger_dir(home)).unwrap();
    let stored_up_to = ledger.tip().unwrap().map_or(0, |(h, _)| h);
    for lie in blocks {
        let tx = Signed::sign(
            &me.account,
            &doc.chain_id(),
            Tx {
                nonce: tip.height,
                call: Call::Transfer {
                    to: other,
                    amount: 5,
                },
            },
        );
        let (mut block, done, dropped) =
            build_block(&contract, &tip, &me.account, 0, std::slice::from_ref(&tx)).unwrap();
        assert!(dropped.is_empty());
        match lie {
            Lie::None => {}
            Lie::StateRoot => block.header.state_root = Hash::sha256(b"not the state"),
            Lie::SeedProof => {
                block.header.vrf = trust_protocol::block::prove_seed(
                    &stranger,
                    &tip.chain,
                    tip.height + 1,
                    &tip.seed,
                )
                .unwrap()
            }
        }
        if block.header.height > stored_up_to {
            let stored = StoredBlock {
                block: block.clone(),
                certificate: vec![],
            };
            ledger.append(&stored, &[]).unwrap();
        } else {
            let stored = ledger.block(block.header.height).unwrap().unwrap();
            assert_eq!(stored.block, block, "built again as stored");
        }
        contract = done.contract;
        tip = tip.after(&block);
    }
}

#[test]
fn ledger_verify_replays_the_chain_and_names_a_bad_block() {
    let t = tempfile::tempdir().unwrap();
    assert!(testnet(t.path(), "2").status.success());
    let home = t.path().join("node0");
    let home_arg = home.to_str().unwrap();
    let doc = config::load_genesis(&home).unwrap();
    append_chain(&home, &doc, &[Lie::None, Lie::None]);
    let o = run(&["ledger", "verify", "--home", home_arg]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("2 blocks, 2 transactions"),
        "{}",
        text(&o)
    );

    let empty = t.path().join("node1");
    let o = run(&["ledger", "verify", "--home", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no ledger"), "{}", text(&o));

    // A third block whose state root lies, on one ledger; one whose seed proof is another
    // validator's, on another: each is named.
    append_chain(&home, &doc, &[Lie::None, Lie::None, Lie::StateRoot]);
    let o = run(&["ledger", "verify", "--home", home_arg]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains('3'), "{}", text(&o));
    assert!(text(&o).contains("state root"), "{}", text(&o));
    append_chain(&empty, &doc, &[Lie::None, Lie::None, Lie::SeedProof]);
    let o = run(&["ledger", "verify", "--home", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains('3'), "{}", text(&o));
    assert!(text(&o).contains("seed proof"), "{}", text(&o));
}
