//! The verifier accepts a proof built from a real chain of blocks with real signatures,
//! and rejects each kind of tampering with its own error.

use trust_contracts::{
    Contract, Coverage, FailureBound, Genesis, GenesisAccount, LeftOutOutcome, Outcome, Params,
    SegmentOutcome, SegmentVerdict, TraceVerdict, VoteCounts,
};
use trust_protocol::{Hash, Keypair, Vote, tx::Tier, units::Ppm};

use super::*;
use crate::{
    chain::{Tip, build_block},
    config::GenesisDoc,
    testchain::sign_certificate,
};

/// A genesis file's contents, as a user holds them.
#[derive(Clone)]
pub(crate) struct Doc {
    pub(crate) chain: Hash,
    pub(crate) validators: Vec<AccountId>,
    pub(crate) genesis: Genesis,
}

pub(crate) fn anchor(doc: &Doc) -> Anchor<'_> {
    Anchor {
        chain: doc.chain,
        validators: &doc.validators,
        genesis: &doc.genesis,
    }
}

/// A proof of a real chain of two certified blocks, and the genesis it checks against.
pub(crate) struct Fixture {
    /// The genesis file, as `testnet init` writes it.
    pub(crate) file: GenesisDoc,
    /// Its contents (`chain` is `file.chain_id()`).
    pub(crate) doc: Doc,
    pub(crate) session: Hash,
    pub(crate) proof: OutcomeProof,
    pub(crate) keys: Vec<Keypair>,
    pub(crate) block1: StoredBlock,
    pub(crate) block2: StoredBlock,
}

fn segment(verdict: SegmentVerdict, honeypot: Option<Vote>) -> SegmentOutcome {
    SegmentOutcome {
        verdict,
        tier: Tier::Computer,
        escalated: false,
        k: 3,
        q: 2,
        votes: VoteCounts::default(),
        honeypot,
        supports: None,
        conclusion: false,
        votes_cast: Vec::new(),
    }
}

/// A passing trace: three Valid segments, a honeypot the seats caught, and an LLM segment
/// left out (no such auditors), opened at block 1 and decided at block 2.
pub(crate) fn outcome(provider: AccountId) -> Outcome {
    Outcome {
        provider,
        opened_at: 1,
        decided_at: 2,
        segments: vec![
            segment(SegmentVerdict::Valid, None),
            segment(SegmentVerdict::Valid, None),
            segment(SegmentVerdict::Invalid, Some(Vote::Invalid)),
            segment(SegmentVerdict::Valid, None),
        ],
        left_out: vec![LeftOutOutcome {
            tier: Tier::Llm,
            verdict: SegmentVerdict::Undecided,
            supports: None,
            conclusion: false,
        }],
        trace: TraceVerdict::Pass,
        passing_weight: 3,
        undecided_weight: 1,
        total_weight: 4,
        error_at_conclusion: false,
        conclusion_judged: true,
        conclusion_sound: true,
        coverage: Coverage {
            judged: 3,
            segments: 4,
            left_out: [0, 1, 0],
        },
        beta: Ppm(700_000),
        bound: FailureBound {
            expected_pass_weight_micro: 0,
            hoeffding_neg_ln_milli: 0,
        },
        mapping: None,
        rewards_paid: 0,
        refunded: 0,
        disputed_honeypots: 0,
        bond_burned: 0,
        starved_seats: 0,
        starved_paid: 0,
        appeals: Default::default(),
        quorum: crate::audit::provider::DEFAULT_QUORUM,
        terms: Default::default(),
        domain: "math".into(),
    }
}

fn certificate(chain: &Hash, header: &BlockHeader, signers: &[&Keypair]) -> Vec<u8> {
    sign_certificate(chain, header, signers)
}

