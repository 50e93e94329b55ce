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
//!    validator its account entry with a Merkle proof under that parent's `state_root`
//!    (none at height 1);
//! 4. the **anchor** the validator powers are walked from: genesis (the genesis stakes), or
//!    a block `a < h` the client trusts by height and hash, given as its header with every
//!    genesis validator's account proven under its `state_root`;
//! 5. the **walk**: for every block `c` with `a < c < h` whose execution changed the
//!    validator powers, in ascending order, its header, its commit certificate and every
//!    genesis validator's account proven under its `state_root`.
//!
//! The voting power at a height is the validators' bonded stake after the block below it
//! (`consensus::driver::validator_set`: stake-weighted, or one each when none has any). A
//! node records which blocks changed it when it commits them (`ledger/power_changes`), so
//! it knows which blocks the walk must hold.
//!
//! # What the client checks, and what it trusts
//!
//! It trusts its own `genesis.json` (the chain id, the genesis validators' keys and, for a
//! walk from genesis, their genesis stakes) and, when it gives one, a trusted block
//! `HEIGHT:HASH` (`--trust`). Nothing in the proof is trusted. Starting from the powers
//! `P` of the anchor (genesis stakes, or the stakes proven under the trusted header, whose
//! hash must be the trusted one), for each walk block `c` in ascending order it checks
//! that `c`'s certificate is signed by distinct genesis validators holding more than 2/3 of
//! `P` (the powers that certified `c` are those after `c - 1`, which are `P` because no
//! change happened in between), then takes the powers proven under `c`'s state root as the
//! new `P`. Finally the certified block `h` must be signed by more than 2/3 of `P`, and the
//! stakes proven under the parent's root must give exactly `P`: if they do not, a change is
//! missing from the walk and the validator set is unknown. Then the outcome's proof. (A
//! walk that leaves out a change whose later certificates still carry more than 2/3 of the
//! powers walked so far is accepted: every block counted is still vouched for by more than
//! 2/3 of a set of powers the client derived from its trust root.)
//!
//! Every certificate counted is thus weighed by powers the client derived itself from its
//! trust root, never by stakes the signers vouch for: a forger needs more than 2/3 of the
//! power of a set the client already trusts. Keys of validators that have since unbonded
//! (or sold their keys) are the danger of a walk from genesis: whoever holds more than 2/3
//! of the *genesis* stake's keys can forge a whole alternative history from genesis, however
//! long ago that stake left (a long-range attack). A recent trusted block defeats that: the
//! walk starts from the powers of that block, so old keys weigh nothing unless they still
//! hold stake there, and the forger needs more than 2/3 of the *current* stake's keys,
//! which the BFT assumption (less than 1/3 faulty power) rules out.
//!
//! # Bundles: proofs kept in a file
//!
//! A [`Bundle`] is a proof as `trust-node proof export` writes it, to be checked later,
//! anywhere, by `trust-node proof verify` with nothing but a genesis file (and, for a bundle
//! anchored at a block, that block's height and hash): one JSON object
//! `{"format": "trust-outcome-proof/3", "chain": <chain id>, "proof": <OutcomeProof>,
//! "opening"?: <TraceOpening>}`, the anchor and the walk inside the proof. [`parse_bundle`] reads one (the format tag first,
//! so that another version is named as such rather than refused for its fields) and
//! [`verify_bundle`] checks it. The `chain` field is a label for the reader: it must equal
//! the genesis file's chain id, and the certified header's chain must too.
//!
//! Bundles of the older formats `trust-outcome-proof/1` (no anchor, no walk: the powers were
//! those the certified block's own parent state attests) and `/2` (outcomes without their
//! segments' ids) are refused as such
//! ([`ProofError::OlderFormat`]), not checked the old way: accepting them would let a
//! forger pick the weaker check. The session's proof can be exported again.
//!
//! The genesis file stays needed with a trusted block: the chain id is a hash of the
//! genesis document (so a bundle could carry it), but the validator keys are the client's
//! own genesis file's, and a bundle is kept small by not carrying every genesis account.

