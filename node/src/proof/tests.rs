//! The verifier accepts a proof built from a real chain of blocks with real signatures,
//! and rejects each kind of tampering with its own error.

use trust_contracts::{
    Contract, Coverage, FailureBound, Genesis, GenesisAccount, LeftOutOutcome, Outcome, Params,
    SegmentOutcome, SegmentVerdict, TraceVerdict, VoteCounts,
};
use trust_protocol::{
    Hash, Keypair, Signed, Vote,
    tx::{Call, Tier, Tx},
    units::Ppm,
};

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

/// What a user trusts who holds `doc` and no trusted block.
pub(crate) fn trust(doc: &Doc) -> Trust<'_> {
    Trust {
        chain: doc.chain,
        validators: &doc.validators,
        genesis: &doc.genesis,
        block: None,
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
        id: Hash::ZERO,
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
        drawn_at: 2,
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
        honeypots_forfeited: false,
        starved_seats: 0,
        starved_paid: 0,
        payload_seats: 0,
        payload_paid: 0,
        // Final at block 2 (a window of no blocks): `proof verify` accepts it without
        // `--allow-non-final`; [`fixture_with`] makes other ones.
        appeals: trust_contracts::AppealRecord {
            until: 2,
            final_at: Some(2),
            ..Default::default()
        },
        quorum: trust_judging::session::DEFAULT_QUORUM,
        terms: Default::default(),
        domain: "math".into(),
    }
}

fn certificate(chain: &Hash, header: &BlockHeader, signers: &[&Keypair]) -> Vec<u8> {
    sign_certificate(chain, header, signers)
}

