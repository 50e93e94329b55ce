//! Proposal streams and undecided blocks.
//!
//! A proposer streams its block as `Init`, `Data` chunks and a signed `Fin` (see
//! [`ProposalPart`]), under the stream id [`stream_id`] of its height and round.
//!
//! Only the expected proposer of a slot may stream into it: before a part is buffered the
//! driver reads the height and round from its stream id ([`stream_slot`]) and checks that
//! the part's publisher (gossipsub's authenticated author, the proposer's own key) is the
//! proposer of that slot; the assembled stream's `Init` must name the same slot and
//! proposer, and its `Fin` must carry that proposer's signature, before the block is ever
//! executed. [`Streams`] reassembles parts that may arrive out of order, keyed by the
//! publishing peer and stream id, within fixed bounds: at most [`MAX_STREAMS`] open streams
//! in all and [`MAX_STREAMS_PER_PEER`] per publisher (the oldest goes first), at most
//! [`MAX_STREAM_PARTS`] parts per stream, and at most [`MAX_STREAM_BYTES`] per stream,
//! counting every part with [`PART_OVERHEAD`] so that a flood of tiny parts is bounded too.
//!
//! [`Undecided`] keeps blocks proposed at heights not yet decided, in sled, so a node that
//! crashes after voting for a block still has it when the engine replays its WAL. Only
//! blocks that executed are kept: an invalid proposal is answered and forgotten.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use malachitebft_app::{
    streaming::{StreamId, StreamMessage},
    types::PeerId,
};
use malachitebft_core_types::Round;
use malachitebft_engine::util::streaming::StreamContent;
use trust_protocol::{
    DecodeError, Hash,
    block::{Block, MAX_BLOCK_BYTES},
    encoding,
};

use super::{
    codec::{CodecError, decode_borsh, encode_borsh},
    context::{BlockId, ConsensusSignature, Height, PartInit, ProposalPart},
    signing::{parts_digest, verify_digest},
};

/// Open streams kept at once.
pub const MAX_STREAMS: usize = 64;
/// Open streams kept at once from one publisher (the rounds of a height it proposes in).
pub const MAX_STREAMS_PER_PEER: usize = 4;
/// Largest size of one stream: its `Data` bytes plus [`PART_OVERHEAD`] per part.
pub const MAX_STREAM_BYTES: usize = MAX_BLOCK_BYTES + 64 * 1024;
/// What every part counts toward [`MAX_STREAM_BYTES`] beside its data: the bytes a part
/// costs to keep whatever it carries.
pub const PART_OVERHEAD: usize = 64;
/// Size of a `Data` chunk.
pub const CHUNK_BYTES: usize = 256 * 1024;
/// Most parts in one stream: `Init`, the chunks of the largest block, `Fin`, and one spare.
pub const MAX_STREAM_PARTS: u64 = (MAX_BLOCK_BYTES / CHUNK_BYTES) as u64 + 4;

/// The stream id a proposer uses for its proposal at `height` and `round`.
pub fn stream_id(height: Height, round: Round) -> StreamId {
    let mut id = height.0.to_be_bytes().to_vec();
    id.extend_from_slice(&round.as_i64().to_be_bytes());
    StreamId::new(Bytes::from(id))
}

/// The height and round a stream id names, if it is one [`stream_id`] makes (a round of
/// at least 0).
pub fn stream_slot(id: &StreamId) -> Option<(Height, Round)> {
    let bytes = id.to_bytes();
    let h: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    let r: [u8; 8] = bytes.get(8..)?.try_into().ok()?;
    let round = u32::try_from(i64::from_be_bytes(r)).ok()?;
    Some((Height(u64::from_be_bytes(h)), Round::new(round)))
}

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
    /// Too many parts, or a sequence number beyond the last a stream may have.
    #[error("proposal stream exceeds {MAX_STREAM_PARTS} parts")]
    TooManyParts,
    /// The `Fin` signature is not the proposer's.
    #[error("proposal stream signature does not verify for proposer {0}")]
    BadSignature(String),
    /// The block bytes do not decode.
    #[error("proposed block does not decode: {0}")]
    BadBlock(#[source] DecodeError),
    /// The block's header disagrees with the stream's `Init`, or the `Init` with the
    /// slot the stream was accepted for.
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
    /// Adds one message from the publisher `from` (whom the caller checked may stream into
    /// the slot its stream id names); returns the stream's outcome once it is complete, or
    /// once it broke a bound (the stream is dropped then).
    pub fn insert(
        &mut self,
        chain: &Hash,
        from: PeerId,
        msg: StreamMessage<ProposalPart>,
    ) -> Option<Result<Assembled, StreamError>> {
        let key = (from, msg.stream_id.clone());
        if msg.sequence >= MAX_STREAM_PARTS {
            self.remove(&key);
            return Some(Err(StreamError::TooManyParts));
        }
        if !self.open.contains_key(&key) {
            let theirs = self.order.iter().filter(|(p, _)| *p == from).count();
            let full = if theirs >= MAX_STREAMS_PER_PEER {
                self.order.iter().position(|(p, _)| *p == from)
            } else if self.open.len() >= MAX_STREAMS {
                Some(0)
            } else {
                None
            };
            if let Some(old) = full.and_then(|i| self.order.remove(i)) {
                self.open.remove(&old);
            }
            self.order.push_back(key.clone());
        }
        let partial = self.open.entry(key.clone()).or_default();
        let size = match &msg.content {
            StreamContent::Data(ProposalPart::Data(d)) => d.len(),
            _ => 0,
        }
        .saturating_add(PART_OVERHEAD);
        match msg.content {
            StreamContent::Fin => partial.fin_at = Some(msg.sequence),
            StreamContent::Data(part) => {
                partial.parts.insert(msg.sequence, part);
            }
        }
        // A part sent again replaces the first copy; the bytes of both are counted, so a
        // peer repeating parts runs into the bound instead of around it.
        partial.bytes = partial.bytes.saturating_add(size);
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

    /// Streams open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether no stream is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
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
    let block: Block = encoding::decode(&bytes).map_err(StreamError::BadBlock)?;
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

/// Why an undecided block could not be stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UndecidedError {
    /// The entry did not encode.
    #[error(transparent)]
    Encode(#[from] CodecError),
    /// The sled tree failed.
    #[error(transparent)]
    Store(#[from] sled::Error),
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
    pub fn put(
        &self,
        height: Height,
        id: &BlockId,
        entry: &UndecidedEntry,
    ) -> Result<(), UndecidedError> {
        let bytes = encode_borsh(entry)?;
        self.tree
            .insert(key(height, entry.round, id), bytes.to_vec())?;
        self.tree.flush()?;
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