use std::{collections::BTreeSet, fmt, str::FromStr};

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
pub const BUNDLE_FORMAT: &str = "trust-outcome-proof/3";

/// Format tags of earlier bundles, which this version refuses as older
/// ([`ProofError::OlderFormat`]): `/2` proved outcomes without their segments' ids.
pub const OLDER_BUNDLE_FORMATS: [&str; 2] = ["trust-outcome-proof/1", "trust-outcome-proof/2"];

/// Largest bundle file read: [`MAX_PROOF_VALIDATORS`] stake proofs fit many times over.
pub const MAX_BUNDLE_BYTES: u64 = 16 * 1024 * 1024;

/// An outcome proof in a file of its own: what `proof export` writes and `proof verify`
/// checks against a genesis file (and a trusted block) alone (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// [`BUNDLE_FORMAT`].
    pub format: String,
    /// The chain id of the network the proof is from (its genesis file's).
    pub chain: Hash,
    /// The proof.
    pub proof: OutcomeProof,
    /// The provider's opening of the session's segments, if it put one in (`proof export
    /// --opening`): what ties the outcome to the trace (`proof verify --trace`). Not
    /// covered by the proof; checked against the ids the proven outcome carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<trust_protocol::TraceOpening>,
}

impl Bundle {
    /// `proof` in a bundle of this version, labelled with the chain its header names.
    pub fn of(proof: OutcomeProof) -> Result<Self, ProofError> {
        let header = decode_header("header", &proof.header)?;
        Ok(Bundle {
            format: BUNDLE_FORMAT.to_string(),
            chain: header.chain,
            proof,
            opening: None,
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
/// version is refused as such ([`ProofError::OlderFormat`], [`ProofError::UnsupportedFormat`])
/// whatever its layout; anything that is not a whole bundle of this version (a file cut
/// short, not JSON, a missing or unknown field) is [`ProofError::NotABundle`] with the
/// parser's message.
pub fn parse_bundle(bytes: &[u8]) -> Result<Bundle, ProofError> {
    /// Only the tag; other fields are skipped (but must still be JSON).
    #[derive(Deserialize)]
    struct Tag {
        format: String,
    }
    let not_a_bundle = |e: serde_json::Error| ProofError::NotABundle(e.to_string());
    let tag: Tag = serde_json::from_slice(bytes).map_err(not_a_bundle)?;
    check_format(&tag.format)?;
    serde_json::from_slice(bytes).map_err(not_a_bundle)
}

fn check_format(format: &str) -> Result<(), ProofError> {
    if format == BUNDLE_FORMAT {
        Ok(())
    } else if OLDER_BUNDLE_FORMATS.contains(&format) {
        Err(ProofError::OlderFormat(format.to_string()))
    } else {
        Err(ProofError::UnsupportedFormat(format.to_string()))
    }
}

/// Checks a bundle against what the user trusts: its format, that it is of this genesis's
/// chain and (given `session`) of that session, and its proof ([`verify`]) for the session
/// it names.
pub fn verify_bundle(
    bundle: &Bundle,
    session: Option<&Hash>,
    trust: &Trust<'_>,
) -> Result<Verified, ProofError> {
    check_format(&bundle.format)?;
    if let Some(expected) = session
        && *expected != bundle.proof.session
    {
        return Err(ProofError::OtherSession {
            expected: *expected,
            got: bundle.proof.session,
        });
    }
    if bundle.chain != trust.chain {
        return Err(ProofError::WrongChain {
            expected: trust.chain,
            got: bundle.chain,
        });
    }
    verify(&bundle.proof, &bundle.proof.session, trust)
}

/// A session's outcome with everything needed to check it against a genesis file (and a
/// trusted block, if it is anchored at one). Byte fields are lowercase hex of the
/// canonical encodings.
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
    /// Where the walk of validator powers starts.
    pub anchor: ProofAnchor,
    /// Every block after the anchor and before `header` whose execution changed the
    /// validator powers, in ascending height.
    pub walk: Vec<Hop>,
}

/// Where a proof's walk of validator powers starts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProofAnchor {
    /// Genesis: the powers are the genesis stakes of the client's genesis file.
    #[default]
    Genesis,
    /// A block the client trusts by height and hash (`--trust HEIGHT:HASH`).
    Block(AnchorBlock),
}

/// A trusted block as a proof's anchor: its header, and the stakes after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnchorBlock {
    /// The block's header (its hash is the one trusted).
    pub header: String,
    /// Every genesis validator's account under the header's state root: the powers that
    /// certify the block after it.
    pub stakes: Vec<StakeProof>,
}

/// One step of the walk: a certified block whose execution changed the validator powers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Hop {
    /// The block's header.
    pub header: String,
    /// The commit certificate that decided it (weighed by the powers before it).
    pub certificate: String,
    /// Every genesis validator's account under the header's state root: the powers after
    /// it.
    pub stakes: Vec<StakeProof>,
}