/// Three validators (keys from `label`), 100 staked and `balance` free each, on a chain
/// named `name`: their keys, the genesis file and what a client reads from it.
fn three_validators(label: &str, name: &str, balance: u64) -> (Vec<Keypair>, GenesisDoc, Doc) {
    let keys: Vec<Keypair> = (0..3)
        .map(|i| Keypair::from_label(&format!("{label}{i}")))
        .collect();
    let file = GenesisDoc {
        chain_name: name.into(),
        validators: keys.iter().map(|k| k.public()).collect(),
        genesis: Genesis {
            // Voting power follows stake at once here (no per-block cap on its fall): the
            // walk tests are about where the powers change, not how fast.
            params: Params {
                max_power_cut: trust_protocol::units::Ppm::ONE,
                ..Params::default()
            },
            accounts: keys
                .iter()
                .map(|k| GenesisAccount {
                    id: k.public(),
                    balance,
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
    (keys, file, doc)
}

/// Three validators with 100 staked each; an outcome in the state; blocks 1 and 2, block 2
/// certified by all three.
pub(crate) fn fixture() -> Fixture {
    fixture_with(|_| {})
}

/// [`fixture`] with its outcome changed by `edit` first.
pub(crate) fn fixture_with(edit: impl FnOnce(&mut Outcome)) -> Fixture {
    let (keys, file, doc) = three_validators("proof-v", "proof-test", 10);
    let chain = doc.chain;
    let session = Hash::sha256(b"a decided session");
    let mut state = Contract::new(&doc.genesis).unwrap().state().clone();
    let mut decided = outcome(keys[0].public());
    edit(&mut decided);
    state.outcomes.insert(session, decided);
    let c0 = Contract::from_state(state);
    let tip0 = Tip::genesis(chain);
    // Stamped as if proposed on 2026-11-26, a second apart.
    let (block1, done1, _) = build_block(&c0, &tip0, &keys[0], 1_795_658_870_000, &[]).unwrap();
    let tip1 = tip0.after(&block1);
    let (block2, done2, _) =
        build_block(&done1.contract, &tip1, &keys[1], 1_795_658_871_000, &[]).unwrap();
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
        Walk::default(),
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
    let v = verify(&f.proof, &f.session, &trust(&f.doc)).unwrap();
    assert_eq!(v.outcome, outcome(f.keys[0].public()));
    assert_eq!(v.header, f.block2.block.header);
    assert_eq!(v.power, (300, 300));
    // It survives the JSON the API serves.
    let json = serde_json::to_string(&f.proof).unwrap();
    let back: OutcomeProof = serde_json::from_str(&json).unwrap();
    verify(&back, &f.session, &trust(&f.doc)).unwrap();
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
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BadOutcomeProof(_))
    ));
    // Another session's id against this outcome.
    assert!(matches!(
        verify(&f.proof, &Hash::sha256(b"another"), &trust(&f.doc)),
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
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BadOutcomeProof(_))
    ));
    let mut p = f.proof.clone();
    p.outcome_proof.truncate(p.outcome_proof.len() - 2);
    assert!(matches!(
        verify(&p, &f.session, &trust(&f.doc)),
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
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::InsufficientPower {
            height: 2,
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
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BadSigner {
            validator: outsider.public(),
            height: 2
        })
    );
    // A signature over another network's vote.
    p.certificate = hex::encode(certificate(
        &Hash::sha256(b"other chain"),
        header,
        &[&f.keys[0], &f.keys[1], &f.keys[2]],
    ));
    assert!(matches!(
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BadSignature { .. })
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
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::CertificateMismatch { .. })
    ));
    // A parent whose state root was changed (to fake the stakes) breaks the hash link.
    let mut p = f.proof.clone();
    let mut parent: BlockHeader =
        encoding::decode(&hex::decode(p.parent.as_ref().unwrap()).unwrap()).unwrap();
    parent.state_root = Hash::sha256(b"stakes of my choosing");
    p.parent = Some(hex::encode(encoding::encode(&parent)));
    assert_eq!(
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BrokenLink(2))
    );
    // A stake inflated under the real parent root.
    let mut p = f.proof.clone();
    let mut acct: trust_contracts::Account =
        decode_entry(&hex::decode(p.stakes[0].account.as_ref().unwrap()).unwrap()).unwrap();
    acct.power = 1_000_000;
    p.stakes[0].account = Some(hex::encode(
        trust_contracts::commitment::encode_entry_value(&acct),
    ));
    assert!(matches!(
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BadStake { .. })
    ));
    // A missing stake proof.
    let mut p = f.proof.clone();
    p.stakes.pop();
    assert!(matches!(
        verify(&p, &f.session, &trust(&f.doc)),
        Err(ProofError::BadStake { .. })
    ));
    // Another network's genesis.
    let mut other = f.doc.clone();
    other.chain = Hash::sha256(b"elsewhere");
    assert!(matches!(
        verify(&f.proof, &f.session, &trust(&other)),
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
    verify_bundle(&parse_bundle(bytes)?, None, &trust(&f.doc))
}

/// `b` through its file text, read and checked as `proof verify` does.
fn check(f: &Fixture, b: &Bundle) -> Result<Verified, ProofError> {
    check_bytes(f, b.to_file_text().unwrap().as_bytes())
}

/// A field that must be hex-encoded, given each of "zz" (not hex), "00" (hex, nothing
/// decodable) and "" by `verdict_of`, is refused as malformed under its name.
fn not_hex_is_malformed(
    field: &'static str,
    mut verdict_of: impl FnMut(&str) -> Result<Verified, ProofError>,
) {
    for junk in ["zz", "00", ""] {
        assert_eq!(
            verdict_of(junk),
            Err(ProofError::Malformed(field)),
            "{junk}"
        );
    }
}

/// The fixture's bundle with `change` made to its proof.
fn tampered(f: &Fixture, change: impl FnOnce(&mut OutcomeProof)) -> Bundle {
    let mut b = bundle(f);
    change(&mut b.proof);
    b
}

/// The fixture's bundle as JSON, with `change` made to it, as file bytes.
fn tampered_json(f: &Fixture, change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    json_changed(&bundle(f), change)
}

/// `b`'s file bytes with `change` made to its JSON.
fn json_changed(b: &Bundle, change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(b).unwrap();
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
    assert_eq!(v["format"], "trust-outcome-proof/3");
    // Walked from genesis through no change (the fixture's powers never change).
    assert_eq!(v["proof"]["anchor"], "genesis");
    assert_eq!(v["proof"]["walk"], serde_json::json!([]));
    assert_eq!(v["chain"], f.file.chain_id().to_hex());
    assert_eq!(parse_bundle(text.as_bytes()), Ok(b.clone()));
    let got = check(&f, &b).unwrap();
    assert_eq!(got.outcome, outcome(f.keys[0].public()));
    assert_eq!(got.header, f.block2.block.header);
    assert_eq!(got.power, (300, 300));
    assert_eq!((got.anchor, got.hops), (None, vec![]));
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
/// fails this test until it is tampered with too. Which test changes which field:
///
/// | field | test |
/// |---|---|
/// | `format` | `bundle_format_of_another_version_is_refused_as_such`, `a_bundle_of_the_older_format_is_refused_as_older` |
/// | `chain` | `bundle_chain_of_another_network_is_refused` |
/// | `proof.session` | `bundle_session_changed_is_not_the_one_under_the_root` |
/// | `proof.outcome` | `bundle_outcome_changed_is_not_the_one_under_the_root` |
/// | `proof.outcome_proof` | `bundle_outcome_proof_changed_does_not_prove_the_outcome` |
/// | `proof.header` | `bundle_header_changed_is_not_the_certified_block` |
/// | `proof.certificate` | `bundle_certificate_changed_is_refused_for_what_it_lacks` |
/// | `proof.parent` | `bundle_parent_changed_is_not_the_block_extended` |
/// | `proof.stakes[]` | `bundle_stake_*`, `bundle_stakes_missing_or_added_are_refused` |
/// | `proof.anchor` | `bundle_anchor_changed_is_not_the_trusted_block` |
/// | `proof.anchor.block.header` | `bundle_anchor_header_changed_is_not_the_trusted_block` |
/// | `proof.anchor.block.stakes[]` | `bundle_anchor_stakes_changed_are_not_under_the_trusted_root` |
/// | `proof.walk` | `bundle_walk_out_of_order_is_refused`, `dropping_a_change_from_the_walk_leaves_the_validator_set_unknown` |
/// | `proof.walk[].header` | `bundle_walk_header_changed_is_not_the_certified_change` |
/// | `proof.walk[].certificate` | `bundle_walk_certificate_changed_is_refused_for_what_it_lacks` |
/// | `proof.walk[].stakes[]` | `bundle_walk_stakes_changed_are_not_under_the_change_root` |
#[test]
fn every_field_of_a_bundle_is_one_the_tamper_tests_change() {
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let stake_fields = ["account", "proof", "validator"];
    // A bundle walked from genesis through no change.
    let f = fixture();
    let v = serde_json::to_value(bundle(&f)).unwrap();
    assert_eq!(keys(&v), ["chain", "format", "proof"]);
    let proof_fields = [
        "anchor",
        "certificate",
        "header",
        "outcome",
        "outcome_proof",
        "parent",
        "session",
        "stakes",
        "walk",
    ];
    assert_eq!(keys(&v["proof"]), proof_fields);
    assert_eq!(v["proof"]["anchor"], "genesis");
    assert_eq!(f.proof.stakes.len(), 3);
    assert_eq!(keys(&v["proof"]["stakes"][0]), stake_fields);
    // One walked from a trusted block through a change.
    let w = walk_fixture();
    let v = serde_json::to_value(w.bundle(Some(3))).unwrap();
    assert_eq!(keys(&v), ["chain", "format", "proof"]);
    assert_eq!(keys(&v["proof"]), proof_fields);
    assert_eq!(keys(&v["proof"]["anchor"]), ["block"]);
    assert_eq!(keys(&v["proof"]["anchor"]["block"]), ["header", "stakes"]);
    assert_eq!(
        keys(&v["proof"]["walk"][0]),
        ["certificate", "header", "stakes"]
    );
    for at in [
        "/proof/stakes/0",
        "/proof/anchor/block/stakes/0",
        "/proof/walk/0/stakes/0",
    ] {
        assert_eq!(keys(v.pointer(at).unwrap()), stake_fields, "{at}");
    }
}

#[test]
fn bundle_format_of_another_version_is_refused_as_such() {
    let f = fixture();
    for format in [
        "trust-outcome-proof/4",
        "trust-outcome-proof/0",
        "TRUST-OUTCOME-PROOF/3",
        "",
    ] {
        let mut b = bundle(&f);
        b.format = format.into();
        let want = Err(ProofError::UnsupportedFormat(format.into()));
        assert_eq!(check(&f, &b), want);
        assert_eq!(verify_bundle(&b, None, &trust(&f.doc)), want);
    }
    // A later version may add fields: it is named by its version, not refused for them.
    let bytes = tampered_json(&f, |v| {
        v["format"] = "trust-outcome-proof/4".into();
        v["decided_time"] = 1_700_000_000u64.into();
    });
    assert_eq!(
        check_bytes(&f, &bytes),
        Err(ProofError::UnsupportedFormat(
            "trust-outcome-proof/4".into()
        ))
    );
    let err = check_bytes(&f, &bytes).unwrap_err().to_string();
    assert!(
        err.contains("\"trust-outcome-proof/4\"") && err.contains("\"trust-outcome-proof/3\""),
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
        verify_bundle(&bundle(&f), None, &trust(&other_doc)),
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
    not_hex_is_malformed("header", |junk| {
        check(&f, &tampered(&f, |p| p.header = junk.into()))
    });
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
        assert_eq!(
            check(&f, &b),
            Err(ProofError::BadSignature {
                validator: who,
                height: 2
            }),
            "{i}"
        );
    }
    // Signatures of the right validators over another round than the one named.
    let b = tampered(&f, |p| {
        with_certificate(p, |c| c.round = malachitebft_core_types::Round::new(1))
    });
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::BadSignature { .. })
    ));
    // Too little power: two of three equal stakes is exactly 2/3; none at all.
    let h2 = &f.block2.block.header;
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&f.doc.chain, h2, &[k0, k1]))
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::InsufficientPower {
            height: 2,
            signed: 200,
            total: 300
        })
    );
    let b = tampered(&f, |p| with_certificate(p, |c| c.signatures.clear()));
    assert_eq!(
        check(&f, &b),
        Err(ProofError::InsufficientPower {
            height: 2,
            signed: 0,
            total: 300
        })
    );
    // A signer outside the genesis validators, even with a valid signature; one twice.
    let outsider = Keypair::from_label("proof-outsider");
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&f.doc.chain, h2, &[k0, k1, &outsider]))
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadSigner {
            validator: outsider.public(),
            height: 2
        })
    );
    let b = tampered(&f, |p| {
        p.certificate = hex::encode(certificate(&f.doc.chain, h2, &[k0, k1, k1]))
    });
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadSigner {
            validator: k1.public(),
            height: 2
        })
    );
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
    assert!(matches!(
        check(&f, &b),
        Err(ProofError::BadSignature { .. })
    ));
    // Not a certificate.
    not_hex_is_malformed("certificate", |junk| {
        check(&f, &tampered(&f, |p| p.certificate = junk.into()))
    });
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
            at: 1,
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
            at: 1,
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
            at: 1,
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
            at: 1,
            reason: "no proof".into()
        })
    );
    let b = tampered(&f, |p| p.stakes.clear());
    assert_eq!(
        check(&f, &b),
        Err(ProofError::BadStake {
            validator: f.keys[0].public(),
            at: 1,
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
            at: 1,
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
    let r = crate::cli::proof::verify_file(&path, &genesis, None, None, None).unwrap();
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
    assert_eq!((r.anchor, r.hops.clone()), (None, vec![]));
    let lines = r.lines();
    assert!(
        lines.contains(
            &"walked      from genesis, no change of the validator powers on the way".to_string()
        ),
        "{lines:?}"
    );
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
    assert_eq!(json["verdict"], "pass");
    assert_eq!(json["segments"]["valid"], 3);
    assert_eq!(json["signed_power"], "300");
    assert_eq!(json["anchor"], serde_json::Value::Null);
    assert_eq!(json["hops"], 0);
}

// Walks: a chain whose validator powers change twice, proven from genesis and from a
// trusted block; the anchor and the walk tampered with field by field.

/// A real chain of six certified blocks over three validators (100 staked each) whose
/// powers change twice: at block 2 `v0` bonds 200 more (300/100/100), at block 4 `v1`
/// unbonds all of its 100 (300/0/100). The certificates weigh differently under each set
/// of powers: block 4 is signed by `v0` and `v2` (400 of 500 after block 3, but only 200 of
/// 300 at genesis), block 6 by `v0` alone (300 of 400 after block 5, 300 of 500 after block
/// 3, 100 of 300 at genesis); the others by all three.
pub(crate) struct WalkFixture {
    /// The genesis file.
    pub(crate) file: GenesisDoc,
    /// Its contents.
    pub(crate) doc: Doc,
    pub(crate) session: Hash,
    pub(crate) keys: Vec<Keypair>,
    /// Block `h` at `blocks[h - 1]`.
    blocks: Vec<StoredBlock>,
    /// The state after block `h` at `states[h]` (`states[0]`: genesis).
    states: Vec<Contract>,
}

/// The heights where [`WalkFixture`]'s powers change.
const CHANGES: [u64; 2] = [2, 4];

/// The height of [`WalkFixture`]'s tip, the block its proofs are of.
const TIP: u64 = 6;

pub(crate) fn walk_fixture() -> WalkFixture {
    let (keys, file, doc) = three_validators("walk-v", "walk-test", 1_000);
    let chain = doc.chain;
    let session = Hash::sha256(b"a session decided before the walk");
    let mut state = Contract::new(&doc.genesis)
        .unwrap()
        .with_chain(chain)
        .state()
        .clone();
    state.outcomes.insert(session, outcome(keys[0].public()));
    let tx = |k: &Keypair, call: Call| Signed::sign(k, &chain, Tx { nonce: 0, call });
    let [k0, k1, k2] = [&keys[0], &keys[1], &keys[2]];
    let mut states = vec![Contract::from_state(state)];
    let mut blocks = Vec::new();
    let mut tip = Tip::genesis(chain);
    for h in 1..=TIP {
        let (txs, signers): (Vec<_>, Vec<&Keypair>) = match h {
            2 => (vec![tx(k0, Call::Bond { amount: 200 })], vec![k0, k1, k2]),
            4 => (vec![tx(k1, Call::Unbond { amount: 100 })], vec![k0, k2]),
            6 => (vec![], vec![k0]),
            _ => (vec![], vec![k0, k1, k2]),
        };
        let last = states.last().unwrap();
        let (block, done, dropped) =
            build_block(last, &tip, &keys[0], 1_795_658_870_000 + h * 1_000, &txs).unwrap();
        assert!(dropped.is_empty(), "block {h}: {dropped:?}");
        tip = tip.after(&block);
        blocks.push(StoredBlock {
            certificate: certificate(&chain, &block.header, &signers),
            block,
        });
        states.push(done.contract);
    }
    let w = WalkFixture {
        file,
        doc,
        session,
        keys,
        blocks,
        states,
    };
    // The powers change where the fixture says, and only there.
    let powers = |h: u64| -> Vec<u64> {
        w.keys
            .iter()
            .map(|k| w.state(h).state().accounts.get(&k.public()).unwrap().power)
            .collect()
    };
    assert_eq!(powers(0), [100, 100, 100]);
    assert_eq!(powers(2), [300, 100, 100]);
    assert_eq!(powers(4), [300, 0, 100]);
    for h in 1..=TIP {
        assert_eq!(
            powers(h) != powers(h - 1),
            CHANGES.contains(&h),
            "block {h}"
        );
    }
    w
}

impl WalkFixture {
    pub(crate) fn block(&self, h: u64) -> &StoredBlock {
        &self.blocks[usize::try_from(h).unwrap() - 1]
    }

    fn state(&self, h: u64) -> &Contract {
        &self.states[usize::try_from(h).unwrap()]
    }

    /// Block `h` as the user trusts it.
    pub(crate) fn trusted(&self, h: u64) -> TrustedBlock {
        TrustedBlock {
            height: h,
            hash: self.block(h).block.hash(),
        }
    }

    /// The proof of the tip walked from block `anchor` (`None`: genesis) through the
    /// blocks `hops`.
    fn proof_through(&self, anchor: Option<u64>, hops: &[u64]) -> OutcomeProof {
        let v = &self.doc.validators;
        let walk = Walk {
            anchor: match anchor {
                None => ProofAnchor::Genesis,
                Some(a) => anchor_at(self.block(a), self.state(a), v).unwrap(),
            },
            hops: hops
                .iter()
                .map(|&c| hop(self.block(c), self.state(c), v).unwrap())
                .collect(),
        };
        build(
            &self.session,
            self.state(TIP),
            self.block(TIP),
            Some(self.state(TIP - 1)),
            Some(self.block(TIP - 1)),
            v,
            walk,
        )
        .unwrap()
    }

    /// The bundle a node exports for the tip walked from `anchor` (`None`: genesis): every
    /// change above it.
    pub(crate) fn bundle(&self, anchor: Option<u64>) -> Bundle {
        let from = anchor.unwrap_or(0);
        let hops: Vec<u64> = CHANGES.into_iter().filter(|&c| c > from).collect();
        Bundle::of(self.proof_through(anchor, &hops)).unwrap()
    }

    /// `b` through its file text, checked as `proof verify` does trusting block
    /// `trusted` (`None`: no block).
    fn check(&self, b: &Bundle, trusted: Option<u64>) -> Result<Verified, ProofError> {
        let t = self.trust_with(trusted.map(|h| self.trusted(h)));
        verify_bundle(
            &parse_bundle(b.to_file_text().unwrap().as_bytes())?,
            None,
            &t,
        )
    }

    fn trust_with(&self, block: Option<TrustedBlock>) -> Trust<'_> {
        Trust {
            block,
            ..trust(&self.doc)
        }
    }

    /// `self.bundle(anchor)` with `change` made to its proof.
    fn tampered(&self, anchor: Option<u64>, change: impl FnOnce(&mut OutcomeProof)) -> Bundle {
        let mut b = self.bundle(anchor);
        change(&mut b.proof);
        b
    }
}

/// The anchor block of `p`.
fn anchor_block(p: &mut OutcomeProof) -> &mut AnchorBlock {
    match &mut p.anchor {
        ProofAnchor::Block(a) => a,
        ProofAnchor::Genesis => panic!("anchored at genesis"),
    }
}

/// `stakes[i]` with its account's stake set to `stake`, re-encoded.
fn restake(stakes: &mut [StakeProof], i: usize, stake: u64) {
    let mut acct: trust_contracts::Account =
        decode_entry(&hex::decode(stakes[i].account.as_ref().unwrap()).unwrap()).unwrap();
    acct.stake = stake;
    stakes[i].account = Some(hex::encode(
        trust_contracts::commitment::encode_entry_value(&acct),
    ));
}

fn hex_header(h: &BlockHeader) -> String {
    hex::encode(encoding::encode(h))
}

#[test]
fn a_walk_from_genesis_through_each_change_of_the_powers_verifies() {
    let w = walk_fixture();
    let b = w.bundle(None);
    assert_eq!(b.proof.walk.len(), 2);
    let v = w.check(&b, None).unwrap();
    assert_eq!(v.outcome, outcome(w.keys[0].public()));
    assert_eq!(v.header, w.block(TIP).block.header);
    // v0 alone signed block 6: 300 of the 400 the walk arrives at.
    assert_eq!(v.power, (300, 400));
    assert_eq!((v.anchor, v.hops), (None, CHANGES.to_vec()));
    // The same proof as the API serves it, checked by `verify` itself.
    let json = serde_json::to_string(&b.proof).unwrap();
    let back: OutcomeProof = serde_json::from_str(&json).unwrap();
    assert_eq!(
        verify(&back, &w.session, &trust(&w.doc)).unwrap().power,
        (300, 400)
    );
    // Weighed by the genesis powers instead (no walk), v0's signature would be 100 of 300:
    // the proof without its walk is refused, not counted against stale powers.
    let b = w.tampered(None, |p| p.walk.clear());
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::UnknownValidatorSet(SetUnknown::MissingChange {
            parent: TIP - 1
        }))
    );
}