/// Three validators with 100 staked each; an outcome in the state; blocks 1 and 2, block 2
/// certified by all three.
pub(crate) fn fixture() -> Fixture {
    let keys: Vec<Keypair> = (0..3)
        .map(|i| Keypair::from_label(&format!("proof-v{i}")))
        .collect();
    let file = GenesisDoc {
        chain_name: "proof-test".into(),
        validators: keys.iter().map(|k| k.public()).collect(),
        genesis: Genesis {
            params: Params::default(),
            accounts: keys
                .iter()
                .map(|k| GenesisAccount {
                    id: k.public(),
                    balance: 10,
                    stake: 100,
                })
                .collect(),
            auditors: vec![],
        },
    };
    let doc = Doc {
        chain: file.chain_id(),
        validators: file.validators.clone(),
        genesis: file.genesis.clone(),
    };
    let chain = doc.chain;
    let session = Hash::sha256(b"a decided session");
    let mut state = Contract::new(&doc.genesis).unwrap().state().clone();
    state.outcomes.insert(session, outcome(keys[0].public()));
    let c0 = Contract::from_state(state);
    let tip0 = Tip::genesis(chain);
    // Stamped as if proposed on 2026-11-26, a second apart.
    let (block1, done1, _) = build_block(&c0, &tip0, keys[0].public(), 1_795_658_870_000, &[]);
    let tip1 = tip0.after(&block1);
    let (block2, done2, _) = build_block(
        &done1.contract,
        &tip1,
        keys[1].public(),
        1_795_658_871_000,
        &[],
    );
    let stored1 = StoredBlock {
        certificate: certificate(&chain, &block1.header, &[&keys[0], &keys[1], &keys[2]]),
        block: block1,
    };
    let stored2 = StoredBlock {
        certificate: certificate(&chain, &block2.header, &[&keys[0], &keys[1], &keys[2]]),
        block: block2,
    };
    let proof = build(
        &session,
        &done2.contract,
        &stored2,
        Some(&done1.contract),
        Some(&stored1),
        &doc.validators,
    )
    .unwrap();
    Fixture {
        file,
        doc,
        session,
        proof,
        keys,
        block1: stored1,
        block2: stored2,
    }
}

#[test]
fn a_proof_from_a_certified_block_verifies() {
    let f = fixture();
    let v = verify(&f.proof, &f.session, &anchor(&f.doc)).unwrap();
    assert_eq!(v.outcome, outcome(f.keys[0].public()));
    assert_eq!(v.header, f.block2.block.header);
    assert_eq!(v.power, (300, 300));
    // It survives the JSON the API serves.
    let json = serde_json::to_string(&f.proof).unwrap();
    let back: OutcomeProof = serde_json::from_str(&json).unwrap();
    verify(&back, &f.session, &anchor(&f.doc)).unwrap();
}

#[test]
fn a_tampered_outcome_is_rejected() {
    let f = fixture();
    let mut p = f.proof.clone();
    let mut bytes = hex::decode(&p.outcome).unwrap();
    // The last field (`refunded`): the value still decodes, but is not the one proven.
    *bytes.last_mut().unwrap() ^= 1;
    p.outcome = hex::encode(bytes);
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BadOutcomeProof(_))
    ));
    // Another session's id against this outcome.
    assert!(matches!(
        verify(&f.proof, &Hash::sha256(b"another"), &anchor(&f.doc)),
        Err(ProofError::BadOutcomeProof(_))
    ));
}

#[test]
fn a_tampered_merkle_proof_is_rejected() {
    let f = fixture();
    let mut p = f.proof.clone();
    // A valid proof, but of another entry (a validator's account).
    p.outcome_proof = p.stakes[0].proof.clone();
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BadOutcomeProof(_))
    ));
    let mut p = f.proof.clone();
    p.outcome_proof.truncate(p.outcome_proof.len() - 2);
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::Malformed(_))
    ));
}

#[test]
fn a_tampered_certificate_is_rejected() {
    let f = fixture();
    let header = &f.block2.block.header;
    let chain = f.doc.chain;
    // Two of three equal powers is exactly 2/3: not enough.
    let mut p = f.proof.clone();
    p.certificate = hex::encode(certificate(&chain, header, &[&f.keys[0], &f.keys[1]]));
    assert_eq!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::InsufficientPower {
            signed: 200,
            total: 300
        })
    );
    // A signer outside the genesis validators.
    let outsider = Keypair::from_label("proof-outsider");
    p.certificate = hex::encode(certificate(
        &chain,
        header,
        &[&f.keys[0], &f.keys[1], &outsider],
    ));
    assert_eq!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BadSigner(outsider.public()))
    );
    // A signature over another network's vote.
    p.certificate = hex::encode(certificate(
        &Hash::sha256(b"other chain"),
        header,
        &[&f.keys[0], &f.keys[1], &f.keys[2]],
    ));
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BadSignature(_))
    ));
}

