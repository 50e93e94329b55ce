//! The verifier accepts a proof built from a real chain of blocks with real signatures,
//! and rejects each kind of tampering with its own error.

use trust_contracts::{
    Contract, Coverage, FailureBound, Genesis, GenesisAccount, Outcome, Params, TraceVerdict,
};
use trust_protocol::{Hash, Keypair, units::Ppm};

use super::*;
use crate::{
    chain::{Tip, build_block},
    testchain::sign_certificate,
};

/// A genesis file's contents, as a user holds them.
#[derive(Clone)]
struct Doc {
    chain: Hash,
    validators: Vec<AccountId>,
    genesis: Genesis,
}

fn anchor(doc: &Doc) -> Anchor<'_> {
    Anchor {
        chain: doc.chain,
        validators: &doc.validators,
        genesis: &doc.genesis,
    }
}

struct Fixture {
    doc: Doc,
    session: Hash,
    proof: OutcomeProof,
    keys: Vec<Keypair>,
    block2: StoredBlock,
}

fn outcome(provider: AccountId) -> Outcome {
    Outcome {
        provider,
        opened_at: 0,
        decided_at: 0,
        segments: Vec::new(),
        left_out: Vec::new(),
        trace: TraceVerdict::Pass,
        passing_weight: 3,
        undecided_weight: 0,
        total_weight: 3,
        error_at_conclusion: false,
        conclusion_judged: true,
        conclusion_sound: true,
        coverage: Coverage::default(),
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
    }
}

fn certificate(chain: &Hash, header: &BlockHeader, signers: &[&Keypair]) -> Vec<u8> {
    sign_certificate(chain, header, signers)
}

/// Three validators with 100 staked each; an outcome in the state; blocks 1 and 2, block 2
/// certified by all three.
fn fixture() -> Fixture {
    let keys: Vec<Keypair> = (0..3)
        .map(|i| Keypair::from_label(&format!("proof-v{i}")))
        .collect();
    let doc = Doc {
        chain: Hash::sha256(b"proof-test"),
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
    let chain = doc.chain;
    let session = Hash::sha256(b"a decided session");
    let mut state = Contract::new(&doc.genesis).unwrap().state().clone();
    state.outcomes.insert(session, outcome(keys[0].public()));
    let c0 = Contract::from_state(state);
    let tip0 = Tip::genesis(chain);
    let (block1, done1, _) = build_block(&c0, &tip0, keys[0].public(), 0, &[]);
    let tip1 = tip0.after(&block1);
    let (block2, done2, _) = build_block(&done1.contract, &tip1, keys[1].public(), 0, &[]);
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
        doc,
        session,
        proof,
        keys,
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
