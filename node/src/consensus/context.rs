//! The Malachite [`Context`] of a TRUST network: what consensus orders (block ids), who
//! votes (validators, named by their account keys) and how votes are signed (ed25519 over
//! domain-separated bytes that include the chain id).
//!
//! The value consensus agrees on is a [`BlockId`], the hash of a block header. The block
//! itself travels as proposal parts (see [`ProposalPart`]) and is kept by the driver, so
//! the signed proposal and every vote stay small whatever the block size.

use std::fmt;

use borsh::{BorshDeserialize, BorshSerialize};
use malachitebft_core_types::{
    self as mtypes, NilOrVal, Round, SignedExtension, VoteType, VotingPower,
};
use trust_protocol::{AccountId, Hash, PublicKey};

/// A block height (the first block is 1).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    BorshSerialize,
    BorshDeserialize,
)]
pub struct Height(pub u64);

impl fmt::Display for Height {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl mtypes::Height for Height {
    const ZERO: Self = Height(0);
    const INITIAL: Self = Height(1);

    fn increment_by(&self, n: u64) -> Self {
        Height(self.0.saturating_add(n))
    }

    fn decrement_by(&self, n: u64) -> Option<Self> {
        self.0.checked_sub(n).map(Height)
    }

    fn as_u64(&self) -> u64 {
        self.0
    }
}

/// A validator's address: its account public key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize)]
pub struct Address(pub [u8; 32]);

impl Address {
    /// The address of an account.
    pub fn of(account: &AccountId) -> Self {
        Address(*account.as_bytes())
    }

    /// The account this address names.
    pub fn account(&self) -> AccountId {
        PublicKey(self.0)
    }

    /// The libp2p peer id of the consensus swarm this validator runs: its identity is the
    /// account key, so gossipsub authors its messages under this id. `None` for bytes that
    /// are not an ed25519 key.
    pub fn peer_id(&self) -> Option<malachitebft_app::types::PeerId> {
        let key = libp2p::identity::ed25519::PublicKey::try_from_bytes(&self.0).ok()?;
        let peer = libp2p::identity::PublicKey::from(key).to_peer_id();
        malachitebft_app::types::PeerId::from_bytes(&peer.to_bytes()).ok()
    }
}

/// The first 12 hex digits, as logs show ids.
fn short_hex(bytes: &[u8; 32], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let h = hex::encode(bytes);
    f.write_str(h.get(..12).unwrap_or(&h))
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        short_hex(&self.0, f)
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Address({self})")
    }
}

impl mtypes::Address for Address {}

/// What consensus decides: the hash of a block header.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, BorshSerialize, BorshDeserialize)]
pub struct BlockId(pub [u8; 32]);

impl BlockId {
    /// The id of a block hash.
    pub fn of(hash: Hash) -> Self {
        BlockId(hash.0)
    }

    /// As a protocol hash.
    pub fn hash(&self) -> Hash {
        Hash(self.0)
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        short_hex(&self.0, f)
    }
}

impl fmt::Debug for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockId({self})")
    }
}

impl mtypes::Value for BlockId {
    type Id = BlockId;

    fn id(&self) -> BlockId {
        *self
    }
}

/// An ed25519 signature as consensus carries it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, BorshSerialize, BorshDeserialize)]
pub struct ConsensusSignature(pub [u8; 64]);

impl fmt::Debug for ConsensusSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = hex::encode(&self.0[..8]);
        write!(f, "Sig({h}…)")
    }
}

/// The signing scheme: ed25519 with the account keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ed25519;

/// Bytes that are not a key or signature.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct KeyDecodeError(String);

impl mtypes::SigningScheme for Ed25519 {
    type DecodingError = KeyDecodeError;
    type Signature = ConsensusSignature;
    type PublicKey = Address;
    type PrivateKey = trust_protocol::Keypair;

    fn decode_signature(bytes: &[u8]) -> Result<ConsensusSignature, KeyDecodeError> {
        <[u8; 64]>::try_from(bytes)
            .map(ConsensusSignature)
            .map_err(|_| KeyDecodeError(format!("signature of {} bytes, want 64", bytes.len())))
    }

    fn encode_signature(signature: &ConsensusSignature) -> Vec<u8> {
        signature.0.to_vec()
    }

    fn decode_public_key(bytes: &[u8]) -> Result<Address, KeyDecodeError> {
        <[u8; 32]>::try_from(bytes)
            .map(Address)
            .map_err(|_| KeyDecodeError(format!("public key of {} bytes, want 32", bytes.len())))
    }