#[test]
fn a_tampered_root_or_stake_is_rejected() {
    let f = fixture();
    // A header claiming another state root no longer matches the certified block.
    let mut p = f.proof.clone();
    let mut header = f.block2.block.header.clone();
    header.state_root = Hash::sha256(b"a root of my choosing");
    p.header = hex::encode(encoding::encode(&header));
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::CertificateMismatch { .. })
    ));
    // A parent whose state root was changed (to fake the stakes) breaks the hash link.
    let mut p = f.proof.clone();
    let mut parent: BlockHeader =
        encoding::decode(&hex::decode(p.parent.as_ref().unwrap()).unwrap()).unwrap();
    parent.state_root = Hash::sha256(b"stakes of my choosing");
    p.parent = Some(hex::encode(encoding::encode(&parent)));
    assert_eq!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BrokenLink(2))
    );
    // A stake inflated under the real parent root.
    let mut p = f.proof.clone();
    let mut acct: trust_contracts::Account =
        decode_entry(&hex::decode(p.stakes[0].account.as_ref().unwrap()).unwrap()).unwrap();
    acct.stake = 1_000_000;
    p.stakes[0].account = Some(hex::encode(
        trust_contracts::commitment::encode_entry_value(&acct),
    ));
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BadStake { .. })
    ));
    // A missing stake proof.
    let mut p = f.proof.clone();
    p.stakes.pop();
    assert!(matches!(
        verify(&p, &f.session, &anchor(&f.doc)),
        Err(ProofError::BadStake { .. })
    ));
    // Another network's genesis.
    let mut other = f.doc.clone();
    other.chain = Hash::sha256(b"elsewhere");
    assert!(matches!(
        verify(&f.proof, &f.session, &anchor(&other)),
        Err(ProofError::WrongChain { .. })
    ));
}

// Bundles: the proof as `proof export` writes it and `proof verify` reads it. Each test
// below changes one field of a good bundle and checks the reason it is rejected for.

/// The fixture's proof as `proof export` writes it.
pub(crate) fn bundle(f: &Fixture) -> Bundle {
    Bundle::of(f.proof.clone()).unwrap()
}

/// `bytes` read and checked as `proof verify` does.
fn check_bytes(f: &Fixture, bytes: &[u8]) -> Result<Verified, ProofError> {
    verify_bundle(&parse_bundle(bytes)?, &anchor(&f.doc))
}

/// `b` through its file text, read and checked as `proof verify` does.
fn check(f: &Fixture, b: &Bundle) -> Result<Verified, ProofError> {
    check_bytes(f, b.to_file_text().unwrap().as_bytes())
}

/// The fixture's bundle with `change` made to its proof.
fn tampered(f: &Fixture, change: impl FnOnce(&mut OutcomeProof)) -> Bundle {
    let mut b = bundle(f);
    change(&mut b.proof);
    b
}

/// The fixture's bundle as JSON, with `change` made to it, as file bytes.
fn tampered_json(f: &Fixture, change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(bundle(f)).unwrap();
    change(&mut v);
    serde_json::to_vec_pretty(&v).unwrap()
}

fn header_of(p: &OutcomeProof) -> BlockHeader {
    encoding::decode(&hex::decode(&p.header).unwrap()).unwrap()
}

fn parent_of(p: &OutcomeProof) -> BlockHeader {
    encoding::decode(&hex::decode(p.parent.as_ref().unwrap()).unwrap()).unwrap()
}

/// `p` with its certificate decoded, changed by `change`, and encoded again.
fn with_certificate(p: &mut OutcomeProof, change: impl FnOnce(&mut WireCertificate)) {
    let mut c: WireCertificate = decode_borsh(&hex::decode(&p.certificate).unwrap()).unwrap();
    change(&mut c);
    p.certificate = hex::encode(crate::consensus::codec::encode_borsh(&c).unwrap());
}

/// `b` with one bit of signer `i`'s precommit signature flipped.
pub(crate) fn flip_signature(b: &mut Bundle, i: usize) {
    with_certificate(&mut b.proof, |c| c.signatures[i].signature.0[0] ^= 1);
}

