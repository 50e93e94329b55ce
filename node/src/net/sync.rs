//! The block sync protocol `/trust/sync/1`: one request, one response per stream.
//!
//! Bodies are the canonical protocol encoding ([`trust_protocol::encoding`]) with nothing
//! around them; the stream's end marks the body's end. Readers stop at a hard byte
//! limit before decoding, so a peer can never make this node buffer more than
//! [`MAX_RESPONSE_BYTES`] per stream.
//!
//! A server answers a blocks request with what fits [`BLOCKS_BUDGET`], stopping before the
//! first block that would go over without reading it, and a peer over its request rate
//! with [`Response::Busy`].

use std::io;

use async_trait::async_trait;
use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use libp2p::{StreamProtocol, request_response};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use trust_protocol::encoding;

use super::SyncStatus;

/// The protocol name.
pub const PROTOCOL: StreamProtocol = StreamProtocol::new("/trust/sync/1");
/// Largest request body read.
pub const MAX_REQUEST_BYTES: usize = 1024;
/// Largest response body read: the protocol decoder's own ceiling
/// ([`encoding::MAX_MESSAGE_BYTES`]), since nothing larger could decode anyway.
pub const MAX_RESPONSE_BYTES: usize = encoding::MAX_MESSAGE_BYTES;
/// Most blocks served per request, whatever the request asks for.
pub const MAX_BLOCKS_PER_REQUEST: u32 = 64;
/// Bytes of blocks one answer carries at most: the response limit less the room its
/// framing takes (a tag and a length, and a length per block).
pub const BLOCKS_BUDGET: usize = MAX_RESPONSE_BYTES - 16 - 8 * MAX_BLOCKS_PER_REQUEST as usize;
/// Tokens a blocks request costs from the peer's bucket (a status request costs 1).
pub const BLOCKS_COST: u32 = 8;

/// A sync request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// The peer's [`SyncStatus`].
    Status,
    /// Encoded blocks from height `from`, at most `max` of them (capped by the server at
    /// [`MAX_BLOCKS_PER_REQUEST`]).
    Blocks {
        /// First height.
        from: u64,
        /// Most blocks wanted.
        max: u32,
    },
}

/// A sync response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// Answer to [`Request::Status`].
    Status(SyncStatus),
    /// Answer to [`Request::Blocks`]: consecutive encoded blocks, possibly fewer than
    /// asked for (the server's tip, or the response size limit).
    Blocks(Vec<Vec<u8>>),
    /// The peer asked more often than its rate allows; nothing was served.
    Busy,
}

impl Response {
    /// A [`Response::Blocks`] holding the longest prefix of `blocks` (at most `max`) whose
    /// encoding fits [`MAX_RESPONSE_BYTES`].
    pub fn blocks_within_limit(blocks: Vec<Vec<u8>>, max: u32) -> Response {
        // Encoding: u32 variant tag, u64 vector length, then each block as u64 length + bytes.
        let mut size: usize = 4 + 8;
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let fitting: Vec<Vec<u8>> = blocks
            .into_iter()
            .take(max)
            .take_while(|b| {
                size = size.saturating_add(8).saturating_add(b.len());
                size <= MAX_RESPONSE_BYTES
            })
            .collect();
        Response::Blocks(fitting)
    }
}

/// A request-response codec whose bodies are the canonical protocol encoding with
/// nothing around them, each read up to its limit (`REQ`, `RES` bytes) before decoding.
/// The sync protocol's ([`SyncCodec`]) and the blob protocol's
/// ([`BlobCodec`](super::blob_req::BlobCodec)).
pub struct LimitedCodec<Req, Res, const REQ: usize, const RES: usize>(
    std::marker::PhantomData<fn() -> (Req, Res)>,
);

impl<Req, Res, const REQ: usize, const RES: usize> LimitedCodec<Req, Res, REQ, RES> {
    /// The codec.
    pub const fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<Req, Res, const REQ: usize, const RES: usize> Default for LimitedCodec<Req, Res, REQ, RES> {
    fn default() -> Self {
        Self::new()
    }
}

impl<Req, Res, const REQ: usize, const RES: usize> Clone for LimitedCodec<Req, Res, REQ, RES> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<Req, Res, const REQ: usize, const RES: usize> std::fmt::Debug
    for LimitedCodec<Req, Res, REQ, RES>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LimitedCodec({REQ}, {RES})")
    }
}