#[test]
fn a_walk_from_a_trusted_block_verifies_with_that_block_trusted_and_only_then() {
    let w = walk_fixture();
    // From each block below the tip: the changes above it are walked.
    for a in 1..TIP {
        let b = w.bundle(Some(a));
        let want: Vec<u64> = CHANGES.into_iter().filter(|&c| c > a).collect();
        assert_eq!(b.proof.walk.len(), want.len(), "{a}");
        let v = w.check(&b, Some(a)).unwrap_or_else(|e| panic!("{a}: {e}"));
        assert_eq!(v.power, (300, 400), "{a}");
        assert_eq!((v.anchor, v.hops), (Some(w.trusted(a)), want), "{a}");
    }
    let b = w.bundle(Some(3));
    // No block trusted: the reason names the anchor, and how to trust it.
    let e = w.check(&b, None).unwrap_err();
    assert_eq!(
        e,
        ProofError::UnknownValidatorSet(SetUnknown::UntrustedAnchor(w.trusted(3)))
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("the validator set is unknown: the proof walks from block 3 (")
            && msg.contains(&format!("--trust {}", w.trusted(3))),
        "{msg}"
    );
    // Another block trusted, or a hash that is not block 3's.
    assert_eq!(
        w.check(&b, Some(2)),
        Err(ProofError::UnknownValidatorSet(SetUnknown::OtherAnchor {
            anchor: w.trusted(3),
            trusted: w.trusted(2)
        }))
    );
    let wrong = TrustedBlock {
        height: 3,
        hash: Hash::sha256(b"not block 3"),
    };
    let e = verify_bundle(&b, None, &w.trust_with(Some(wrong))).unwrap_err();
    assert_eq!(
        e,
        ProofError::UnknownValidatorSet(SetUnknown::OtherAnchor {
            anchor: w.trusted(3),
            trusted: wrong
        })
    );
    assert!(e.to_string().contains(&wrong.hash.to_hex()), "{e}");
    // A bundle walked from genesis while a block is trusted.
    assert_eq!(
        w.check(&w.bundle(None), Some(3)),
        Err(ProofError::UnknownValidatorSet(SetUnknown::GenesisAnchor(
            w.trusted(3)
        )))
    );
}