fn is_not_a_bundle(r: &Result<Verified, ProofError>, needle: &str) -> bool {
    matches!(r, Err(ProofError::NotABundle(m)) if m.contains(needle))
}

#[test]
fn a_bundle_holds_the_format_the_chain_and_the_proof_and_verifies_from_its_text() {
    let f = fixture();
    let b = bundle(&f);
    assert_eq!(b.format, BUNDLE_FORMAT);
    assert_eq!(b.chain, f.file.chain_id());
    assert_eq!(b.proof, f.proof);
    let text = b.to_file_text().unwrap();
    assert!(text.ends_with("}\n"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format"], "trust-outcome-proof/1");
    assert_eq!(v["chain"], f.file.chain_id().to_hex());
    assert_eq!(parse_bundle(text.as_bytes()), Ok(b.clone()));
    let got = check(&f, &b).unwrap();
    assert_eq!(got.outcome, outcome(f.keys[0].public()));
    assert_eq!(got.header, f.block2.block.header);
    assert_eq!(got.power, (300, 300));
    // A field this version does not know, in the bundle, its proof or a stake proof: the
    // file is not a bundle of this format.
    for at in ["", "/proof", "/proof/stakes/0"] {
        let bytes = tampered_json(&f, |v| {
            v.pointer_mut(at)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .insert("trusted".into(), true.into());
        });
        let r = check_bytes(&f, &bytes);
        assert!(
            is_not_a_bundle(&r, "unknown field `trusted`"),
            "{at}: {r:?}"
        );
    }
}

/// The fields the tamper tests below change, one by one: a field added to the bundle
/// fails this test until it is tampered with too.
#[test]
fn every_field_of_a_bundle_is_one_the_tamper_tests_change() {
    let f = fixture();
    let v = serde_json::to_value(bundle(&f)).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&v), ["chain", "format", "proof"]);
    assert_eq!(
        keys(&v["proof"]),
        [
            "certificate",
            "header",
            "outcome",
            "outcome_proof",
            "parent",
            "session",
            "stakes"
        ]
    );
    assert_eq!(f.proof.stakes.len(), 3);
    assert_eq!(
        keys(&v["proof"]["stakes"][0]),
        ["account", "proof", "validator"]
    );
}

#[test]
fn bundle_format_of_another_version_is_refused_as_such() {
    let f = fixture();
    for format in [
        "trust-outcome-proof/2",
        "trust-outcome-proof/0",
        "TRUST-OUTCOME-PROOF/1",
        "",
    ] {
        let mut b = bundle(&f);
        b.format = format.into();
        let want = Err(ProofError::UnsupportedFormat(format.into()));
        assert_eq!(check(&f, &b), want);
        assert_eq!(verify_bundle(&b, &anchor(&f.doc)), want);
    }
    // A later version may add fields: it is named by its version, not refused for them.
    let bytes = tampered_json(&f, |v| {
        v["format"] = "trust-outcome-proof/2".into();
        v["decided_time"] = 1_700_000_000u64.into();
    });
    assert_eq!(
        check_bytes(&f, &bytes),
        Err(ProofError::UnsupportedFormat(
            "trust-outcome-proof/2".into()
        ))
    );
    let err = check_bytes(&f, &bytes).unwrap_err().to_string();
    assert!(
        err.contains("\"trust-outcome-proof/2\"") && err.contains("\"trust-outcome-proof/1\""),
        "{err}"
    );
    // No format, or one that is not a string: not a bundle.
    let bytes = tampered_json(&f, |v| {
        v.as_object_mut().unwrap().remove("format");
    });
    assert!(is_not_a_bundle(
        &check_bytes(&f, &bytes),
        "missing field `format`"
    ));
    let bytes = tampered_json(&f, |v| v["format"] = 1.into());
    assert!(is_not_a_bundle(&check_bytes(&f, &bytes), "invalid type"));
}

