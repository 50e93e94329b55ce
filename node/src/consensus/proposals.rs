//! Proposal streams and undecided blocks.
//!
//! A proposer streams its block as `Init`, `Data` chunks and a signed `Fin` (see
//! [`ProposalPart`]). [`Streams`] reassembles parts that may arrive out of order, keyed by
//! the publishing peer and stream id, within fixed bounds: at most [`MAX_STREAMS`] open
//! streams (the oldest is dropped) and at most [`MAX_STREAM_BYTES`] per stream.
//!
//! [`Undecided`] keeps blocks proposed at heights not yet decided, in sled, so a node that
//! crashes after voting for a block still has it when the engine replays its WAL.

use std::collections::{BTreeMap, VecDeque};

use malachitebft_app::{
    streaming::{StreamId, StreamMessage},
    types::PeerId,
};
use malachitebft_engine::util::streaming::StreamContent;
use trust_protocol::{
    Hash,
    block::{Block, MAX_BLOCK_BYTES},
    encoding,
};

use super::{
    codec::{decode_borsh, encode_borsh},
    context::{BlockId, ConsensusSignature, Height, PartInit, ProposalPart},
    signing::{parts_digest, verify_digest},
};

/// Open streams kept at once.
pub const MAX_STREAMS: usize = 64;
/// Largest sum of `Data` bytes in one stream.
pub const MAX_STREAM_BYTES: usize = MAX_BLOCK_BYTES + 64 * 1024;
/// Size of a `Data` chunk.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// A proposal stream put back together and checked.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// Who proposed what, where.
    pub init: PartInit,
    /// The block.
    pub block: Block,
}