#[test]
fn dropping_a_change_from_the_walk_leaves_the_validator_set_unknown() {
    let w = walk_fixture();
    // The last change left out: the stakes after block 5 are not the powers walked to.
    let unknown = Err(ProofError::UnknownValidatorSet(SetUnknown::MissingChange {
        parent: TIP - 1,
    }));
    for (anchor, hops) in [
        (None, &[2][..]),
        (None, &[][..]),
        (Some(1), &[2][..]),
        (Some(3), &[][..]),
    ] {
        let b = Bundle::of(w.proof_through(anchor, hops)).unwrap();
        assert_eq!(w.check(&b, anchor), unknown, "{anchor:?} {hops:?}");
        assert!(
            w.check(&b, anchor)
                .unwrap_err()
                .to_string()
                .contains("the validator set is unknown"),
        );
    }
    // The first left out: block 4's certificate is weighed by the genesis powers, under
    // which v0 and v2 hold exactly 2/3.
    let b = Bundle::of(w.proof_through(None, &[4])).unwrap();
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::InsufficientPower {
            height: 4,
            signed: 200,
            total: 300
        })
    );
    // A block that changed nothing, walked all the same, is harmless.
    let b = Bundle::of(w.proof_through(None, &[2, 3, 4])).unwrap();
    assert_eq!(w.check(&b, None).unwrap().hops, [2, 3, 4]);
}