#[test]
fn bundle_chain_of_another_network_is_refused() {
    let f = fixture();
    let elsewhere = Hash::sha256(b"elsewhere");
    // The label says another chain.
    let mut b = bundle(&f);
    b.chain = elsewhere;
    assert_eq!(
        check(&f, &b),
        Err(ProofError::WrongChain {
            expected: f.doc.chain,
            got: elsewhere
        })
    );
    // The bundle checked against another network's genesis file: another name is another
    // chain id, whose validators are not these.
    let other = GenesisDoc {
        chain_name: "another-network".into(),
        ..f.file.clone()
    };
    let other_doc = Doc {
        chain: other.chain_id(),
        ..f.doc.clone()
    };
    assert_eq!(
        verify_bundle(&bundle(&f), &anchor(&other_doc)),
        Err(ProofError::WrongChain {
            expected: other.chain_id(),
            got: f.doc.chain
        })
    );
    // The label agrees with the genesis file, the certified block does not.
    let b = tampered(&f, |p| {
        let mut h = header_of(p);
        h.chain = elsewhere;
        p.header = hex::encode(encoding::encode(&h));
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::WrongChain {
            expected: f.doc.chain,
            got: elsewhere
        })
    );
    // Not a chain id at all.
    let bytes = tampered_json(&f, |v| v["chain"] = "not hex".into());
    assert!(matches!(
        check_bytes(&f, &bytes),
        Err(ProofError::NotABundle(_))
    ));
}

#[test]
fn bundle_session_changed_is_not_the_one_under_the_root() {
    let f = fixture();
    let b = tampered(&f, |p| p.session = Hash::sha256(b"another session"));
    assert!(matches!(check(&f, &b), Err(ProofError::BadOutcomeProof(_))));
    let bytes = tampered_json(&f, |v| v["proof"]["session"] = "abc".into());
    assert!(matches!(
        check_bytes(&f, &bytes),
        Err(ProofError::NotABundle(_))
    ));
}

#[test]
fn bundle_outcome_changed_is_not_the_one_under_the_root() {
    let f = fixture();
    // The verdict turned, re-encoded as a well-formed outcome.
    let b = tampered(&f, |p| {
        let mut o = outcome(f.keys[0].public());
        o.trace = TraceVerdict::Fail;
        p.outcome = hex::encode(trust_contracts::commitment::encode_entry_value(&o));
    });
    assert!(matches!(check(&f, &b), Err(ProofError::BadOutcomeProof(_))));
    // One bit of the encoding; nothing at all.
    let b = tampered(&f, |p| {
        let mut bytes = hex::decode(&p.outcome).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x10;
        p.outcome = hex::encode(bytes);
    });
    assert!(matches!(check(&f, &b), Err(ProofError::BadOutcomeProof(_))));
    let b = tampered(&f, |p| p.outcome.clear());
    assert!(matches!(check(&f, &b), Err(ProofError::BadOutcomeProof(_))));
    // Not hex.
    let b = tampered(&f, |p| p.outcome = "zz".into());
    assert_eq!(check(&f, &b), Err(ProofError::Malformed("outcome")));
}

#[test]
fn bundle_outcome_proof_changed_does_not_prove_the_outcome() {
    let f = fixture();
    // A valid proof of another entry (a validator's account, under another root).
    let b = tampered(&f, |p| p.outcome_proof = p.stakes[0].proof.clone());
    assert!(matches!(check(&f, &b), Err(ProofError::BadOutcomeProof(_))));
    // Cut short by a byte, by half a byte, or empty.
    for cut in [2, 1] {
        let b = tampered(&f, |p| {
            p.outcome_proof.truncate(p.outcome_proof.len() - cut)
        });
        assert_eq!(
            check(&f, &b),
            Err(ProofError::Malformed("outcome proof")),
            "{cut}"
        );
    }
    let b = tampered(&f, |p| p.outcome_proof.clear());
    assert_eq!(check(&f, &b), Err(ProofError::Malformed("outcome proof")));
}

