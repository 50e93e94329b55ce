//! Outcome proofs: what a node serves so that a user can check a session's outcome without
//! trusting that node, and the check itself. Pure: no I/O, no async.
//!
//! # What a proof holds
//!
//! For a session decided by the state at the tip height `h`:
//!
//! 1. the outcome's leaf value (its canonical encoding) and its Merkle proof under the
//!    `state_root` of block `h`'s header ([`trust_contracts::commitment`]);
//! 2. that header, and the commit certificate that decided it (precommit signatures over
//!    the header's hash, which is the block id consensus votes on);
//! 3. the header of block `h - 1`, linked by `header.prev_hash`, and for every genesis
//!    validator its account entry with a Merkle proof under that parent's `state_root`.
//!    The voting power at height `h` is the validators' bonded stake after block `h - 1`
//!    (`consensus::driver::validator_set`), so these proofs let the client compute the
//!    powers itself. At height 1 the powers come from the genesis file instead.
//!
//! # What the client trusts
//!
//! Only its own `genesis.json`: the chain id and the genesis validator keys (and, at
//! height 1, the genesis stakes). It checks the chain id, the hash link, the stake proofs,
//! every signature, that the signers are distinct genesis validators holding more than
//! 2/3 of the power so computed, and the outcome's proof. It does not replay the chain:
//! the stakes are those of the state that the certified block extends, as attested by the
//! very validators whose signatures are counted. A forgery therefore needs the keys of
//! genesis validators able to certify a block on top of a parent state in which they hold
//! more than 2/3 of the stake; the BFT assumption (less than 1/3 faulty power) rules that
//! out for the real chain, but a client that wants no reliance on the signers' own
//! account of the stakes must walk the certificates from genesis (not built yet).
//!
//! # Bundles: proofs kept in a file
//!
//! A [`Bundle`] is a proof as `trust-node proof export` writes it, to be checked later,
//! anywhere, by `trust-node proof verify` with nothing but a genesis file: one JSON object
//! `{"format": "trust-outcome-proof/1", "chain": <chain id>, "proof": <OutcomeProof>}`.
//! [`parse_bundle`] reads one (the format tag first, so that a later version is named as
//! such rather than refused for its new fields) and [`verify_bundle`] checks it. The
//! `chain` field is a label for the reader: it must equal the genesis file's chain id,
//! and the certified header's chain must too.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use trust_contracts::{
    Account, Contract, Genesis, Outcome, StateKey, commitment::decode_entry, verify_entry,
};
use trust_protocol::{AccountId, Hash, block::BlockHeader, encoding};

use crate::{
    consensus::{
        codec::{WireCertificate, decode_borsh},
        context::{BlockId, Vote},
        signing::{verify_digest, vote_digest},
    },
    ledger::StoredBlock,
};

/// Most validators a proof may name (bounds the client's work).
pub const MAX_PROOF_VALIDATORS: usize = 1024;

/// The format tag of a [`Bundle`] this version writes and reads.
pub const BUNDLE_FORMAT: &str = "trust-outcome-proof/1";

/// Largest bundle file read: [`MAX_PROOF_VALIDATORS`] stake proofs fit many times over.
pub const MAX_BUNDLE_BYTES: u64 = 16 * 1024 * 1024;

/// An outcome proof in a file of its own: what `proof export` writes and `proof verify`
/// checks against a genesis file alone (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// [`BUNDLE_FORMAT`].
    pub format: String,
    /// The chain id of the network the proof is from (its genesis file's).
    pub chain: Hash,
    /// The proof.
    pub proof: OutcomeProof,
}

impl Bundle {
    /// `proof` in a bundle of this version, labelled with the chain its header names.
    pub fn of(proof: OutcomeProof) -> Result<Self, ProofError> {
        let header: BlockHeader = encoding::decode(&unhex("header", &proof.header)?)
            .map_err(|_| ProofError::Malformed("header"))?;
        Ok(Bundle {
            format: BUNDLE_FORMAT.to_string(),
            chain: header.chain,
            proof,
        })
    }

    /// The bundle as its file holds it: pretty JSON ending in a newline.
    pub fn to_file_text(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }
}