/// One validator's account entry and its proof under a block's state root.
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

/// The shape of a [`TrustedBlock`] as text, exactly what its parser takes: a height of 1
/// to 19 digits without a leading zero, a colon, 64 hex characters.
pub const TRUSTED_BLOCK_PATTERN: &str = "^[1-9][0-9]{0,18}:[0-9a-fA-F]{64}$";

/// A block the client trusts: `HEIGHT:HASH` on the command line and in `?trust=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustedBlock {
    /// Its height (at least 1: genesis is trusted through the genesis file).
    pub height: u64,
    /// Its hash.
    pub hash: Hash,
}

impl fmt::Display for TrustedBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.height, self.hash)
    }
}

/// Why a `HEIGHT:HASH` does not name a trusted block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrustedBlockError {
    /// Not a height, a colon and 64 hex characters.
    #[error(
        "a trusted block is HEIGHT:HASH (a block height, a colon, the block's 64-hex-character \
         hash), not {0:?}"
    )]
    Shape(String),
    /// Height 0.
    #[error(
        "height 0 is genesis, which the genesis file anchors already: leave the trusted block \
         out to walk from genesis"
    )]
    Genesis,
}

impl FromStr for TrustedBlock {
    type Err = TrustedBlockError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = || TrustedBlockError::Shape(s.chars().take(100).collect());
        let (height, hash) = s.split_once(':').ok_or_else(shape)?;
        // Up to 19 digits, no leading zero: every such height fits a u64
        // ([`TRUSTED_BLOCK_PATTERN`]).
        let digits = height.bytes().all(|b| b.is_ascii_digit());
        if !digits || height.is_empty() || height.len() > 19 || hash.len() != 64 {
            return Err(shape());
        }
        let hash = Hash::from_hex(hash).map_err(|_| shape())?;
        if height == "0" {
            return Err(TrustedBlockError::Genesis);
        }
        if height.starts_with('0') {
            return Err(shape());
        }
        let height: u64 = height.parse().map_err(|_| shape())?;
        Ok(TrustedBlock { height, hash })
    }
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
    /// More genesis validators than a proof may name: a client would refuse the proof.
    #[error(
        "the network has {0} validators, more than the {MAX_PROOF_VALIDATORS} a proof may name"
    )]
    TooManyValidators(usize),
}

