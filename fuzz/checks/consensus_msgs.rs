//! Consensus, sync and gossip messages, decoded by the codecs the node hands its networks:
//! Malachite's consensus, liveness, proposal-stream, sync and WAL messages through
//! `TrustCodec` (borsh with a size limit), the commit certificate the ledger stores and
//! syncs, the node's own `/trust/sync/1` requests and responses, proposal streams put
//! back together as they arrive from peers, and gossiped transactions through the swarm's
//! own check.
//!
//! The first byte picks the decoder, the rest is the message. Properties: no panic;
//! whatever decodes encodes, and that encoding decodes and encodes to the same bytes;
//! the node's sync messages, in their canonical encoding, re-encode to exactly the input.
use bytes::Bytes;
use malachitebft_app::{
    consensus::{LivenessMsg, ProposedValue, SignedConsensusMsg},
    streaming::StreamMessage,
    types::{
        PeerId,
        codec::Codec,
        sync::{Request, Response, Status},
    },
};
use malachitebft_core_types::{PolkaCertificate, ValidatorProof};
use trust_node::{
    consensus::{
        codec::{
            MAX_CONSENSUS_MESSAGE_BYTES, TrustCodec, WireCertificate, decode_borsh, encode_borsh,
        },
        context::{ProposalPart, TrustContext},
        proposals::Streams,
    },
    net::sync,
};
use trust_protocol::{Hash, encoding};

/// Decode, encode, decode, encode: the two encodings must agree.
fn codec_round_trip<T>(data: &[u8])
where
    TrustCodec: Codec<T>,
{
    let codec = TrustCodec;
    let Ok(value) = Codec::<T>::decode(&codec, Bytes::copy_from_slice(data)) else {
        return;
    };
    assert!(data.len() <= MAX_CONSENSUS_MESSAGE_BYTES);
    let first = Codec::<T>::encode(&codec, &value).expect("a decoded message encodes");
    let back = Codec::<T>::decode(&codec, first.clone()).expect("its own encoding decodes");
    let second = Codec::<T>::encode(&codec, &back).expect("encodes again");
    assert_eq!(first, second, "encoding is not stable across a round trip");
}

fn sync_round_trip<T>(data: &[u8], limit: usize)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let Ok(value) = encoding::decode_with_limit::<T>(data, limit) else {
        return;
    };
    assert!(data.len() <= limit);
    assert_eq!(encoding::encode(&value), data);
}

/// Length-prefixed (u16, little-endian) proposal-stream messages from one peer.
fn streams(data: &[u8]) {
    // An ed25519 peer id: identity multihash of the protobuf-encoded public key.
    let mut id = vec![0x00, 0x24, 0x08, 0x01, 0x12, 0x20];
    id.extend_from_slice(&[7u8; 32]);
    let peer = PeerId::from_bytes(&id).expect("a well-formed peer id");
    let chain = Hash([1u8; 32]);
    let mut streams = Streams::default();
    let mut rest = data;
    while rest.len() >= 2 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        let end = (2 + len).min(rest.len());
        let msg = &rest[2..end];
        rest = &rest[end..];
        if let Ok(m) = decode_borsh::<StreamMessage<ProposalPart>>(msg)
            && let Some(Ok(assembled)) = streams.insert(&chain, peer, m)
        {
            assert_eq!(assembled.block.header.height, assembled.init.height.0);
        }
    }
}

/// One input, as the fuzzer (and the seed replay test) gives it.
pub(crate) fn check(data: &[u8]) {
    let Some((&which, msg)) = data.split_first() else {
        return;
    };
    match which % 14 {
        0 => codec_round_trip::<ProposalPart>(msg),
        1 => codec_round_trip::<SignedConsensusMsg<TrustContext>>(msg),
        2 => codec_round_trip::<LivenessMsg<TrustContext>>(msg),
        3 => codec_round_trip::<StreamMessage<ProposalPart>>(msg),
        4 => codec_round_trip::<ProposedValue<TrustContext>>(msg),
        5 => codec_round_trip::<PolkaCertificate<TrustContext>>(msg),
        6 => codec_round_trip::<Status<TrustContext>>(msg),
        7 => codec_round_trip::<Request<TrustContext>>(msg),
        8 => codec_round_trip::<Response<TrustContext>>(msg),
        9 => codec_round_trip::<ValidatorProof<TrustContext>>(msg),
        10 => {
            if let Ok(c) = decode_borsh::<WireCertificate>(msg) {
                let again = encode_borsh(&c).expect("encodes");
                assert_eq!(
                    &again[..],
                    msg,
                    "borsh re-encodes a certificate to other bytes"
                );
                assert_eq!(WireCertificate::from(&c.to_extended()), c);
                let _ = c.to_commit();
            }
        }
        11 => {
            sync_round_trip::<sync::Request>(msg, sync::MAX_REQUEST_BYTES);
            sync_round_trip::<sync::Response>(msg, sync::MAX_RESPONSE_BYTES);
        }
        12 => streams(msg),
        _ => {
            if let Ok(tx) = trust_node::net::check_gossiped_tx(msg, &trust_protocol::Hash::ZERO) {
                assert_eq!(encoding::encode(&tx), msg);
            }
        }
    }
}