/// Why a complete stream was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The stream does not have the `Init`, `Data`…, `Fin` shape.
    #[error("proposal stream is malformed: {0}")]
    Shape(&'static str),
    /// Too many bytes.
    #[error("proposal stream exceeds {MAX_STREAM_BYTES} bytes")]
    TooLarge,
    /// The `Fin` signature is not the proposer's.
    #[error("proposal stream signature does not verify for proposer {0}")]
    BadSignature(String),
    /// The block bytes do not decode.
    #[error("proposed block does not decode: {0}")]
    BadBlock(String),
    /// The block's header disagrees with the stream's `Init`.
    #[error("proposed block header does not match its stream: {0}")]
    Mismatch(&'static str),
}

#[derive(Debug, Default)]
struct Partial {
    parts: BTreeMap<u64, ProposalPart>,
    fin_at: Option<u64>,
    bytes: usize,
}

/// Reassembles proposal streams.
#[derive(Debug, Default)]
pub struct Streams {
    open: BTreeMap<(PeerId, StreamId), Partial>,
    order: VecDeque<(PeerId, StreamId)>,
}

impl Streams {
    /// Adds one message; returns the stream's outcome once it is complete.
    pub fn insert(
        &mut self,
        chain: &Hash,
        from: PeerId,
        msg: StreamMessage<ProposalPart>,
    ) -> Option<Result<Assembled, StreamError>> {
        let key = (from, msg.stream_id.clone());
        if !self.open.contains_key(&key) {
            if self.open.len() >= MAX_STREAMS
                && let Some(old) = self.order.pop_front()
            {
                self.open.remove(&old);
            }
            self.order.push_back(key.clone());
        }
        let partial = self.open.entry(key.clone()).or_default();
        match msg.content {
            StreamContent::Fin => partial.fin_at = Some(msg.sequence),
            StreamContent::Data(part) => {
                if let ProposalPart::Data(d) = &part {
                    partial.bytes = partial.bytes.saturating_add(d.len());
                }
                partial.parts.insert(msg.sequence, part);
            }
        }
        if partial.bytes > MAX_STREAM_BYTES {
            self.remove(&key);
            return Some(Err(StreamError::TooLarge));
        }
        let fin = partial.fin_at?;
        let complete = u64::try_from(partial.parts.len()).ok() == Some(fin);
        if !complete {
            return None;
        }
        let partial = self.remove(&key)?;
        Some(assemble(chain, partial.parts.into_values().collect()))
    }

    fn remove(&mut self, key: &(PeerId, StreamId)) -> Option<Partial> {
        self.order.retain(|k| k != key);
        self.open.remove(key)
    }
}

fn assemble(chain: &Hash, parts: Vec<ProposalPart>) -> Result<Assembled, StreamError> {
    let mut it = parts.into_iter();
    let Some(ProposalPart::Init(init)) = it.next() else {
        return Err(StreamError::Shape("first part is not Init"));
    };
    let mut bytes = Vec::new();
    let mut sig: Option<ConsensusSignature> = None;
    for part in it {
        match part {
            ProposalPart::Data(d) if sig.is_none() => bytes.extend_from_slice(&d),
            ProposalPart::Fin(s) if sig.is_none() => sig = Some(s),
            _ => return Err(StreamError::Shape("parts after Fin or a second Init")),
        }
    }
    let sig = sig.ok_or(StreamError::Shape("no Fin part"))?;
    let block_hash = Hash::of_parts("trust/v1/proposal-bytes", &[&bytes]);
    if !verify_digest(
        &init.proposer,
        &parts_digest(chain, &init, &block_hash),
        &sig,
    ) {
        return Err(StreamError::BadSignature(init.proposer.to_string()));
    }
    let block: Block =
        encoding::decode(&bytes).map_err(|e| StreamError::BadBlock(e.to_string()))?;
    if block.header.height != init.height.0 {
        return Err(StreamError::Mismatch("height"));
    }
    if block.header.proposer.0 != init.proposer.0 {
        return Err(StreamError::Mismatch("proposer"));
    }
    Ok(Assembled { init, block })
}

/// Splits a block into the signed parts of a proposal stream.
pub fn stream_parts(
    chain: &Hash,
    init: PartInit,
    block: &Block,
    sign: impl Fn(&Hash) -> ConsensusSignature,
) -> Vec<ProposalPart> {
    let bytes = encoding::encode(block);
    let block_hash = Hash::of_parts("trust/v1/proposal-bytes", &[&bytes]);
    let sig = sign(&parts_digest(chain, &init, &block_hash));
    let mut parts = vec![ProposalPart::Init(init)];
    parts.extend(
        bytes
            .chunks(CHUNK_BYTES)
            .map(|c| ProposalPart::Data(c.to_vec())),
    );
    parts.push(ProposalPart::Fin(sig));
    parts
}

/// A block proposed at a height not yet decided, with what consensus needs to re-offer it.
#[derive(Debug, Clone, PartialEq, Eq, borsh::BorshSerialize, borsh::BorshDeserialize)]
pub struct UndecidedEntry {
    /// Round it was proposed in.
    pub round: malachitebft_core_types::Round,
    /// Proof-of-lock round.
    pub pol_round: malachitebft_core_types::Round,
    /// The proposer.
    pub proposer: super::context::Address,
    /// Whether it executed.
    pub valid: bool,
    /// Canonical block bytes.
    pub block: Vec<u8>,
}

/// Undecided blocks, in a sled tree keyed by `height ‖ round ‖ block id`.
#[derive(Debug, Clone)]
pub struct Undecided {
    tree: sled::Tree,
}

fn key(height: Height, round: malachitebft_core_types::Round, id: &BlockId) -> Vec<u8> {
    let mut k = height.0.to_be_bytes().to_vec();
    k.extend_from_slice(&round.as_i64().to_be_bytes());
    k.extend_from_slice(&id.0);
    k
}

impl Undecided {
    /// Opens the tree.
    pub fn open(db: &sled::Db) -> Result<Self, sled::Error> {
        Ok(Self {
            tree: db.open_tree("consensus/undecided")?,
        })
    }

    /// Stores an entry (flushed: the node may vote for it next).
    pub fn put(&self, height: Height, id: &BlockId, entry: &UndecidedEntry) -> Result<(), String> {
        let bytes = encode_borsh(entry).map_err(|e| e.to_string())?;
        self.tree
            .insert(key(height, entry.round, id), bytes.to_vec())
            .map_err(|e| e.to_string())?;
        self.tree.flush().map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Every entry at `height`.
    pub fn at_height(&self, height: Height) -> Vec<(BlockId, UndecidedEntry)> {
        self.tree
            .scan_prefix(height.0.to_be_bytes())
            .filter_map(Result::ok)
            .filter_map(|(k, v)| {
                let id: [u8; 32] = k.get(16..48)?.try_into().ok()?;
                let e: UndecidedEntry = decode_borsh(&v).ok()?;
                Some((BlockId(id), e))
            })
            .collect()
    }

    /// The block with id `id` at `height`, if any round proposed it.
    pub fn find(&self, height: Height, id: &BlockId) -> Option<UndecidedEntry> {
        self.at_height(height)
            .into_iter()
            .find(|(i, _)| i == id)
            .map(|(_, e)| e)
    }

    /// Drops every entry at or below `height`.
    pub fn prune_through(&self, height: Height) {
        let end = height.0.saturating_add(1).to_be_bytes();
        let keys: Vec<_> = self
            .tree
            .range(..end.as_slice())
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .collect();
        for k in keys {
            let _ = self.tree.remove(k);
        }
    }
}