/// Reads a bundle file's bytes. The format tag is read first, so that a bundle of another
/// version is refused as such ([`ProofError::UnsupportedFormat`]) whatever its layout;
/// anything that is not a whole bundle of this version (a file cut short, not JSON, a
/// missing or unknown field) is [`ProofError::NotABundle`] with the parser's message.
pub fn parse_bundle(bytes: &[u8]) -> Result<Bundle, ProofError> {
    /// Only the tag; other fields are skipped (but must still be JSON).
    #[derive(Deserialize)]
    struct Tag {
        format: String,
    }
    let not_a_bundle = |e: serde_json::Error| ProofError::NotABundle(e.to_string());
    let tag: Tag = serde_json::from_slice(bytes).map_err(not_a_bundle)?;
    if tag.format != BUNDLE_FORMAT {
        return Err(ProofError::UnsupportedFormat(tag.format));
    }
    serde_json::from_slice(bytes).map_err(not_a_bundle)
}

/// Checks a bundle against the user's genesis file: its format, that it is of this
/// genesis's chain, and its proof ([`verify`]) for the session it names.
pub fn verify_bundle(bundle: &Bundle, anchor: &Anchor<'_>) -> Result<Verified, ProofError> {
    if bundle.format != BUNDLE_FORMAT {
        return Err(ProofError::UnsupportedFormat(bundle.format.clone()));
    }
    if bundle.chain != anchor.chain {
        return Err(ProofError::WrongChain {
            expected: anchor.chain,
            got: bundle.chain,
        });
    }
    verify(&bundle.proof, &bundle.proof.session, anchor)
}

/// A session's outcome with everything needed to check it against a genesis file. Byte
/// fields are lowercase hex of the canonical encodings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeProof {
    /// The session.
    #[schema(value_type = String)]
    pub session: Hash,
    /// The outcome's leaf value (its canonical encoding).
    pub outcome: String,
    /// The outcome's Merkle proof under `header`'s state root.
    pub outcome_proof: String,
    /// The header of the block whose state root carries the outcome.
    pub header: String,
    /// The commit certificate that decided that block.
    pub certificate: String,
    /// The header of the block before (none at height 1); `header.prev_hash` is its hash.
    pub parent: Option<String>,
    /// Every genesis validator's account under the parent's state root (empty at height 1).
    pub stakes: Vec<StakeProof>,
}

/// One validator's account entry and its proof under the parent block's state root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StakeProof {
    /// The validator.
    #[schema(value_type = String)]
    pub validator: AccountId,
    /// Its account's leaf value (none: no account, no stake).
    pub account: Option<String>,
    /// The Merkle proof.
    pub proof: String,
}

/// Why a proof could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No such decided session in the state.
    #[error("session {0} has no outcome")]
    NoOutcome(Hash),
    /// The state does not belong to the block given (a race with a new block).
    #[error("the state does not match block {0}'s state root")]
    StateMismatch(u64),
    /// The state before the tip block is not held (after a restart, until the next block).
    #[error("the state before block {0} is not held here yet; retry after the next block")]
    NoParentState(u64),
    /// The block's certificate is not stored.
    #[error("block {0} has no commit certificate")]
    NoCertificate(u64),
}

/// Why a proof does not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// A field is not hex of a well-formed value.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// The proof (its bundle's label, or its block) belongs to another network, whose
    /// validators this genesis does not know.
    #[error(
        "the proof is of chain {got}, not of this genesis file's chain {expected}: its \
         validators are unknown here"
    )]
    WrongChain {
        /// This genesis file's chain id.
        expected: Hash,
        /// The header's.
        got: Hash,
    },
    /// The parent header does not hash to `prev_hash`, or is not the height below.
    #[error("the parent header is not the one block {0} extends")]
    BrokenLink(u64),
    /// A validator's stake proof is missing or does not hold.
    #[error("stake of validator {validator}: {reason}")]
    BadStake {
        /// The validator.
        validator: AccountId,
        /// What is wrong.
        reason: String,
    },
    /// The certificate is for another height or block.
    #[error("the certificate decides {got_height}/{got_block}, not block {height} ({block})")]
    CertificateMismatch {
        /// The header's height.
        height: u64,
        /// The header's hash.
        block: Hash,
        /// The certificate's height.
        got_height: u64,
        /// The certificate's block id.
        got_block: Hash,
    },
    /// A signer is not a genesis validator, or signs twice.
    #[error("certificate signer {0} is not a distinct genesis validator")]
    BadSigner(AccountId),
    /// A signature does not verify.
    #[error("certificate signature of {0} does not verify")]
    BadSignature(AccountId),
    /// The signers do not hold more than 2/3 of the voting power.
    #[error("the certificate carries {signed} of {total} voting power, not more than 2/3")]
    InsufficientPower {
        /// Power of the valid signatures.
        signed: u128,
        /// Total power at that height.
        total: u128,
    },
    /// The outcome's Merkle proof does not hold under the certified root.
    #[error("the outcome is not under the certified state root: {0}")]
    BadOutcomeProof(String),
    /// A bundle file that is cut short or is not a bundle at all (the parser's message).
    #[error("truncated or not a proof bundle: {0}")]
    NotABundle(String),
    /// A bundle of a format version this one does not read.
    #[error("the bundle's format is {0:?}; this version reads only {BUNDLE_FORMAT:?}")]
    UnsupportedFormat(String),
}