    fn encode_public_key(public_key: &Address) -> Vec<u8> {
        public_key.0.to_vec()
    }
}

/// Where a proposal starts: who proposes what at which height and round.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct PartInit {
    /// Height.
    pub height: Height,
    /// Round.
    pub round: Round,
    /// Proof-of-lock round ([`Round::Nil`] for a fresh proposal).
    pub pol_round: Round,
    /// The proposer.
    pub proposer: Address,
}

/// One piece of a streamed proposal: `Init`, then the encoded block in `Data` chunks, then
/// `Fin` with the proposer's signature over everything before it.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub enum ProposalPart {
    /// Opens the stream.
    Init(PartInit),
    /// A chunk of the canonical block encoding.
    Data(Vec<u8>),
    /// Closes the stream: the proposer's signature over
    /// [`crate::consensus::signing::parts_signing_bytes`].
    Fin(ConsensusSignature),
}

impl mtypes::ProposalPart<TrustContext> for ProposalPart {
    fn is_first(&self) -> bool {
        matches!(self, ProposalPart::Init(_))
    }

    fn is_last(&self) -> bool {
        matches!(self, ProposalPart::Fin(_))
    }
}

/// A signed proposal of a block id.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Proposal {
    /// Height.
    pub height: Height,
    /// Round.
    pub round: Round,
    /// The proposed block id.
    pub value: BlockId,
    /// Proof-of-lock round.
    pub pol_round: Round,
    /// Proposer.
    pub proposer: Address,
}

impl mtypes::Proposal<TrustContext> for Proposal {
    fn height(&self) -> Height {
        self.height
    }

    fn round(&self) -> Round {
        self.round
    }

    fn value(&self) -> &BlockId {
        &self.value
    }

    fn take_value(self) -> BlockId {
        self.value
    }

    fn pol_round(&self) -> Round {
        self.pol_round
    }

    fn validator_address(&self) -> &Address {
        &self.proposer
    }
}

/// A prevote or precommit.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Vote {
    /// Prevote or precommit.
    pub vote_type: VoteType,
    /// Height.
    pub height: Height,
    /// Round.
    pub round: Round,
    /// The block id voted for, or nil.
    pub value: NilOrVal<BlockId>,
    /// The voter.
    pub validator: Address,
    /// Vote extension (unused by TRUST: the policy is always disabled).
    pub extension: Option<SignedExtension<TrustContext>>,
}

impl mtypes::Vote<TrustContext> for Vote {
    fn height(&self) -> Height {
        self.height
    }

    fn round(&self) -> Round {
        self.round
    }

    fn value(&self) -> &NilOrVal<BlockId> {
        &self.value
    }

    fn take_value(self) -> NilOrVal<BlockId> {
        self.value
    }

    fn vote_type(&self) -> VoteType {
        self.vote_type
    }

    fn validator_address(&self) -> &Address {
        &self.validator
    }

    fn extension(&self) -> Option<&SignedExtension<TrustContext>> {
        self.extension.as_ref()
    }

    fn take_extension(&mut self) -> Option<SignedExtension<TrustContext>> {
        self.extension.take()
    }

    fn extend(self, extension: SignedExtension<TrustContext>) -> Self {
        Self {
            extension: Some(extension),
            ..self
        }
    }
}

/// A validator and its voting power at some height.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validator {
    /// Address (= public key).
    pub address: Address,
    /// Voting power: bonded stake.
    pub voting_power: VotingPower,
}

impl mtypes::Validator<TrustContext> for Validator {
    fn address(&self) -> &Address {
        &self.address
    }

    fn public_key(&self) -> &Address {
        &self.address
    }

    fn voting_power(&self) -> VotingPower {
        self.voting_power
    }
}

/// The validators of one height, sorted by address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatorSet {
    validators: Vec<Validator>,
    total: VotingPower,
}

impl ValidatorSet {
    /// A set from validators with positive power (sorted by address, duplicates merged
    /// by keeping the first).
    pub fn new(mut validators: Vec<Validator>) -> Self {
        validators.retain(|v| v.voting_power > 0);
        validators.sort_by_key(|v| v.address);
        validators.dedup_by(|a, b| a.address == b.address);
        let total = validators
            .iter()
            .fold(0u64, |acc, v| acc.saturating_add(v.voting_power));
        ValidatorSet { validators, total }
    }

    /// The validators.
    pub fn validators(&self) -> &[Validator] {
        &self.validators
    }

    /// Whether `address` is in the set.
    pub fn contains(&self, address: &Address) -> bool {
        self.validators
            .binary_search_by(|v| v.address.cmp(address))
            .is_ok()
    }
}