#[test]
fn bundle_walk_out_of_order_is_refused() {
    let w = walk_fixture();
    let out_of_order = |height, after| {
        Err(ProofError::HopOutOfOrder {
            height,
            after,
            before: TIP,
        })
    };
    // Swapped, repeated.
    let b = w.tampered(None, |p| p.walk.reverse());
    assert_eq!(w.check(&b, None), out_of_order(2, 4));
    let b = w.tampered(None, |p| p.walk.push(p.walk[1].clone()));
    assert_eq!(w.check(&b, None), out_of_order(4, 4));
    // At or below the anchor.
    let two = hop(w.block(2), w.state(2), &w.doc.validators).unwrap();
    let b = w.tampered(Some(3), |p| p.walk.insert(0, two.clone()));
    assert_eq!(w.check(&b, Some(3)), out_of_order(2, 3));
    let b = w.tampered(Some(2), |p| p.walk.insert(0, two.clone()));
    assert_eq!(w.check(&b, Some(2)), out_of_order(2, 2));
    // At or above the proven block.
    let six = hop(w.block(TIP), w.state(TIP), &w.doc.validators).unwrap();
    let b = w.tampered(None, |p| p.walk.push(six));
    assert_eq!(w.check(&b, None), out_of_order(TIP, 4));
    // Not a walk at all.
    let bytes = json_changed(&w.bundle(None), |v| v["proof"]["walk"] = "2,4".into());
    assert!(matches!(
        parse_bundle(&bytes),
        Err(ProofError::NotABundle(m)) if m.contains("invalid type")
    ));
}

