//! The blob protocol `/trust/blobs/1`: one segment ciphertext by CID, one request and one
//! response per stream, between trust nodes.
//!
//! Bitswap stays the way IPFS nodes fetch from us and our last resort, but between our own
//! nodes a seat asks its peers directly first: the Bitswap library remembers every want a
//! peer sent until that peer's next full wantlist (every 30 s), even once answered, and
//! ignores new ones past 1,024, so a seat node that needs more than 1,024 blocks from one
//! peer within 30 s (a burst of sessions from one provider) would stall on the rest.
//!
//! Bodies are the canonical protocol encoding, read up to a hard limit before decoding. A
//! server answers a peer over its rate ([`BLOB_RATE`](super::BLOB_RATE)) with
//! [`Response::Busy`], and a block it does not hold with [`Response::NotHere`].

use std::io;

use libp2p::StreamProtocol;
use serde::{Deserialize, Serialize};
use trust_protocol::{
    cid::{Cid, MAX_BLOCK_BYTES},
    encoding,
};

use super::sync::{LimitedCodec, invalid_data};

/// The protocol name.
pub const PROTOCOL: StreamProtocol = StreamProtocol::new("/trust/blobs/1");
/// Largest request body read (a CID and its tag, with room to spare).
pub const MAX_REQUEST_BYTES: usize = 64;
/// Largest response body read: one block of the largest size IPFS allows, its tag and length.
pub const MAX_RESPONSE_BYTES: usize = MAX_BLOCK_BYTES + 16;

/// A blob request: the block `cid` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The block wanted.
    pub cid: Cid,
}

/// A blob response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// The block's bytes (the asker checks them against the CID).
    Block(Vec<u8>),
    /// This node does not hold the block.
    NotHere,
    /// The asker is over its rate; nothing was served.
    Busy,
}

/// The codec of `/trust/blobs/1`.
pub type BlobCodec = LimitedCodec<Request, Response, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES>;

/// Decodes a request body as the server reads it (also the fuzz targets' entry).
pub fn decode_request(bytes: &[u8]) -> io::Result<Request> {
    encoding::decode_with_limit(bytes, MAX_REQUEST_BYTES).map_err(invalid_data)
}

/// Decodes a response body as the asker reads it (also the fuzz targets' entry).
pub fn decode_response(bytes: &[u8]) -> io::Result<Response> {
    encoding::decode_with_limit(bytes, MAX_RESPONSE_BYTES).map_err(invalid_data)
}

#[cfg(test)]
mod tests {
    use futures::{executor::block_on, io::Cursor};
    use libp2p::request_response::Codec as _;

    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_too_large_or_malformed() {
        let mut codec = BlobCodec::new();
        let req = Request {
            cid: Cid::of(b"segment"),
        };
        let mut wire = Cursor::new(Vec::new());
        block_on(codec.write_request(&PROTOCOL, &mut wire, req)).unwrap();
        wire.set_position(0);
        assert_eq!(
            block_on(codec.read_request(&PROTOCOL, &mut wire)).unwrap(),
            req
        );

        let largest = Response::Block(vec![7; MAX_BLOCK_BYTES]);
        let mut wire = Cursor::new(Vec::new());
        block_on(codec.write_response(&PROTOCOL, &mut wire, largest.clone())).unwrap();
        wire.set_position(0);
        assert_eq!(
            block_on(codec.read_response(&PROTOCOL, &mut wire)).unwrap(),
            largest
        );

        let mut wire = Cursor::new(Vec::new());
        let over = Response::Block(vec![7; MAX_RESPONSE_BYTES]);
        assert!(block_on(codec.write_response(&PROTOCOL, &mut wire, over)).is_err());
        let mut wire = Cursor::new(vec![0xff; MAX_RESPONSE_BYTES + 1]);
        assert!(block_on(codec.read_response(&PROTOCOL, &mut wire)).is_err());
        assert!(decode_request(&[1, 2, 3]).is_err());
        assert!(decode_response(&[9, 0, 0, 0]).is_err());
    }

    /// The wire form, as the fuzz seeds of `wire_tx_block` hold it: a request is the
    /// CID's digest; an answer a little-endian u32 tag, then a block's u64 length and bytes.
    #[test]
    fn the_wire_form_is_the_canonical_encoding() {
        let segment = b"a segment ciphertext".to_vec();
        let cid = Cid::of(&segment);
        assert_eq!(
            encoding::encode(&Request { cid }),
            cid.0.as_bytes().to_vec()
        );
        let mut block = vec![0, 0, 0, 0];
        block.extend_from_slice(&(segment.len() as u64).to_le_bytes());
        block.extend_from_slice(&segment);
        assert_eq!(encoding::encode(&Response::Block(segment)), block);
        assert_eq!(encoding::encode(&Response::NotHere), vec![1, 0, 0, 0]);
        assert_eq!(encoding::encode(&Response::Busy), vec![2, 0, 0, 0]);
    }
}