/// Builds the proof of `session`'s outcome from the state at the tip (`state`, after
/// `tip`), the state before it (`parent_state`, after `parent`; none at height 1), and
/// the genesis `validators`.
pub fn build(
    session: &Hash,
    state: &Contract,
    tip: &StoredBlock,
    parent_state: Option<&Contract>,
    parent: Option<&StoredBlock>,
    validators: &[AccountId],
) -> Result<OutcomeProof, BuildError> {
    let header = &tip.block.header;
    if state.state_root() != header.state_root {
        return Err(BuildError::StateMismatch(header.height));
    }
    if tip.certificate.is_empty() {
        return Err(BuildError::NoCertificate(header.height));
    }
    let key = StateKey::Outcome(*session);
    let (value, proof) = state
        .prove(&key)
        .ok_or(BuildError::StateMismatch(header.height))?;
    let value = value.ok_or(BuildError::NoOutcome(*session))?;
    let (parent_hex, stakes) = if header.height > 1 {
        let (Some(pstate), Some(pblock)) = (parent_state, parent) else {
            return Err(BuildError::NoParentState(header.height));
        };
        if pstate.state_root() != pblock.block.header.state_root {
            return Err(BuildError::NoParentState(header.height));
        }
        let mut stakes = Vec::with_capacity(validators.len());
        for v in validators.iter().take(MAX_PROOF_VALIDATORS) {
            let (account, proof) = pstate
                .prove(&StateKey::Account(*v))
                .ok_or(BuildError::NoParentState(header.height))?;
            stakes.push(StakeProof {
                validator: *v,
                account: account.map(hex::encode),
                proof: hex::encode(encoding::encode(&proof)),
            });
        }
        (
            Some(hex::encode(encoding::encode(&pblock.block.header))),
            stakes,
        )
    } else {
        (None, Vec::new())
    };
    Ok(OutcomeProof {
        session: *session,
        outcome: hex::encode(value),
        outcome_proof: hex::encode(encoding::encode(&proof)),
        header: hex::encode(encoding::encode(header)),
        certificate: hex::encode(&tip.certificate),
        parent: parent_hex,
        stakes,
    })
}

fn unhex(what: &'static str, s: &str) -> Result<Vec<u8>, ProofError> {
    hex::decode(s).map_err(|_| ProofError::Malformed(what))
}

/// What a checked proof established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The outcome.
    pub outcome: Outcome,
    /// The certified block that carries it.
    pub header: BlockHeader,
    /// Power of the valid signatures, and the total.
    pub power: (u128, u128),
}

/// What the client trusts: its own genesis file's chain id, validators and genesis state
/// (the node's `GenesisDoc`).
#[derive(Debug, Clone, Copy)]
pub struct Anchor<'a> {
    /// The chain id (`GenesisDoc::chain_id`).
    pub chain: Hash,
    /// The genesis validators.
    pub validators: &'a [AccountId],
    /// The contract's genesis (its stakes weigh the certificate of block 1).
    pub genesis: &'a Genesis,
}

