//! The binary encoding of consensus, sync and WAL messages: borsh, with a size limit
//! checked before anything is parsed and trailing bytes refused.
//!
//! Malachite's own message types carry borsh implementations (its `borsh` features); the
//! one it lacks, the extended commit certificate inside sync responses, is written here
//! through [`WireCertificate`], which is also how the ledger stores a block's certificate.

use borsh::{BorshDeserialize, BorshSerialize};
use bytes::Bytes;
use malachitebft_app::{
    consensus::{LivenessMsg, ProposedValue, SignedConsensusMsg},
    streaming::StreamMessage,
    types::{
        codec::{Codec, HasEncodedLen},
        sync::{RawDecidedValue, Request, Response, Status},
    },
};
use malachitebft_core_types::{
    CommitCertificate, CommitSignature, ExtendedCommitCertificate, ExtendedCommitSignature,
    PolkaCertificate, Round, SignedMessage, ValidatorProof,
};
use malachitebft_sync::ValueResponse;

use super::context::{Address, BlockId, ConsensusSignature, Height, ProposalPart, TrustContext};

/// Largest consensus message decoded (a sync response of a few full blocks).
pub const MAX_CONSENSUS_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Why bytes are not a consensus message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Larger than [`MAX_CONSENSUS_MESSAGE_BYTES`].
    #[error("consensus message of {0} bytes exceeds the limit of {MAX_CONSENSUS_MESSAGE_BYTES}")]
    TooLarge(usize),
    /// Does not decode (or has trailing bytes).
    #[error("malformed consensus message: {0}")]
    Malformed(#[source] std::io::Error),
    /// Could not be written.
    #[error("consensus message does not encode: {0}")]
    Encode(#[source] std::io::Error),
}

/// Decodes borsh bytes with the size limit.
pub fn decode_borsh<T: BorshDeserialize>(bytes: &[u8]) -> Result<T, CodecError> {
    if bytes.len() > MAX_CONSENSUS_MESSAGE_BYTES {
        return Err(CodecError::TooLarge(bytes.len()));
    }
    borsh::from_slice(bytes).map_err(CodecError::Malformed)
}

/// Encodes borsh bytes.
pub fn encode_borsh<T: BorshSerialize>(value: &T) -> Result<Bytes, CodecError> {
    borsh::to_vec(value)
        .map(Bytes::from)
        .map_err(CodecError::Encode)
}

/// One commit signature as stored and synced.
#[derive(Debug, Clone, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct WireCommitSignature {
    /// The validator.
    pub address: Address,
    /// Its precommit signature.
    pub signature: ConsensusSignature,
    /// Its vote-extension signature, if any (TRUST sends none).
    pub extension: Option<ConsensusSignature>,
}

/// A commit certificate: the precommits of more than 2/3 of the voting power for one
/// block id at one height and round.
#[derive(Debug, Clone, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct WireCertificate {
    /// Height.
    pub height: Height,
    /// Round it was decided in.
    pub round: Round,
    /// The decided block id.
    pub value_id: BlockId,
    /// Signatures, sorted by address.
    pub signatures: Vec<WireCommitSignature>,
}

impl From<&ExtendedCommitCertificate<TrustContext>> for WireCertificate {
    fn from(c: &ExtendedCommitCertificate<TrustContext>) -> Self {
        WireCertificate::new(
            c.height,
            c.round,
            c.value_id,
            c.commit_signatures.iter().map(|s| WireCommitSignature {
                address: s.address,
                signature: s.signature,
                extension: s.extension.as_ref().map(|e| e.signature),
            }),
        )
    }
}

impl From<&CommitCertificate<TrustContext>> for WireCertificate {
    fn from(c: &CommitCertificate<TrustContext>) -> Self {
        WireCertificate::new(
            c.height,
            c.round,
            c.value_id,
            c.commit_signatures.iter().map(|s| WireCommitSignature {
                address: s.address,
                signature: s.signature,
                extension: None,
            }),
        )
    }
}

impl WireCertificate {
    fn new(
        height: Height,
        round: Round,
        value_id: BlockId,
        signatures: impl Iterator<Item = WireCommitSignature>,
    ) -> Self {
        WireCertificate {
            height,
            round,
            value_id,
            signatures: signatures.collect(),
        }
    }