#[test]
fn bundle_walk_header_changed_is_not_the_certified_change() {
    let w = walk_fixture();
    let h4 = w.block(4).block.header.clone();
    // A field the certificate covers: the header no longer hashes to the signed block.
    let b = w.tampered(None, |p| {
        let mut h = h4.clone();
        h.state_root = w.block(3).block.header.state_root;
        p.walk[1].header = hex_header(&h);
    });
    assert!(matches!(
        w.check(&b, None),
        Err(ProofError::CertificateMismatch { height: 4, got_height: 4, got_block, .. })
            if got_block == h4.hash()
    ));
    // Another block's header with block 4's certificate.
    let b = w.tampered(None, |p| {
        p.walk[1].header = hex_header(&w.block(3).block.header)
    });
    assert!(matches!(
        w.check(&b, None),
        Err(ProofError::CertificateMismatch {
            height: 3,
            got_height: 4,
            ..
        })
    ));
    // Another network's block.
    let elsewhere = Hash::sha256(b"elsewhere");
    let b = w.tampered(None, |p| {
        let mut h = h4.clone();
        h.chain = elsewhere;
        p.walk[1].header = hex_header(&h);
    });
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::WrongChain {
            expected: w.doc.chain,
            got: elsewhere
        })
    );
    not_hex_is_malformed("walk header", |junk| {
        w.check(&w.tampered(None, |p| p.walk[0].header = junk.into()), None)
    });
}

#[test]
fn bundle_walk_certificate_changed_is_refused_for_what_it_lacks() {
    let w = walk_fixture();
    let chain = w.doc.chain;
    let h4 = &w.block(4).block.header;
    let [k0, k1, k2] = [&w.keys[0], &w.keys[1], &w.keys[2]];
    let with_cert = |p: &mut OutcomeProof, change: &dyn Fn(&mut WireCertificate)| {
        let mut c: WireCertificate =
            decode_borsh(&hex::decode(&p.walk[1].certificate).unwrap()).unwrap();
        change(&mut c);
        p.walk[1].certificate = hex::encode(crate::consensus::codec::encode_borsh(&c).unwrap());
    };
    // A signature that does not verify.
    let b = w.tampered(None, |p| {
        with_cert(p, &|c| c.signatures[0].signature.0[0] ^= 1)
    });
    assert!(matches!(
        w.check(&b, None),
        Err(ProofError::BadSignature { height: 4, .. })
    ));
    // Too little power: v0 alone holds 300 of the 500 after block 3.
    let b = w.tampered(None, |p| {
        p.walk[1].certificate = hex::encode(certificate(&chain, h4, &[k0]))
    });
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::InsufficientPower {
            height: 4,
            signed: 300,
            total: 500
        })
    );
    // The same signers count for the powers after block 3 whatever the anchor.
    let b = w.tampered(Some(3), |p| {
        p.walk[0].certificate = hex::encode(certificate(&chain, h4, &[k1, k2]))
    });
    assert_eq!(
        w.check(&b, Some(3)),
        Err(ProofError::InsufficientPower {
            height: 4,
            signed: 200,
            total: 500
        })
    );
    // A signer outside the genesis validators; one twice.
    let outsider = Keypair::from_label("walk-outsider");
    let b = w.tampered(None, |p| {
        p.walk[1].certificate = hex::encode(certificate(&chain, h4, &[k0, k2, &outsider]))
    });
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::BadSigner {
            validator: outsider.public(),
            height: 4
        })
    );
    let b = w.tampered(None, |p| {
        p.walk[1].certificate = hex::encode(certificate(&chain, h4, &[k0, k0]))
    });
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::BadSigner {
            validator: k0.public(),
            height: 4
        })
    );
    // The certificate of another block.
    let b = w.tampered(None, |p| {
        p.walk[1].certificate = hex::encode(&w.block(2).certificate)
    });
    assert!(matches!(
        w.check(&b, None),
        Err(ProofError::CertificateMismatch {
            height: 4,
            got_height: 2,
            ..
        })
    ));
    not_hex_is_malformed("walk certificate", |junk| {
        w.check(
            &w.tampered(None, |p| p.walk[1].certificate = junk.into()),
            None,
        )
    });
}

