//! Writes the seed corpora under `corpus/<target>/`: real inputs made by the crates' own
//! constructors (signed transactions of every kind, a block, a stored block, proposal
//! streams, sync messages, a prepared session's segment documents, ciphertexts and sealed
//! keys, decomposed HDAGs of the example traces, Computer steps with their premises, and
//! config files). Built with the fuzz targets; run by `scripts/fuzz.sh --seeds`.
//!
//! Usage: `make_seeds <repo root>`.

use std::{
    fs,
    path::{Path, PathBuf},
};

use bytes::Bytes;
// The fuzz build instruments every binary for coverage; libFuzzer's runtime defines the hooks.
use libfuzzer_sys as _;
use malachitebft_app::{
    streaming::{StreamId, StreamMessage},
    types::codec::Codec,
};
use malachitebft_core_types::Round;
use malachitebft_engine::util::streaming::StreamContent;
use rand::SeedableRng;
use trust_node::{
    audit::provider::prepare::{self, TierWeights},
    config::{NodeConfig, parse_config},
    consensus::{
        codec::{TrustCodec, WireCertificate, WireCommitSignature, encode_borsh},
        context::{Address, BlockId, ConsensusSignature, Height, PartInit, ProposalPart},
        proposals::stream_parts,
    },
    decompose::{self, Options},
    ledger::StoredBlock,
    net::sync,
};
use trust_protocol::{
    Hash, Keypair, Salt, SealingPublicKey, Signed, Vote,
    block::{Block, genesis_seed, prove_seed},
    encoding,
    hdag::AuditorType,
    seal::{self, SealingSecret, SegmentDoc},
    trace::Trace,
    tx::{Call, Difficulty, QuorumParams, SeatKey, Tier, Tx},
    units::Ppm,
};

// The fixed keys the targets use (see segment_docs.rs).
const KEY: [u8; 32] = [0x42; 32];
const NONCE: [u8; 24] = [0x24; 24];
const SEAT_SECRET: [u8; 32] = [0x11; 32];
const CONTEXT: &[u8] = b"session|segment|seat";

struct Out {
    dir: PathBuf,
}

impl Out {
    fn target(root: &Path, name: &str) -> Out {
        let dir = root.join("fuzz").join("corpus").join(name);
        fs::create_dir_all(&dir).expect("create corpus dir");
        Out { dir }
    }

    fn put(&self, name: &str, bytes: &[u8]) {
        fs::write(self.dir.join(name), bytes).expect("write seed");
    }

    /// For targets whose first byte picks the decoder.
    fn put_tagged(&self, name: &str, tag: u8, bytes: &[u8]) {
        let mut v = vec![tag];
        v.extend_from_slice(bytes);
        self.put(name, &v);
    }
}

fn traces(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(root.join("examples/traces"))
        .expect("examples/traces")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        out.push((name, fs::read_to_string(&p).expect("read trace")));
    }
    out
}