/// Why the validator powers a certificate is weighed by are not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetUnknown {
    /// The stakes after the certified block's parent are not the powers walked to.
    #[error(
        "the stakes proven after block {parent} are not the powers walked to from the anchor: \
         a change of validator powers is missing from the walk"
    )]
    MissingChange {
        /// The parent's height.
        parent: u64,
    },
    /// The bundle walks from a block, and no block is trusted.
    #[error(
        "the proof walks from block {height} ({hash}), which is not trusted here (give --trust \
         {0} if you trust that block)",
        height = .0.height,
        hash = .0.hash
    )]
    UntrustedAnchor(TrustedBlock),
    /// The bundle walks from another block than the trusted one.
    #[error(
        "the proof walks from block {} ({}), not from the trusted block {} ({})",
        anchor.height,
        anchor.hash,
        trusted.height,
        trusted.hash
    )]
    OtherAnchor {
        /// The bundle's anchor.
        anchor: TrustedBlock,
        /// The trusted block.
        trusted: TrustedBlock,
    },
    /// The bundle walks from genesis, and a block is trusted.
    #[error(
        "the proof walks from genesis, not from the trusted block {height} ({hash}) (export \
         it again with --trust {0})",
        height = .0.height,
        hash = .0.hash
    )]
    GenesisAnchor(TrustedBlock),
}

/// Why a proof does not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// A field is not hex of a well-formed value.
    #[error("malformed {0}")]
    Malformed(&'static str),
    /// The proof (its bundle's label, or one of its blocks) belongs to another network,
    /// whose validators this genesis does not know.
    #[error(
        "the proof is of chain {got}, not of this genesis file's chain {expected}: its \
         validators are unknown here"
    )]
    WrongChain {
        /// This genesis file's chain id.
        expected: Hash,
        /// The proof's.
        got: Hash,
    },
    /// The parent header does not hash to `prev_hash`, or is not the height below.
    #[error("the parent header is not the one block {0} extends")]
    BrokenLink(u64),
    /// A validator's stake proof is missing or does not hold.
    #[error("stake of validator {validator} after block {at}: {reason}")]
    BadStake {
        /// The validator.
        validator: AccountId,
        /// The block under whose state root it is proven.
        at: u64,
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
    #[error("certificate signer {validator} of block {height} is not a distinct genesis validator")]
    BadSigner {
        /// The signer.
        validator: AccountId,
        /// The certified block's height.
        height: u64,
    },
    /// A signature does not verify.
    #[error("certificate signature of {validator} on block {height} does not verify")]
    BadSignature {
        /// The signer.
        validator: AccountId,
        /// The certified block's height.
        height: u64,
    },
    /// The signers do not hold more than 2/3 of the voting power.
    #[error(
        "the certificate of block {height} carries {signed} of {total} voting power, not more \
         than 2/3"
    )]
    InsufficientPower {
        /// The certified block's height.
        height: u64,
        /// Power of the valid signatures.
        signed: u128,
        /// Total power at that height.
        total: u128,
    },
    /// The outcome's Merkle proof does not hold under the certified root (the verifier's
    /// refusal, with the key and root it checked).
    #[error("the outcome is not under the certified state root: {}", .0.reason)]
    BadOutcomeProof(#[source] trust_contracts::ProofError),
    /// The powers certifying a block cannot be established from what the client trusts.
    #[error("the validator set is unknown: {0}")]
    UnknownValidatorSet(SetUnknown),
    /// A walk block is not above the one before it (or the anchor), or not below the
    /// certified block.
    #[error(
        "walk block {height} is out of order: the walk's heights must rise strictly from \
         block {after} and stay below the proven block {before}"
    )]
    HopOutOfOrder {
        /// The walk block's height.
        height: u64,
        /// The height it must be above (the previous walk block, or the anchor).
        after: u64,
        /// The certified block's height, which it must be below.
        before: u64,
    },
    /// The anchor is not below the certified block.
    #[error("the anchor, block {anchor}, is not below the proven block {height}")]
    AnchorNotBelow {
        /// The anchor's height.
        anchor: u64,
        /// The certified block's height.
        height: u64,
    },
    /// A bundle file that is cut short or is not a bundle at all (the parser's message).
    #[error("truncated or not a proof bundle: {0}")]
    NotABundle(String),
    /// A bundle of an older format, refused (see the module doc).
    #[error(
        "the bundle's format is {0:?}, an older one whose voting power only the certified \
         block's own signers vouch for; this version accepts only {BUNDLE_FORMAT:?}: export \
         the proof again"
    )]
    OlderFormat(String),
    /// A bundle of a format version this one does not read.
    #[error("the bundle's format is {0:?}; this version reads only {BUNDLE_FORMAT:?}")]
    UnsupportedFormat(String),
    /// The bundle proves another session's outcome than the one asked about.
    #[error("the bundle proves session {got}, not session {expected}")]
    OtherSession {
        /// The session asked about (`--session`).
        expected: Hash,
        /// The session the bundle proves.
        got: Hash,
    },
    /// The genesis file names more validators than a proof may be checked against: they
    /// are refused, never cut to the first ones (whose power would then be all of it).
    #[error(
        "the genesis file names {count} validators, more than the {max} this verifier checks a \
         certificate against"
    )]
    TooManyValidators {
        /// Distinct genesis validators.
        count: usize,
        /// [`MAX_PROOF_VALIDATORS`].
        max: usize,
    },
}