impl mtypes::ValidatorSet<TrustContext> for ValidatorSet {
    fn count(&self) -> usize {
        self.validators.len()
    }

    fn total_voting_power(&self) -> VotingPower {
        self.total
    }

    fn get_by_address(&self, address: &Address) -> Option<&Validator> {
        self.validators
            .binary_search_by(|v| v.address.cmp(address))
            .ok()
            .and_then(|i| self.validators.get(i))
    }

    fn get_by_index(&self, index: usize) -> Option<&Validator> {
        self.validators.get(index)
    }
}

/// The TRUST consensus context.
#[derive(Clone, Copy, Debug, Default, BorshSerialize, BorshDeserialize)]
pub struct TrustContext;

impl mtypes::Context for TrustContext {
    type Address = Address;
    type Height = Height;
    type ProposalPart = ProposalPart;
    type Proposal = Proposal;
    type Validator = Validator;
    type ValidatorSet = ValidatorSet;
    type Timeouts = mtypes::LinearTimeouts;
    type Value = BlockId;
    type Vote = Vote;
    type Extension = ();
    type SigningScheme = Ed25519;

    /// Proposers are drawn in proportion to voting power: see [`proposer_of`].
    fn select_proposer<'a>(
        &self,
        validator_set: &'a ValidatorSet,
        height: Height,
        round: Round,
    ) -> &'a Validator {
        proposer_of(validator_set, height, round)
            .or_else(|| validator_set.validators.first())
            .unwrap_or_else(|| {
                // Malachite never asks for a proposer of an empty set: the driver refuses
                // to start a height without validators. Reaching this is a driver bug.
                unreachable!("select_proposer called on an empty validator set")
            })
    }

    fn new_proposal(
        &self,
        height: Height,
        round: Round,
        value: BlockId,
        pol_round: Round,
        address: Address,
    ) -> Proposal {
        Proposal {
            height,
            round,
            value,
            pol_round,
            proposer: address,
        }
    }

    fn new_prevote(
        &self,
        height: Height,
        round: Round,
        value_id: NilOrVal<BlockId>,
        address: Address,
    ) -> Vote {
        Vote {
            vote_type: VoteType::Prevote,
            height,
            round,
            value: value_id,
            validator: address,
            extension: None,
        }
    }

    fn new_precommit(
        &self,
        height: Height,
        round: Round,
        value_id: NilOrVal<BlockId>,
        address: Address,
    ) -> Vote {
        Vote {
            vote_type: VoteType::Precommit,
            height,
            round,
            value: value_id,
            validator: address,
            extension: None,
        }
    }
}

/// The proposer for `(height, round)`, or `None` for an empty set.
///
/// Rounds of a height go in cycles of as many rounds as there are validators; within a
/// cycle each validator proposes once, drawn in turn from those that have not proposed in
/// it yet: the slot `H(height, round) mod their power` falls into one of their shares. So
/// round 0 is a draw by power over the whole set (a validator with a quarter of the power
/// proposes about a quarter of the heights), and when a proposer is down the next round's
/// is another validator, never the same one again: one validator down costs a height one
/// propose timeout, not a run of them. Every node computes the same proposer.
pub fn proposer_of(set: &ValidatorSet, height: Height, round: Round) -> Option<&Validator> {
    let n = u64::try_from(set.validators.len()).ok()?;
    if set.total == 0 || n == 0 {
        return None;
    }
    let round = u64::try_from(round.as_i64()).unwrap_or(0);
    let cycle_start = round - round % n;
    let mut proposed: Vec<&Address> = Vec::new();
    let mut chosen = None;
    for r in cycle_start..=round {
        let draw = Hash::of_parts(
            "trust/v1/proposer",
            &[&height.0.to_le_bytes(), &r.to_le_bytes()],
        );
        let mut first = [0u8; 8];
        first.copy_from_slice(&draw.0[..8]);
        let eligible = || {
            set.validators
                .iter()
                .filter(|v| !proposed.contains(&&v.address))
        };
        let power: u64 = eligible().map(|v| v.voting_power).sum();
        let v = if power == 0 {
            // Only validators without power are left: take them in order.
            eligible().next()
        } else {
            let mut slot = u64::from_le_bytes(first) % power;
            eligible().find(|v| {
                let hit = slot < v.voting_power;
                slot = slot.saturating_sub(v.voting_power);
                hit
            })
        }?;
        proposed.push(&v.address);
        chosen = Some(v);
    }
    chosen
}