/// Checks `proof` for `session` against the user's genesis file (see the module doc).
pub fn verify(
    proof: &OutcomeProof,
    session: &Hash,
    anchor: &Anchor<'_>,
) -> Result<Verified, ProofError> {
    let chain = anchor.chain;
    let header: BlockHeader = encoding::decode(&unhex("header", &proof.header)?)
        .map_err(|_| ProofError::Malformed("header"))?;
    if header.chain != chain {
        return Err(ProofError::WrongChain {
            expected: chain,
            got: header.chain,
        });
    }
    let validators: Vec<AccountId> = {
        let mut seen = BTreeSet::new();
        anchor
            .validators
            .iter()
            .filter(|v| seen.insert(**v))
            .take(MAX_PROOF_VALIDATORS)
            .copied()
            .collect()
    };

    // Every stake proof is of a genesis validator: one of any other account is not part
    // of this network's validator set.
    let known: BTreeSet<&AccountId> = validators.iter().collect();
    if let Some(s) = proof.stakes.iter().find(|s| !known.contains(&s.validator)) {
        return Err(ProofError::BadStake {
            validator: s.validator,
            reason: "not a genesis validator".to_string(),
        });
    }

    // The stakes the height's voting power is made of.
    let stakes: Vec<u64> = if header.height <= 1 {
        let genesis = Contract::new(anchor.genesis)
            .map_err(|_| ProofError::Malformed("genesis"))?
            .with_chain(anchor.chain);
        validators
            .iter()
            .map(|v| genesis.state().accounts.get(v).map_or(0, |a| a.stake))
            .collect()
    } else {
        let parent: BlockHeader = encoding::decode(&unhex(
            "parent header",
            proof
                .parent
                .as_deref()
                .ok_or(ProofError::BrokenLink(header.height))?,
        )?)
        .map_err(|_| ProofError::Malformed("parent header"))?;
        if parent.hash() != header.prev_hash || parent.height.checked_add(1) != Some(header.height)
        {
            return Err(ProofError::BrokenLink(header.height));
        }
        let mut out = Vec::with_capacity(validators.len());
        for v in &validators {
            let bad = |reason: &str| ProofError::BadStake {
                validator: *v,
                reason: reason.to_string(),
            };
            let entry = proof
                .stakes
                .iter()
                .find(|s| s.validator == *v)
                .ok_or_else(|| bad("no proof"))?;
            let value = entry
                .account
                .as_deref()
                .map(|a| unhex("account", a))
                .transpose()?;
            let p = encoding::decode(&unhex("stake proof", &entry.proof)?)
                .map_err(|_| bad("malformed proof"))?;
            verify_entry(
                parent.state_root,
                &StateKey::Account(*v),
                value.as_deref(),
                &p,
            )
            .map_err(|e| bad(&e.reason))?;
            let stake = match value {
                Some(bytes) => {
                    decode_entry::<Account>(&bytes)
                        .ok_or_else(|| bad("malformed account"))?
                        .stake
                }
                None => 0,
            };
            out.push(stake);
        }
        out
    };
    // As `consensus::driver::validator_set`: stake-weighted, or one each when none has any.
    let powers: Vec<u64> = if stakes.iter().all(|s| *s == 0) {
        vec![1; stakes.len()]
    } else {
        stakes
    };
    let total: u128 = powers.iter().map(|p| u128::from(*p)).sum();

    let cert: WireCertificate = decode_borsh(&unhex("certificate", &proof.certificate)?)
        .map_err(|_| ProofError::Malformed("certificate"))?;
    let block = header.hash();
    if cert.height.0 != header.height || cert.value_id != BlockId::of(block) {
        return Err(ProofError::CertificateMismatch {
            height: header.height,
            block,
            got_height: cert.height.0,
            got_block: cert.value_id.hash(),
        });
    }
    let mut signed: u128 = 0;
    let mut seen = BTreeSet::new();
    for s in cert.signatures.iter().take(MAX_PROOF_VALIDATORS) {
        let who = s.address.account();
        let Some(i) = validators.iter().position(|v| *v == who) else {
            return Err(ProofError::BadSigner(who));
        };
        if !seen.insert(who) {
            return Err(ProofError::BadSigner(who));
        }
        let vote = Vote {
            vote_type: malachitebft_core_types::VoteType::Precommit,
            height: cert.height,
            round: cert.round,
            value: malachitebft_core_types::NilOrVal::Val(cert.value_id),
            validator: s.address,
            extension: None,
        };
        if !verify_digest(&s.address, &vote_digest(&chain, &vote), &s.signature) {
            return Err(ProofError::BadSignature(who));
        }
        signed = signed.saturating_add(u128::from(powers.get(i).copied().unwrap_or(0)));
    }
    if signed.saturating_mul(3) <= total.saturating_mul(2) {
        return Err(ProofError::InsufficientPower { signed, total });
    }

    let value = unhex("outcome", &proof.outcome)?;
    let p = encoding::decode(&unhex("outcome proof", &proof.outcome_proof)?)
        .map_err(|_| ProofError::Malformed("outcome proof"))?;
    verify_entry(
        header.state_root,
        &StateKey::Outcome(*session),
        Some(&value),
        &p,
    )
    .map_err(|e| ProofError::BadOutcomeProof(e.reason))?;
    let outcome = decode_entry::<Outcome>(&value).ok_or(ProofError::Malformed("outcome"))?;
    Ok(Verified {
        outcome,
        header,
        power: (signed, total),
    })
}

#[cfg(test)]
pub(crate) mod tests;