/// Every genesis validator's account entry, with its proof, under `state`'s root, which
/// must be `block`'s.
pub fn stake_proofs(
    state: &Contract,
    block: &StoredBlock,
    validators: &[AccountId],
) -> Result<Vec<StakeProof>, BuildError> {
    if validators.len() > MAX_PROOF_VALIDATORS {
        return Err(BuildError::TooManyValidators(validators.len()));
    }
    let height = block.block.header.height;
    if state.state_root() != block.block.header.state_root {
        return Err(BuildError::StateMismatch(height));
    }
    let mut stakes = Vec::with_capacity(validators.len());
    for v in validators {
        let (account, proof) = state
            .prove(&StateKey::Account(*v))
            .ok_or(BuildError::StateMismatch(height))?;
        stakes.push(StakeProof {
            validator: *v,
            account: account.map(hex::encode),
            proof: hex::encode(encoding::encode(&proof)),
        });
    }
    Ok(stakes)
}

/// `block` as a proof's anchor, with the stakes of `state` (the state after it).
pub fn anchor_at(
    block: &StoredBlock,
    state: &Contract,
    validators: &[AccountId],
) -> Result<ProofAnchor, BuildError> {
    Ok(anchor_with(block, stake_proofs(state, block, validators)?))
}

/// `block` as a proof's anchor, with `stakes` ([`stake_proofs`] of the state after it).
pub fn anchor_with(block: &StoredBlock, stakes: Vec<StakeProof>) -> ProofAnchor {
    ProofAnchor::Block(AnchorBlock {
        header: hex::encode(encoding::encode(&block.block.header)),
        stakes,
    })
}

/// `block`, whose execution changed the validator powers, as a step of a walk, with the
/// stakes of `state` (the state after it).
pub fn hop(
    block: &StoredBlock,
    state: &Contract,
    validators: &[AccountId],
) -> Result<Hop, BuildError> {
    hop_with(block, stake_proofs(state, block, validators)?)
}

/// [`hop`] with `stakes` ([`stake_proofs`] of the state after `block`).
pub fn hop_with(block: &StoredBlock, stakes: Vec<StakeProof>) -> Result<Hop, BuildError> {
    if block.certificate.is_empty() {
        return Err(BuildError::NoCertificate(block.block.header.height));
    }
    Ok(Hop {
        header: hex::encode(encoding::encode(&block.block.header)),
        certificate: hex::encode(&block.certificate),
        stakes,
    })
}

/// The anchor and the walk of a proof ([`anchor_at`], [`hop`]); the default walks from
/// genesis through no change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Walk {
    /// Where it starts.
    pub anchor: ProofAnchor,
    /// The blocks that changed the powers after the anchor, ascending.
    pub hops: Vec<Hop>,
}