fn signed_txs() -> Vec<(&'static str, Vec<u8>)> {
    let alice = Keypair::from_label("alice");
    let bob = Keypair::from_label("bob").public();
    let session = Hash::of_parts("seed", &[b"session"]);
    let sealed = seal::seal_key(
        &SealingSecret::from_bytes(SEAT_SECRET).public(),
        &KEY,
        [0x33; 32],
        CONTEXT,
    )
    .expect("seals");
    let calls: Vec<(&'static str, Call)> = vec![
        (
            "transfer",
            Call::Transfer {
                to: bob,
                amount: 1_000,
            },
        ),
        (
            "register",
            Call::RegisterAuditor {
                tier: Tier::Computer,
                expertise: vec!["arithmetic".into(), "algebra".into()],
                sealing_key: SealingPublicKey([5; 32]),
                stake: 500,
            },
        ),
        ("bond", Call::Bond { amount: 500 }),
        ("unbond", Call::Unbond { amount: 200 }),
        ("withdraw", Call::Withdraw),
        ("exit", Call::Exit),
        (
            "deliver-keys",
            Call::DeliverKeys {
                session,
                keys: vec![SeatKey {
                    segment: 0,
                    seat: bob,
                    sealed,
                }],
            },
        ),
        (
            "commit",
            Call::Commit {
                session,
                segment: 1,
                commitment: Hash([7; 32]),
            },
        ),
        (
            "reveal",
            Call::Reveal {
                session,
                segment: 1,
                vote: Vote::Invalid,
                salt: Salt([8; 32]),
                reason: "the rule (B → C) yields C, not F".into(),
            },
        ),
        (
            "commits",
            Call::batch(
                (0..3)
                    .map(|segment| Call::Commit {
                        session,
                        segment,
                        commitment: Hash([12 + segment as u8; 32]),
                    })
                    .collect(),
            )
            .expect("a batch of commits"),
        ),
        (
            "reveals",
            Call::batch(
                (0..3)
                    .map(|segment| Call::Reveal {
                        session,
                        segment,
                        vote: Vote::Valid,
                        salt: Salt([15 + segment as u8; 32]),
                        reason: format!("step {segment} holds"),
                    })
                    .collect(),
            )
            .expect("a batch of reveals"),
        ),
        (
            "reveal-mapping",
            Call::RevealMapping {
                session,
                mapping: Hash([9; 32]),
                salt: Salt([10; 32]),
            },
        ),
        (
            "reveal-honeypot",
            Call::RevealHoneypot {
                session,
                segment: 2,
                verdict: Vote::Valid,
                difficulty: Difficulty::Subtle,
                salt: Salt([11; 32]),
            },
        ),
        (
            "appeal",
            Call::Appeal {
                session,
                segments: vec![0, 2],
            },
        ),
        (
            "reveal-honeypots",
            Call::batch(
                [
                    (3, Vote::Invalid, Difficulty::Subtle),
                    (1, Vote::Ungrounded, Difficulty::Obvious),
                ]
                .into_iter()
                .map(|(segment, verdict, difficulty)| Call::RevealHoneypot {
                    session,
                    segment,
                    verdict,
                    difficulty,
                    salt: Salt([20 + segment as u8; 32]),
                })
                .collect(),
            )
            .expect("a batch of honeypot openings"),
        ),
        (
            "votes",
            Call::batch(vec![
                Call::Commit {
                    session,
                    segment: 4,
                    commitment: Hash([30; 32]),
                },
                Call::Reveal {
                    session: Hash([31; 32]),
                    segment: 0,
                    vote: Vote::Ungrounded,
                    salt: Salt([32; 32]),
                    reason: "rests on a number no premise gives".into(),
                },
                Call::Commit {
                    session: Hash([31; 32]),
                    segment: 2,
                    commitment: Hash([33; 32]),
                },
            ])
            .expect("votes of two sessions"),
        ),
    ];
    calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, call))| {
            let tx = Signed::sign(
                &alice,
                &trust_protocol::Hash::ZERO,
                Tx {
                    nonce: i as u64,
                    call,
                },
            );
            (name, encoding::encode(&tx))
        })
        .collect()
}

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "..".into()));
    let traces = traces(&root);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);

    // A real session: the first example trace decomposed, restricted and prepared.
    let (_, first_text) = traces
        .iter()
        .find(|(n, _)| n.starts_with("fraction"))
        .expect("trace");
    let first = Trace::parse(first_text).expect("example trace parses");
    let hdag = decompose::decompose(&first, &Options::default()).expect("decomposes");
    let restricted = prepare::restrict(&hdag, |_| true);
    let quorum = QuorumParams {
        k: [3, 3, 1],
        extra_seats: 1,
        tau: Ppm(660_000),
        beta: Ppm(800_000),
    };
    let prepared = prepare::prepare(
        &restricted,
        quorum,
        TierWeights::EQUAL,
        100,
        "math",
        &mut rng,
    )
    .expect("prepares");
    let proposer = Keypair::from_label("validator");

    // wire_tx_block
    let wire = Out::target(&root, "wire_tx_block");
    let mut txs = signed_txs();
    let open = Signed::sign(
        &proposer,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 0,
            call: Call::OpenSession(prepared.manifest.clone()),
        },
    );
    txs.push(("open-session", encoding::encode(&open)));
    // The same session on chosen terms: windows, an exposure budget, two tiers, weights,
    // a required domain.
    let mut chosen = prepared.manifest.clone();
    chosen.terms = trust_protocol::tx::SessionTerms {
        commit_window: 12,
        reveal_window: 8,
        max_exposure: Ppm(500_000),
        tiers: [true, true, false],
        tier_weights: [1, 2, 3],
        domain_required: true,
    };
    let chosen = Signed::sign(
        &proposer,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 1,
            call: Call::OpenSession(chosen),
        },
    );
    txs.push(("open-session-terms", encoding::encode(&chosen)));
    for (name, bytes) in &txs {
        wire.put(&format!("tx-{name}"), bytes);
    }
    // The seed proofs are real proofs by the proposer (over made-up parent seeds: these
    // blocks are decoded and checked, never executed).
    let block = Block::new(
        Hash([1; 32]),
        3,
        Hash([2; 32]),
        1_000,
        Hash([4; 32]),
        proposer.public(),
        prove_seed(&proposer, &Hash([1; 32]), 3, &Hash([5; 32])).expect("proof"),
        txs.iter().take(4).map(|(_, b)| b.clone()).collect(),
    );
    wire.put("block", &encoding::encode(&block));
    let empty = Block::new(
        Hash([1; 32]),
        1,
        Hash::ZERO,
        1_000,
        Hash([4; 32]),
        proposer.public(),
        prove_seed(&proposer, &Hash([1; 32]), 1, &genesis_seed(&Hash([1; 32]))).expect("proof"),
        vec![],
    );
    wire.put("block-empty", &encoding::encode(&empty));
    // The blob protocol between trust nodes: a request and its answers.
    let segment = b"a segment ciphertext".to_vec();
    let request = trust_node::net::blob_req::Request {
        cid: trust_protocol::cid::Cid::of(&segment),
    };
    wire.put("blob-request", &encoding::encode(&request));
    wire.put(
        "blob-response-block",
        &encoding::encode(&trust_node::net::blob_req::Response::Block(segment)),
    );
    wire.put(
        "blob-response-not-here",
        &encoding::encode(&trust_node::net::blob_req::Response::NotHere),
    );
    let cert = WireCertificate {
        height: Height(3),
        round: Round::new(0),
        value_id: BlockId::of(block.hash()),
        signatures: vec![WireCommitSignature {
            address: Address::of(&proposer.public()),
            signature: ConsensusSignature(proposer.sign_raw(b"precommit").0),
            extension: None,
        }],
    };
    let cert_bytes = encode_borsh(&cert).expect("encodes").to_vec();
    let stored = StoredBlock {
        block: block.clone(),
        certificate: cert_bytes.clone(),
    };
    wire.put("stored-block", &encoding::encode(&stored));

    // consensus_msgs: tags as in consensus_msgs.rs.
    let cons = Out::target(&root, "consensus_msgs");
    let chain = Hash([1; 32]);
    let init = PartInit {
        height: Height(3),
        round: Round::new(0),
        pol_round: Round::Nil,
        proposer: Address::of(&proposer.public()),
    };
    let parts = stream_parts(&chain, init, &block, |d| {
        ConsensusSignature(proposer.sign_raw(d.as_ref()).0)
    });
    let stream_id = StreamId::new(Bytes::from_static(b"\0\0\0\0\0\0\0\x03\0\0\0\0\0\0\0\0"));
    let mut stream = Vec::new();
    let mut seq = 0u64;
    for (i, part) in parts.iter().enumerate() {
        let bytes = Codec::<ProposalPart>::encode(&TrustCodec, part).expect("encodes");
        cons.put_tagged(&format!("part-{i}"), 0, &bytes);
        let msg = StreamMessage::new(stream_id.clone(), seq, StreamContent::Data(part.clone()));
        let bytes =
            Codec::<StreamMessage<ProposalPart>>::encode(&TrustCodec, &msg).expect("encodes");
        cons.put_tagged(&format!("stream-msg-{i}"), 3, &bytes);
        stream.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        stream.extend_from_slice(&bytes);
        seq += 1;
    }
    let fin = StreamMessage::new(stream_id, seq, StreamContent::Fin);
    let bytes = Codec::<StreamMessage<ProposalPart>>::encode(&TrustCodec, &fin).expect("encodes");
    cons.put_tagged("stream-msg-fin", 3, &bytes);
    stream.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    stream.extend_from_slice(&bytes);
    cons.put_tagged("stream-whole", 12, &stream);
    cons.put_tagged("certificate", 10, &cert_bytes);
    for (name, req) in [
        ("status", sync::Request::Status),
        ("blocks", sync::Request::Blocks { from: 1, max: 64 }),
    ] {
        cons.put_tagged(&format!("sync-req-{name}"), 11, &encoding::encode(&req));
    }
    let resp = sync::Response::blocks_within_limit(vec![encoding::encode(&block)], 4);
    cons.put_tagged("sync-resp-blocks", 11, &encoding::encode(&resp));
    cons.put_tagged("gossip-tx", 13, &txs[0].1);

    // segment_docs
    let seg = Out::target(&root, "segment_docs");
    for (i, (cid_block, key)) in prepared
        .blocks
        .iter()
        .map(|(_, b)| b)
        .zip(&prepared.keys)
        .enumerate()
        .take(4)
    {
        let id = &prepared.manifest.segments[i].id;
        let plain = seal::decrypt_segment(key, id, cid_block).expect("decrypts");
        SegmentDoc::from_bytes(&plain).expect("a segment document");
        seg.put_tagged(&format!("doc-{i}"), 0, &plain);
        let blob = seal::encrypt_segment(&KEY, &NONCE, &Hash([9; 32]), &plain).expect("encrypts");
        seg.put_tagged(&format!("blob-{i}"), 2, &blob);
    }
    let sealed = seal::seal_key(
        &SealingSecret::from_bytes(SEAT_SECRET).public(),
        &KEY,
        [0x33; 32],
        CONTEXT,
    )
    .expect("seals");
    seg.put_tagged("sealed-key", 1, &encoding::encode(&sealed));

    // trace_hdag and expr
    let th = Out::target(&root, "trace_hdag");
    let ex = Out::target(&root, "expr");
    for (name, text) in &traces {
        th.put(&format!("trace-{name}"), text.as_bytes());
        let Ok(trace) = Trace::parse(text) else {
            continue;
        };
        let Ok(hdag) = decompose::decompose(&trace, &Options::default()) else {
            continue;
        };
        let mut with_hdag = text.as_bytes().to_vec();
        with_hdag.push(0);
        with_hdag.extend_from_slice(serde_json::to_string(&hdag).expect("json").as_bytes());
        th.put(&format!("trace-hdag-{name}"), &with_hdag);
        for (i, node) in hdag.nodes.iter().enumerate() {
            if node.primary_auditor != AuditorType::Auto {
                continue;
            }
            let mut step = node.content.replace('\n', " ");
            for dep in hdag.dependencies_of(&node.id) {
                if let Some(d) = hdag.index_of(dep).and_then(|j| hdag.nodes.get(j)) {
                    step.push('\n');
                    step.push_str(&d.content.replace('\n', " "));
                }
            }
            step.push_str("\n>");
            step.push_str(&trace.problem.replace('\n', " "));
            ex.put(&format!("step-{name}-{i}"), step.as_bytes());
        }
    }

    // config_toml: the nested layout `init` writes (`nested-*`). The flat files of earlier
    // releases (`default`, `validator`, `llm`) stay committed beside them as they were
    // written: the node still reads that layout, converted (config::legacy).
    let cfg = Out::target(&root, "config_toml");
    let default = toml::to_string_pretty(&NodeConfig::default()).expect("toml");
    cfg.put("nested-default", default.as_bytes());
    let llm = fs::read_to_string(root.join("scripts/llm/README.md")).expect("README");
    if let Some(block) = llm
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
    {
        parse_config(block).expect("the README's config parses");
        cfg.put("nested-llm", block.as_bytes());
    }
    let mut node = NodeConfig::default();
    node.moniker = "validator-1".into();
    node.network.bootstrap = vec![
        "/ip4/10.0.0.2/tcp/4001/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN".into(),
    ];
    node.consensus.propose_timeout = Some(std::time::Duration::from_millis(900));
    node.auditor.human = true;
    cfg.put(
        "nested-validator",
        toml::to_string_pretty(&node).expect("toml").as_bytes(),
    );
    println!("seeds written under {}", root.join("fuzz/corpus").display());
}