#[test]
fn bundle_header_changed_is_not_the_certified_block() {
    let f = fixture();
    let h2 = f.block2.block.header.clone();
    // Any field the certificate covers: the header no longer hashes to the signed block.
    type Change = fn(&mut BlockHeader);
    let changes: [(&str, Change); 3] = [
        ("state_root", |h| {
            h.state_root = Hash::sha256(b"a root of my choosing")
        }),
        ("txs_root", |h| h.txs_root = Hash::sha256(b"other txs")),
        ("proposer", |h| {
            h.proposer = Keypair::from_label("proof-v2").public()
        }),
    ];
    for (field, change) in changes {
        let b = tampered(&f, |p| {
            let mut h = header_of(p);
            change(&mut h);
            p.header = hex::encode(encoding::encode(&h));
        });
        assert!(
            matches!(
                check(&f, &b),
                Err(ProofError::CertificateMismatch { height: 2, got_height: 2, got_block, .. })
                    if got_block == h2.hash()
            ),
            "{field}"
        );
    }
    // The link to the parent: another prev_hash, another height.
    let b = tampered(&f, |p| {
        let mut h = header_of(p);
        h.prev_hash = Hash::sha256(b"another parent");
        p.header = hex::encode(encoding::encode(&h));
    });
    assert_eq!(check(&f, &b), Err(ProofError::BrokenLink(2)));
    let b = tampered(&f, |p| {
        let mut h = header_of(p);
        h.height = 3;
        p.header = hex::encode(encoding::encode(&h));
    });
    assert_eq!(check(&f, &b), Err(ProofError::BrokenLink(3)));
    // Block 1's header with block 2's certificate: weighed by the genesis stakes, and
    // not the block the certificate decides.
    let b = tampered(&f, |p| {
        p.header = hex::encode(encoding::encode(&f.block1.block.header));
    });
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::CertificateMismatch {
            height: 1,
            got_height: 2,
            ..
        })
    ));
    // The chain field is in `bundle_chain_of_another_network_is_refused`. Not a header:
    for junk in ["zz", "00", ""] {
        let b = tampered(&f, |p| p.header = junk.into());
        assert_eq!(
            check(&f, &b),
            Err(ProofError::Malformed("header")),
            "{junk}"
        );
    }
}

#[test]
fn bundle_certificate_changed_is_refused_for_what_it_lacks() {
    let f = fixture();
    let [k0, k1, k2] = [&f.keys[0], &f.keys[1], &f.keys[2]];
    // A signature that does not verify, whichever signer's it is.
    for i in 0..3 {
        let mut b = bundle(&f);
        flip_signature(&mut b, i);
        let who = {
            let c: WireCertificate =
                decode_borsh(&hex::decode(&b.proof.certificate).unwrap()).unwrap();
            c.signatures[i].address.account()
        };
        assert_eq!(check(&f, &b), Err(ProofError::BadSignature(who)), "{i}");
    }
    // Signatures of the right validators over another round than the one named.
    let b = tampered(&f, |p| {
        with_certificate(p, |c| c.round = malachitebft_core_types::Round::new(1))
    });
    assert!(matches!(check(&f, &b), Err(ProofError::BadSignature(_))));
    // Too little power: two of three equal stakes is exactly 2/3; none at all.
    let h2 = &f.block2.block.header;
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&f.doc.chain, h2, &[k0, k1]))
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::InsufficientPower {
            signed: 200,
            total: 300
        })
    );
    let b = tampered(&f, |p| with_certificate(p, |c| c.signatures.clear()));
    assert_eq!(
        check(&f, &b),
        Err(ProofError::InsufficientPower {
            signed: 0,
            total: 300
        })
    );
    // A signer outside the genesis validators, even with a valid signature; one twice.
    let outsider = Keypair::from_label("proof-outsider");
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&f.doc.chain, h2, &[k0, k1, &outsider]))
    });
    assert_eq!(check(&f, &b), Err(ProofError::BadSigner(outsider.public())));
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&f.doc.chain, h2, &[k0, k1, k1]))
    });
    assert_eq!(check(&f, &b), Err(ProofError::BadSigner(k1.public())));
    // The certificate of another block or height.
    let b = tampered(&f, |p| p.certificate = hex::encode(&f.block1.certificate));
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::CertificateMismatch {
            height: 2,
            got_height: 1,
            ..
        })
    ));
    let b = tampered(&f, |p| {
        with_certificate(p, |c| {
            c.value_id = crate::consensus::context::BlockId::of(Hash::sha256(b"another block"))
        })
    });
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::CertificateMismatch { got_height: 2, .. })
    ));
    // Signed over another network's votes.
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&Hash::sha256(b"other"), h2, &[k0, k1, k2]))
    });
    assert!(matches!(check(&f, &b), Err(ProofError::BadSignature(_))));
    // Not a certificate.
    for junk in ["zz", "00", ""] {
        let b = tampered(&f, |p| p.certificate = junk.into());
        assert_eq!(
            check(&f, &b),
            Err(ProofError::Malformed("certificate")),
            "{junk}"
        );
    }
}