/// Builds the proof of `session`'s outcome from the state at the tip (`state`, after
/// `tip`), the state before it (`parent_state`, after `parent`; none at height 1), the
/// genesis `validators` and the `walk` to the tip from its anchor.
pub fn build(
    session: &Hash,
    state: &Contract,
    tip: &StoredBlock,
    parent_state: Option<&Contract>,
    parent: Option<&StoredBlock>,
    validators: &[AccountId],
    walk: Walk,
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
        let stakes = stake_proofs(pstate, pblock, validators)
            .map_err(|_| BuildError::NoParentState(header.height))?;
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
        anchor: walk.anchor,
        walk: walk.hops,
    })
}

fn unhex(what: &'static str, s: &str) -> Result<Vec<u8>, ProofError> {
    hex::decode(s).map_err(|_| ProofError::Malformed(what))
}

fn decode_header(what: &'static str, s: &str) -> Result<BlockHeader, ProofError> {
    encoding::decode(&unhex(what, s)?).map_err(|_| ProofError::Malformed(what))
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
    /// The trusted block the powers were walked from (`None`: genesis).
    pub anchor: Option<TrustedBlock>,
    /// The heights of the walk's blocks, where the validator powers changed.
    pub hops: Vec<u64>,
}

/// What the client trusts: its own genesis file's chain id, validators and genesis state
/// (the node's `GenesisDoc`), and the block it trusts, if any.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    /// The chain id (`GenesisDoc::chain_id`).
    pub chain: Hash,
    /// The genesis validators.
    pub validators: &'a [AccountId],
    /// The contract's genesis (its stakes are the powers a walk from genesis starts with).
    pub genesis: &'a Genesis,
    /// A block trusted by height and hash: the proof must walk from it.
    pub block: Option<TrustedBlock>,
}

fn check_chain(expected: Hash, header: &BlockHeader) -> Result<(), ProofError> {
    if header.chain != expected {
        return Err(ProofError::WrongChain {
            expected,
            got: header.chain,
        });
    }
    Ok(())
}

/// As `consensus::driver::validator_set`: stake-weighted, or one each when none has any.
fn powers_of(stakes: Vec<u64>) -> Vec<u64> {
    if stakes.iter().all(|s| *s == 0) {
        vec![1; stakes.len()]
    } else {
        stakes
    }
}

/// The powers after `at`: every validator's stake proven under `at`'s state root.
fn proven_powers(
    stakes: &[StakeProof],
    at: &BlockHeader,
    validators: &[AccountId],
) -> Result<Vec<u64>, ProofError> {
    // Every stake proof is of a genesis validator: one of any other account is not part
    // of this network's validator set.
    let known: BTreeSet<&AccountId> = validators.iter().collect();
    if let Some(s) = stakes.iter().find(|s| !known.contains(&s.validator)) {
        return Err(ProofError::BadStake {
            validator: s.validator,
            at: at.height,
            reason: "not a genesis validator".to_string(),
        });
    }
    let mut out = Vec::with_capacity(validators.len());
    for v in validators {
        let bad = |reason: &str| ProofError::BadStake {
            validator: *v,
            at: at.height,
            reason: reason.to_string(),
        };
        let entry = stakes
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
        verify_entry(at.state_root, &StateKey::Account(*v), value.as_deref(), &p)
            .map_err(|e| bad(&e.reason))?;
        // A validator votes with its account's voting power (its stake, falling at most a
        // share per block), as the consensus driver weighs it.
        let power = match value {
            Some(bytes) => {
                decode_entry::<Account>(&bytes)
                    .ok_or_else(|| bad("malformed account"))?
                    .power
            }
            None => 0,
        };
        out.push(power);
    }
    Ok(powers_of(out))
}