    /// As Malachite's extended certificate.
    pub fn to_extended(&self) -> ExtendedCommitCertificate<TrustContext> {
        ExtendedCommitCertificate {
            height: self.height,
            round: self.round,
            value_id: self.value_id,
            commit_signatures: self
                .signatures
                .iter()
                .map(|s| {
                    ExtendedCommitSignature::new(
                        s.address,
                        s.signature,
                        s.extension.map(|sig| SignedMessage::new((), sig)),
                    )
                })
                .collect(),
        }
    }

    /// As Malachite's plain certificate.
    pub fn to_commit(&self) -> CommitCertificate<TrustContext> {
        CommitCertificate {
            height: self.height,
            round: self.round,
            value_id: self.value_id,
            commit_signatures: self
                .signatures
                .iter()
                .map(|s| CommitSignature::new(s.address, s.signature))
                .collect(),
        }
    }
}

#[derive(BorshSerialize, BorshDeserialize)]
struct WireDecided {
    value_bytes: Vec<u8>,
    certificate: WireCertificate,
}

#[derive(BorshSerialize, BorshDeserialize)]
struct WireValueResponse {
    start_height: Height,
    values: Vec<WireDecided>,
}

/// The codec handed to Malachite for its network, sync and WAL.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrustCodec;

macro_rules! borsh_codec {
    ($($t:ty),* $(,)?) => {$(
        impl Codec<$t> for TrustCodec {
            type Error = CodecError;

            fn decode(&self, bytes: Bytes) -> Result<$t, CodecError> {
                decode_borsh(&bytes)
            }

            fn encode(&self, msg: &$t) -> Result<Bytes, CodecError> {
                encode_borsh(msg)
            }
        }
    )*};
}

borsh_codec!(
    ProposalPart,
    SignedConsensusMsg<TrustContext>,
    LivenessMsg<TrustContext>,
    StreamMessage<ProposalPart>,
    ProposedValue<TrustContext>,
    PolkaCertificate<TrustContext>,
    Status<TrustContext>,
    Request<TrustContext>,
);

#[derive(BorshSerialize, BorshDeserialize)]
struct WireValidatorProof {
    public_key: Vec<u8>,
    peer_id: Vec<u8>,
    signature: ConsensusSignature,
}

impl Codec<ValidatorProof<TrustContext>> for TrustCodec {
    type Error = CodecError;

    fn decode(&self, bytes: Bytes) -> Result<ValidatorProof<TrustContext>, CodecError> {
        let w: WireValidatorProof = decode_borsh(&bytes)?;
        Ok(ValidatorProof::new(w.public_key, w.peer_id, w.signature))
    }

    fn encode(&self, msg: &ValidatorProof<TrustContext>) -> Result<Bytes, CodecError> {
        encode_borsh(&WireValidatorProof {
            public_key: msg.public_key.clone(),
            peer_id: msg.peer_id.clone(),
            signature: msg.signature,
        })
    }
}

fn to_wire(r: &Response<TrustContext>) -> WireValueResponse {
    let Response::ValueResponse(v) = r;
    WireValueResponse {
        start_height: v.start_height,
        values: v
            .values
            .iter()
            .map(|d| WireDecided {
                value_bytes: d.value_bytes.to_vec(),
                certificate: WireCertificate::from(&d.certificate),
            })
            .collect(),
    }
}

impl Codec<Response<TrustContext>> for TrustCodec {
    type Error = CodecError;

    fn decode(&self, bytes: Bytes) -> Result<Response<TrustContext>, CodecError> {
        let w: WireValueResponse = decode_borsh(&bytes)?;
        Ok(Response::ValueResponse(ValueResponse::new(
            w.start_height,
            w.values
                .into_iter()
                .map(|d| {
                    RawDecidedValue::new(Bytes::from(d.value_bytes), d.certificate.to_extended())
                })
                .collect(),
        )))
    }

    fn encode(&self, msg: &Response<TrustContext>) -> Result<Bytes, CodecError> {
        encode_borsh(&to_wire(msg))
    }
}

impl HasEncodedLen<Response<TrustContext>> for TrustCodec {
    fn encoded_len(&self, msg: &Response<TrustContext>) -> Result<usize, CodecError> {
        borsh::object_length(&to_wire(msg)).map_err(CodecError::Encode)
    }
}