#[test]
fn bundle_parent_changed_is_not_the_block_extended() {
    let f = fixture();
    let b = tampered(&f, |p| p.parent = None);
    assert_eq!(check(&f, &b), Err(ProofError::BrokenLink(2)));
    // A parent whose root was changed to fake the stakes.
    let b = tampered(&f, |p| {
        let mut parent = parent_of(p);
        parent.state_root = Hash::sha256(b"stakes of my choosing");
        p.parent = Some(hex::encode(encoding::encode(&parent)));
    });
    assert_eq!(check(&f, &b), Err(ProofError::BrokenLink(2)));
    // The certified block itself in the parent's place.
    let b = tampered(&f, |p| p.parent = Some(p.header.clone()));
    assert_eq!(check(&f, &b), Err(ProofError::BrokenLink(2)));
    for junk in ["zz", "00"] {
        let b = tampered(&f, |p| p.parent = Some(junk.into()));
        assert_eq!(
            check(&f, &b),
            Err(ProofError::Malformed("parent header")),
            "{junk}"
        );
    }
}

#[test]
fn bundle_stake_validator_changed_is_an_unknown_validator_or_an_unproven_stake() {
    let f = fixture();
    let [v0, v1, _] = [0, 1, 2].map(|i| f.keys[i].public());
    // A validator this genesis does not know.
    let outsider = Keypair::from_label("proof-outsider").public();
    let b = tampered(&f, |p| p.stakes[0].validator = outsider);
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadStake {
            validator: outsider,
            reason: "not a genesis validator".into()
        })
    );
    // Two genesis validators' proofs swapped: neither holds for the key named.
    let b = tampered(&f, |p| {
        p.stakes[0].validator = v1;
        p.stakes[1].validator = v0;
    });
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::BadStake { validator, .. }) if validator == v0
    ));
    // One validator named twice: the other has no proof.
    let b = tampered(&f, |p| p.stakes[1].validator = v0);
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadStake {
            validator: v1,
            reason: "no proof".into()
        })
    );
}

#[test]
fn bundle_stake_account_changed_is_not_under_the_parent_root() {
    let f = fixture();
    let v0 = f.keys[0].public();
    // Stake inflated, or deflated to nothing.
    for stake in [1_000_000, 0] {
        let b = tampered(&f, |p| {
            let mut acct: trust_contracts::Account =
                decode_entry(&hex::decode(p.stakes[0].account.as_ref().unwrap()).unwrap()).unwrap();
            acct.stake = stake;
            p.stakes[0].account = Some(hex::encode(
                trust_contracts::commitment::encode_entry_value(&acct),
            ));
        });
        assert!(
            matches!(
                check(&f, &b),
                Err(ProofError::BadStake { validator, .. }) if validator == v0
            ),
            "{stake}"
        );
    }
    // The account said not to exist.
    let b = tampered(&f, |p| p.stakes[0].account = None);
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::BadStake { validator, .. }) if validator == v0
    ));
    let b = tampered(&f, |p| p.stakes[0].account = Some("zz".into()));
    assert_eq!(check(&f, &b), Err(ProofError::Malformed("account")));
}

#[test]
fn bundle_stake_proof_changed_does_not_prove_the_stake() {
    let f = fixture();
    let v0 = f.keys[0].public();
    let bad = |reason: Option<&str>, r: Result<Verified, ProofError>| match r {
        Err(ProofError::BadStake {
            validator,
            reason: got,
        }) => validator == v0 && reason.is_none_or(|want| want == got),
        _ => false,
    };
    // Another validator's proof, the outcome's proof.
    let b = tampered(&f, |p| p.stakes[0].proof = p.stakes[1].proof.clone());
    assert!(bad(None, check(&f, &b)));
    let b = tampered(&f, |p| p.stakes[0].proof = p.outcome_proof.clone());
    assert!(bad(None, check(&f, &b)));
    // Cut short by a byte: not a proof.
    let b = tampered(&f, |p| {
        let n = p.stakes[0].proof.len();
        p.stakes[0].proof.truncate(n - 2);
    });
    assert!(bad(Some("malformed proof"), check(&f, &b)));
    // Not hex.
    let b = tampered(&f, |p| p.stakes[0].proof.push('0'));
    assert_eq!(check(&f, &b), Err(ProofError::Malformed("stake proof")));
}