/// Checks that `certificate` decides `header` with the signatures of distinct genesis
/// validators holding more than 2/3 of `powers` (indexed as `validators`): the power
/// signed and the total.
fn check_certificate(
    certificate: &str,
    what: &'static str,
    header: &BlockHeader,
    powers: &[u64],
    validators: &[AccountId],
    chain: Hash,
) -> Result<(u128, u128), ProofError> {
    let height = header.height;
    let cert: WireCertificate =
        decode_borsh(&unhex(what, certificate)?).map_err(|_| ProofError::Malformed(what))?;
    let block = header.hash();
    if cert.height.0 != height || cert.value_id != BlockId::of(block) {
        return Err(ProofError::CertificateMismatch {
            height,
            block,
            got_height: cert.height.0,
            got_block: cert.value_id.hash(),
        });
    }
    let total: u128 = powers.iter().map(|p| u128::from(*p)).sum();
    let mut signed: u128 = 0;
    let mut seen = BTreeSet::new();
    for s in cert.signatures.iter().take(MAX_PROOF_VALIDATORS) {
        let who = s.address.account();
        let bad_signer = ProofError::BadSigner {
            validator: who,
            height,
        };
        let Some(i) = validators.iter().position(|v| *v == who) else {
            return Err(bad_signer);
        };
        if !seen.insert(who) {
            return Err(bad_signer);
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
            return Err(ProofError::BadSignature {
                validator: who,
                height,
            });
        }
        signed = signed.saturating_add(u128::from(powers.get(i).copied().unwrap_or(0)));
    }
    if signed.saturating_mul(3) <= total.saturating_mul(2) {
        return Err(ProofError::InsufficientPower {
            height,
            signed,
            total,
        });
    }
    Ok((signed, total))
}

/// The genesis validators, each once, in the order given: refused past
/// [`MAX_PROOF_VALIDATORS`] rather than truncated.
fn distinct_validators(validators: &[AccountId]) -> Result<Vec<AccountId>, ProofError> {
    let mut seen = BTreeSet::new();
    let out: Vec<AccountId> = validators
        .iter()
        .filter(|v| seen.insert(**v))
        .copied()
        .collect();
    if out.len() > MAX_PROOF_VALIDATORS {
        return Err(ProofError::TooManyValidators {
            count: out.len(),
            max: MAX_PROOF_VALIDATORS,
        });
    }
    Ok(out)
}

/// The voting powers at genesis, indexed as `validators`.
fn genesis_powers(
    genesis: &Genesis,
    chain: Hash,
    validators: &[AccountId],
) -> Result<Vec<u64>, ProofError> {
    let start = Contract::new(genesis)
        .map_err(|_| ProofError::Malformed("genesis"))?
        .with_chain(chain);
    Ok(powers_of(
        validators
            .iter()
            .map(|v| start.state().accounts.get(v).map_or(0, |a| a.power))
            .collect(),
    ))
}

/// Checks that `certificate` (a block's stored commit certificate) decides `header` with
/// the signatures of distinct genesis validators holding more than 2/3 of the *genesis*
/// powers: the check a walk from genesis makes of a block when no change of the
/// validator powers lies before it (see the module doc), and what a node joining by state
/// sync makes of the block after its snapshot (`crate::statesync`). The power signed and
/// the total.
pub fn check_certificate_from_genesis(
    certificate: &[u8],
    header: &BlockHeader,
    genesis: &Genesis,
    validators: &[AccountId],
    chain: Hash,
) -> Result<(u128, u128), ProofError> {
    check_chain(chain, header)?;
    let validators = distinct_validators(validators)?;
    let powers = genesis_powers(genesis, chain, &validators)?;
    check_certificate(
        &hex::encode(certificate),
        "certificate",
        header,
        &powers,
        &validators,
        chain,
    )
}