/// The codec of `/trust/sync/1`.
pub type SyncCodec = LimitedCodec<Request, Response, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES>;

pub(super) fn invalid_data(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// Reads the rest of the stream, refusing it as soon as it exceeds `limit` bytes.
async fn read_limited<T: AsyncRead + Unpin + Send>(
    io: &mut T,
    limit: usize,
) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    io.take(cap).read_to_end(&mut buf).await?;
    if buf.len() > limit {
        return Err(invalid_data(format!(
            "body exceeds the limit of {limit} bytes"
        )));
    }
    Ok(buf)
}

async fn write_limited<T: AsyncWrite + Unpin + Send>(
    io: &mut T,
    body: &impl Serialize,
    limit: usize,
) -> io::Result<()> {
    let bytes = encoding::try_encode(body).map_err(invalid_data)?;
    if bytes.len() > limit {
        return Err(invalid_data(format!(
            "body of {} bytes exceeds the limit of {limit} bytes",
            bytes.len()
        )));
    }
    io.write_all(&bytes).await
}

#[async_trait]
impl<Req, Res, const REQ: usize, const RES: usize> request_response::Codec
    for LimitedCodec<Req, Res, REQ, RES>
where
    Req: Serialize + DeserializeOwned + Send + Sync + 'static,
    Res: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Protocol = StreamProtocol;
    type Request = Req;
    type Response = Res;

    async fn read_request<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Req>
    where
        T: AsyncRead + Unpin + Send,
    {
        let bytes = read_limited(io, REQ).await?;
        encoding::decode_with_limit(&bytes, REQ).map_err(invalid_data)
    }

    async fn read_response<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Res>
    where
        T: AsyncRead + Unpin + Send,
    {
        let bytes = read_limited(io, RES).await?;
        encoding::decode_with_limit(&bytes, RES).map_err(invalid_data)
    }

    async fn write_request<T>(&mut self, _: &StreamProtocol, io: &mut T, req: Req) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_limited(io, &req, REQ).await
    }

    async fn write_response<T>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        res: Res,
    ) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_limited(io, &res, RES).await
    }
}

#[cfg(test)]
mod tests {
    use futures::{executor::block_on, io::Cursor};
    use request_response::Codec as _;
    use trust_protocol::Hash;

    use super::*;

    #[test]
    fn round_trips() {
        let mut codec = SyncCodec::new();
        let req = Request::Blocks { from: 7, max: 3 };
        let mut wire = Cursor::new(Vec::new());
        block_on(codec.write_request(&PROTOCOL, &mut wire, req.clone())).unwrap();
        wire.set_position(0);
        assert_eq!(
            block_on(codec.read_request(&PROTOCOL, &mut wire)).unwrap(),
            req
        );

        let res = Response::Status(SyncStatus {
            height: 9,
            tip: Hash([3; 32]),
        });
        let mut wire = Cursor::new(Vec::new());
        block_on(codec.write_response(&PROTOCOL, &mut wire, res.clone())).unwrap();
        wire.set_position(0);
        assert_eq!(
            block_on(codec.read_response(&PROTOCOL, &mut wire)).unwrap(),
            res
        );
    }

    #[test]
    fn oversized_request_refused() {
        let mut wire = Cursor::new(vec![0u8; MAX_REQUEST_BYTES + 1]);
        let err = block_on(SyncCodec::new().read_request(&PROTOCOL, &mut wire)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn packing_respects_count_and_size() {
        let blocks = vec![vec![1u8; 10]; 5];
        assert_eq!(
            Response::blocks_within_limit(blocks.clone(), 3),
            Response::Blocks(blocks[..3].to_vec())
        );
        let half = vec![0u8; MAX_RESPONSE_BYTES / 2];
        let Response::Blocks(packed) = Response::blocks_within_limit(vec![half; 3], 10) else {
            panic!("blocks expected");
        };
        assert_eq!(packed.len(), 1);
        assert!(encoding::encode(&Response::Blocks(packed)).len() <= MAX_RESPONSE_BYTES);
    }
}