#[test]
fn bundle_stakes_missing_or_added_are_refused() {
    let f = fixture();
    let b = tampered(&f, |p| {
        p.stakes.pop();
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadStake {
            validator: f.keys[2].public(),
            reason: "no proof".into()
        })
    );
    let b = tampered(&f, |p| p.stakes.clear());
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadStake {
            validator: f.keys[0].public(),
            reason: "no proof".into()
        })
    );
    // An extra stake proof, of an account that is no genesis validator.
    let outsider = Keypair::from_label("proof-outsider").public();
    let b = tampered(&f, |p| {
        let mut extra = p.stakes[0].clone();
        extra.validator = outsider;
        p.stakes.push(extra);
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadStake {
            validator: outsider,
            reason: "not a genesis validator".into()
        })
    );
}

#[test]
fn a_bundle_cut_short_or_not_a_bundle_says_so_with_the_parsers_message() {
    let f = fixture();
    let text = bundle(&f).to_file_text().unwrap();
    let n = text.len();
    let last = text.rfind('}').unwrap();
    for cut in [0, 1, 2, 17, n / 4, n / 2, 3 * n / 4, last] {
        let r = check_bytes(&f, &text.as_bytes()[..cut]);
        assert!(
            is_not_a_bundle(&r, "EOF while parsing"),
            "cut at {cut}: {r:?}"
        );
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.starts_with("truncated or not a proof bundle: EOF while parsing"),
            "{msg}"
        );
    }
    // Not JSON; not text; the API's bare proof, which is not a bundle.
    assert!(is_not_a_bundle(
        &check_bytes(&f, b"outcome: pass"),
        "expected value"
    ));
    assert!(matches!(
        check_bytes(&f, &[0xff, 0xfe, 0x00]),
        Err(ProofError::NotABundle(_))
    ));
    let bare = serde_json::to_vec(&f.proof).unwrap();
    assert!(is_not_a_bundle(
        &check_bytes(&f, &bare),
        "missing field `format`"
    ));
}

#[test]
fn a_bundle_in_a_fresh_directory_verifies_from_the_file_and_a_genesis_file_alone() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outcome.proof");
    crate::cli::proof::write_bundle(&path, &bundle(&f), false).unwrap();
    // Nothing but the bundle beside it: the temporary file is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let gdir = tempfile::tempdir().unwrap();
    let genesis = crate::config::write_genesis(gdir.path(), &f.file).unwrap();
    let r = crate::cli::proof::verify_file(&path, &genesis).unwrap();
    assert_eq!(r.session, f.session);
    assert_eq!(r.verdict, TraceVerdict::Pass);
    assert_eq!(
        r.segments,
        crate::cli::proof::VerdictCounts {
            valid: 3,
            undecided: 1,
            ..Default::default()
        }
    );
    assert_eq!((r.left_out, r.honeypots), (1, 1));
    assert_eq!(r.decided_at, 2);
    let h2 = &f.block2.block.header;
    assert_eq!(
        (r.height, r.block_hash, r.state_root),
        (2, h2.hash(), h2.state_root)
    );
    assert_eq!(r.power, (300, 300));
    assert_eq!(r.chain, f.file.chain_id());
    let lines = r.lines();
    assert_eq!(
        lines.last().unwrap(),
        &format!("verified offline against genesis {}", f.file.chain_id())
    );
    // As the README shows it.
    for line in &lines {
        println!("{line}");
    }
    let json = r.json();
    println!("{json}");
    assert_eq!(json["verified"], true);
    assert_eq!(json["verdict"], "Pass");
    assert_eq!(json["segments"]["valid"], 3);
    assert_eq!(json["signed_power"], "300");
}