/// Checks `proof` for `session` against what the user trusts (see the module doc).
pub fn verify(
    proof: &OutcomeProof,
    session: &Hash,
    trust: &Trust<'_>,
) -> Result<Verified, ProofError> {
    let chain = trust.chain;
    let header = decode_header("header", &proof.header)?;
    check_chain(chain, &header)?;
    let validators = distinct_validators(trust.validators)?;

    // The anchor: the powers the walk starts from, and the height they hold after.
    let (mut powers, mut after, anchor) = match (&proof.anchor, trust.block) {
        (ProofAnchor::Genesis, Some(trusted)) => {
            return Err(ProofError::UnknownValidatorSet(SetUnknown::GenesisAnchor(
                trusted,
            )));
        }
        (ProofAnchor::Genesis, None) => {
            (genesis_powers(trust.genesis, chain, &validators)?, 0, None)
        }
        (ProofAnchor::Block(a), trusted) => {
            let at = decode_header("anchor header", &a.header)?;
            check_chain(chain, &at)?;
            let named = TrustedBlock {
                height: at.height,
                hash: at.hash(),
            };
            match trusted {
                None => {
                    return Err(ProofError::UnknownValidatorSet(
                        SetUnknown::UntrustedAnchor(named),
                    ));
                }
                Some(t) if t != named => {
                    return Err(ProofError::UnknownValidatorSet(SetUnknown::OtherAnchor {
                        anchor: named,
                        trusted: t,
                    }));
                }
                Some(_) => {}
            }
            if at.height >= header.height {
                return Err(ProofError::AnchorNotBelow {
                    anchor: at.height,
                    height: header.height,
                });
            }
            let powers = proven_powers(&a.stakes, &at, &validators)?;
            (powers, at.height, Some(named))
        }
    };

    // The walk's shape first: its blocks, of this chain, in strictly rising order between
    // the anchor and the proven block.
    let mut steps = Vec::with_capacity(proof.walk.len());
    for hop in &proof.walk {
        let at = decode_header("walk header", &hop.header)?;
        check_chain(chain, &at)?;
        if at.height <= after || at.height >= header.height {
            return Err(ProofError::HopOutOfOrder {
                height: at.height,
                after,
                before: header.height,
            });
        }
        after = at.height;
        steps.push((hop, at));
    }
    // Then each change, certified by the powers before it.
    let mut hops = Vec::with_capacity(steps.len());
    for (hop, at) in &steps {
        check_certificate(
            &hop.certificate,
            "walk certificate",
            at,
            &powers,
            &validators,
            chain,
        )?;
        powers = proven_powers(&hop.stakes, at, &validators)?;
        hops.push(at.height);
    }

    // The powers after the parent must be those walked to: else a change is missing.
    if header.height > 1 {
        let parent = decode_header(
            "parent header",
            proof
                .parent
                .as_deref()
                .ok_or(ProofError::BrokenLink(header.height))?,
        )?;
        if parent.hash() != header.prev_hash || parent.height.checked_add(1) != Some(header.height)
        {
            return Err(ProofError::BrokenLink(header.height));
        }
        if proven_powers(&proof.stakes, &parent, &validators)? != powers {
            return Err(ProofError::UnknownValidatorSet(SetUnknown::MissingChange {
                parent: parent.height,
            }));
        }
    }
    let power = check_certificate(
        &proof.certificate,
        "certificate",
        &header,
        &powers,
        &validators,
        chain,
    )?;

    let value = unhex("outcome", &proof.outcome)?;
    let p = encoding::decode(&unhex("outcome proof", &proof.outcome_proof)?)
        .map_err(|_| ProofError::Malformed("outcome proof"))?;
    verify_entry(
        header.state_root,
        &StateKey::Outcome(*session),
        Some(&value),
        &p,
    )
    .map_err(ProofError::BadOutcomeProof)?;
    let outcome = decode_entry::<Outcome>(&value).ok_or(ProofError::Malformed("outcome"))?;
    Ok(Verified {
        outcome,
        header,
        power,
        anchor,
        hops,
    })
}

#[cfg(test)]
pub(crate) mod tests;