#[test]
fn bundle_walk_stakes_changed_are_not_under_the_change_root() {
    let w = walk_fixture();
    let [v0, v1, _] = [0, 1, 2].map(|i| w.keys[i].public());
    let bad_at = |r: Result<Verified, ProofError>, who: AccountId, at: u64| matches!(r, Err(ProofError::BadStake { validator, at: a, .. }) if validator == who && a == at);
    // v1 keeps its stake after unbonding it (the stake it had before, under 4's root).
    let b = w.tampered(None, |p| restake(&mut p.walk[1].stakes, 1, 100));
    assert!(bad_at(w.check(&b, None), v1, 4));
    // v0's bond inflated.
    let b = w.tampered(None, |p| restake(&mut p.walk[0].stakes, 0, 1_000_000));
    assert!(bad_at(w.check(&b, None), v0, 2));
    // The stakes of block 3 (the same powers) under block 4's root.
    let three = stake_proofs(w.state(3), w.block(3), &w.doc.validators).unwrap();
    let b = w.tampered(None, |p| p.walk[1].stakes = three.clone());
    assert!(bad_at(w.check(&b, None), v0, 4));
    // A proof missing, or of no genesis validator.
    let b = w.tampered(None, |p| {
        p.walk[1].stakes.remove(1);
    });
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::BadStake {
            validator: v1,
            at: 4,
            reason: "no proof".into()
        })
    );
    let outsider = Keypair::from_label("walk-outsider").public();
    let b = w.tampered(None, |p| p.walk[0].stakes[2].validator = outsider);
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::BadStake {
            validator: outsider,
            at: 2,
            reason: "not a genesis validator".into()
        })
    );
    let b = w.tampered(None, |p| p.walk[0].stakes[0].proof = "zz".into());
    assert_eq!(w.check(&b, None), Err(ProofError::Malformed("stake proof")));
}

#[test]
fn bundle_anchor_changed_is_not_the_trusted_block() {
    let w = walk_fixture();
    // Anchored at genesis instead, the walk kept: a trusted block is not walked from.
    let b = w.tampered(Some(3), |p| p.anchor = ProofAnchor::Genesis);
    assert_eq!(
        w.check(&b, Some(3)),
        Err(ProofError::UnknownValidatorSet(SetUnknown::GenesisAnchor(
            w.trusted(3)
        )))
    );
    // Without a trusted block the genesis walk misses the change at 2: block 4's
    // certificate is weighed by the genesis powers, of which v0 and v2 hold only 2/3.
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::InsufficientPower {
            height: 4,
            signed: 200,
            total: 300
        })
    );
    // A genesis bundle given a block anchor: not the trusted one, or none trusted.
    let five = anchor_at(w.block(5), w.state(5), &w.doc.validators).unwrap();
    let b = w.tampered(None, |p| p.anchor = five.clone());
    assert_eq!(
        w.check(&b, None),
        Err(ProofError::UnknownValidatorSet(
            SetUnknown::UntrustedAnchor(w.trusted(5))
        ))
    );
    // Trusting it, the walk's blocks lie below the anchor.
    assert_eq!(
        w.check(&b, Some(5)),
        Err(ProofError::HopOutOfOrder {
            height: 2,
            after: 5,
            before: TIP
        })
    );
    // The proven block itself as the anchor.
    let six = anchor_at(w.block(TIP), w.state(TIP), &w.doc.validators).unwrap();
    let b = w.tampered(Some(5), |p| p.anchor = six);
    assert_eq!(
        w.check(&b, Some(TIP)),
        Err(ProofError::AnchorNotBelow {
            anchor: TIP,
            height: TIP
        })
    );
    // Neither genesis nor a block.
    let bytes = json_changed(&w.bundle(Some(3)), |v| {
        v["proof"]["anchor"] = "trusted".into()
    });
    assert!(matches!(
        parse_bundle(&bytes),
        Err(ProofError::NotABundle(m)) if m.contains("unknown variant `trusted`")
    ));
}

#[test]
fn bundle_anchor_header_changed_is_not_the_trusted_block() {
    let w = walk_fixture();
    let h3 = w.block(3).block.header.clone();
    let other = |e: Result<Verified, ProofError>, anchor: TrustedBlock| {
        e == Err(ProofError::UnknownValidatorSet(SetUnknown::OtherAnchor {
            anchor,
            trusted: w.trusted(3),
        }))
    };
    // Any field changed, to claim other stakes: its hash is not the trusted one.
    let mut h = h3.clone();
    h.state_root = w.block(2).block.header.state_root;
    let b = w.tampered(Some(3), |p| anchor_block(p).header = hex_header(&h));
    assert!(other(
        w.check(&b, Some(3)),
        TrustedBlock {
            height: 3,
            hash: h.hash()
        }
    ));
    // Another block's header (with block 3's stakes).
    let b = w.tampered(Some(3), |p| {
        anchor_block(p).header = hex_header(&w.block(2).block.header)
    });
    assert!(other(w.check(&b, Some(3)), w.trusted(2)));
    // Another network's.
    let elsewhere = Hash::sha256(b"elsewhere");
    let mut h = h3;
    h.chain = elsewhere;
    let b = w.tampered(Some(3), |p| anchor_block(p).header = hex_header(&h));
    assert_eq!(
        w.check(&b, Some(3)),
        Err(ProofError::WrongChain {
            expected: w.doc.chain,
            got: elsewhere
        })
    );
    not_hex_is_malformed("anchor header", |junk| {
        w.check(
            &w.tampered(Some(3), |p| anchor_block(p).header = junk.into()),
            Some(3),
        )
    });
}

#[test]
fn bundle_anchor_stakes_changed_are_not_under_the_trusted_root() {
    let w = walk_fixture();
    let [v0, v1, v2] = [0, 1, 2].map(|i| w.keys[i].public());
    // v1's stake said to be gone already (it goes at block 4), or v2's inflated.
    for (i, who, stake) in [(1, v1, 0), (2, v2, 1_000_000)] {
        let b = w.tampered(Some(3), |p| restake(&mut anchor_block(p).stakes, i, stake));
        assert!(
            matches!(
                w.check(&b, Some(3)),
                Err(ProofError::BadStake { validator, at: 3, .. }) if validator == who
            ),
            "{i}"
        );
    }
    // The genesis stakes, under block 1's root, passed off as block 3's.
    let one = stake_proofs(w.state(1), w.block(1), &w.doc.validators).unwrap();
    let b = w.tampered(Some(3), |p| anchor_block(p).stakes = one.clone());
    assert!(matches!(
        w.check(&b, Some(3)),
        Err(ProofError::BadStake { validator, at: 3, .. }) if validator == v0
    ));
    // Missing, none, or of no genesis validator.
    let b = w.tampered(Some(3), |p| {
        anchor_block(p).stakes.pop();
    });
    assert_eq!(
        w.check(&b, Some(3)),
        Err(ProofError::BadStake {
            validator: v2,
            at: 3,
            reason: "no proof".into()
        })
    );
    let b = w.tampered(Some(3), |p| anchor_block(p).stakes.clear());
    assert_eq!(
        w.check(&b, Some(3)),
        Err(ProofError::BadStake {
            validator: v0,
            at: 3,
            reason: "no proof".into()
        })
    );
    let outsider = Keypair::from_label("walk-outsider").public();
    let b = w.tampered(Some(3), |p| anchor_block(p).stakes[0].validator = outsider);
    assert_eq!(
        w.check(&b, Some(3)),
        Err(ProofError::BadStake {
            validator: outsider,
            at: 3,
            reason: "not a genesis validator".into()
        })
    );
    let b = w.tampered(Some(3), |p| {
        anchor_block(p).stakes[0].account = Some("zz".into())
    });
    assert_eq!(w.check(&b, Some(3)), Err(ProofError::Malformed("account")));
}

#[test]
fn a_bundle_of_the_older_format_is_refused_as_older() {
    let f = fixture();
    // A v1 bundle: the proof without anchor and walk, tagged /1.
    let mut v = serde_json::to_value(bundle(&f)).unwrap();
    v["format"] = "trust-outcome-proof/1".into();
    let proof = v["proof"].as_object_mut().unwrap();
    proof.remove("anchor");
    proof.remove("walk");
    let e = parse_bundle(&serde_json::to_vec_pretty(&v).unwrap()).unwrap_err();
    assert_eq!(e, ProofError::OlderFormat("trust-outcome-proof/1".into()));
    let msg = e.to_string();
    assert!(
        msg.contains("\"trust-outcome-proof/1\", an older one")
            && msg.contains("only \"trust-outcome-proof/3\"")
            && msg.ends_with("export the proof again"),
        "{msg}"
    );
    // The tag decides, whatever the body.
    let mut b = bundle(&f);
    b.format = "trust-outcome-proof/1".into();
    assert_eq!(
        verify_bundle(&b, None, &trust(&f.doc)),
        Err(ProofError::OlderFormat("trust-outcome-proof/1".into()))
    );
}

#[test]
fn a_trusted_block_is_a_height_a_colon_and_a_hash() {
    let hash = Hash::sha256(b"some block");
    let t: TrustedBlock = format!("12:{hash}").parse().unwrap();
    assert_eq!(t, TrustedBlock { height: 12, hash });
    assert_eq!(t.to_string().parse::<TrustedBlock>(), Ok(t));
    let upper = format!("12:{}", hash.to_hex().to_uppercase());
    assert_eq!(upper.parse::<TrustedBlock>(), Ok(t));
    let max = format!("{}:{hash}", "9".repeat(19));
    assert_eq!(
        max.parse::<TrustedBlock>().unwrap().height,
        9_999_999_999_999_999_999
    );
    assert_eq!(
        format!("0:{hash}").parse::<TrustedBlock>(),
        Err(TrustedBlockError::Genesis)
    );
    for bad in [
        String::new(),
        "12".into(),
        format!("{hash}"),
        format!(":{hash}"),
        format!("12:{}", &hash.to_hex()[1..]),
        format!("12:{}z", &hash.to_hex()[1..]),
        format!("012:{hash}"),
        format!("-1:{hash}"),
        format!("+1:{hash}"),
        format!(" 12:{hash}"),
        format!("12:{hash} "),
        format!("{}:{hash}", "1".repeat(20)),
        format!("12:{hash}:3"),
    ] {
        assert!(
            matches!(
                bad.parse::<TrustedBlock>(),
                Err(TrustedBlockError::Shape(_))
            ),
            "{bad:?}"
        );
    }
    // The pattern the API documents says the same.
    assert_eq!(TRUSTED_BLOCK_PATTERN, "^[1-9][0-9]{0,18}:[0-9a-fA-F]{64}$");
}

/// A genesis file with more validators than a proof may be checked against is refused,
/// never cut to the first [`MAX_PROOF_VALIDATORS`] (whose power would then be all the
/// power there is: a third of the real set could sign alone).
#[test]
fn a_validator_set_larger_than_a_proof_may_name_is_refused_not_truncated() {
    let f = fixture();
    let mut doc = f.doc.clone();
    let extra =
        (0..MAX_PROOF_VALIDATORS).map(|i| Keypair::from_label(&format!("extra{i}")).public());
    doc.validators.extend(extra);
    assert!(doc.validators.len() > MAX_PROOF_VALIDATORS);
    assert_eq!(
        verify(&f.proof, &f.session, &trust(&doc)),
        Err(ProofError::TooManyValidators {
            count: MAX_PROOF_VALIDATORS + 3,
            max: MAX_PROOF_VALIDATORS,
        })
    );
    // The node refuses to build one too.
    let state = Contract::new(&f.doc.genesis).unwrap();
    assert_eq!(
        stake_proofs(&state, &f.block1, &doc.validators),
        Err(BuildError::TooManyValidators(MAX_PROOF_VALIDATORS + 3))
    );
}
