//! An external IPFS node (Kubo) through its RPC API, for operators who run one: the
//! provider's node also stores its ciphertexts there (`block/put?format=raw`, pinned), and
//! seats read from it (`block/get`) before they ask peers over Bitswap.
//!
//! Kubo is trusted with nothing: the CID it reports for a put must be the one we computed
//! (a CIDv0 `Qm…` answer means it ignored `format=raw`), and every block it returns is
//! size-limited and checked against the CID asked for. Every call has a timeout, so a dead
//! endpoint is an error, never a hang.

use std::{io::Cursor, str::FromStr, time::Duration};

use futures::TryStreamExt;
use ipfs_api_backend_hyper::{IpfsApi, IpfsClient, TryFromUri, request::BlockPut};
use trust_protocol::cid::{Cid, MAX_BLOCK_BYTES};

use super::BlobError;

/// How long one RPC call may take.
pub const KUBO_TIMEOUT: Duration = Duration::from_secs(10);

/// A Kubo RPC endpoint.
pub struct Kubo {
    client: IpfsClient,
    url: String,
    timeout: Duration,
}

impl std::fmt::Debug for Kubo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubo").field("url", &self.url).finish()
    }
}

impl Kubo {
    /// A client for the RPC API at `url`, e.g. `http://127.0.0.1:5001` (plain HTTP: the
    /// RPC API is meant for loopback or a private network).
    pub fn new(url: &str) -> Result<Self, BlobError> {
        let bad = |why: &str| BlobError::Kubo {
            url: url.to_string(),
            message: why.to_string(),
        };
        if !url.starts_with("http://") {
            return Err(bad("the IPFS RPC URL must start with http://"));
        }
        let client = IpfsClient::from_str(url).map_err(|e| BlobError::KuboUrl {
            url: url.to_string(),
            source: e.into(),
        })?;
        Ok(Self {
            client,
            url: url.to_string(),
            timeout: KUBO_TIMEOUT,
        })
    }

    /// The same client with another per-call timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, message: impl std::fmt::Display) -> BlobError {
        BlobError::Kubo {
            url: self.url.clone(),
            message: message.to_string(),
        }
    }

    fn failed(&self, call: &'static str, source: ipfs_api_backend_hyper::Error) -> BlobError {
        BlobError::KuboCall {
            url: self.url.clone(),
            call,
            source,
        }
    }

    /// Stores and pins a raw block; returns its CID after checking that Kubo computed the
    /// same one.
    pub async fn put(&self, bytes: &[u8]) -> Result<Cid, BlobError> {
        if bytes.len() > MAX_BLOCK_BYTES {
            return Err(BlobError::TooLarge { len: bytes.len() });
        }
        let ours = Cid::of(bytes);
        let options = BlockPut {
            format: Some("raw"),
            mhtype: Some("sha2-256"),
            mhlen: Some(32),
            pin: Some(true),
        };
        let call = self
            .client
            .block_put_with_options(Cursor::new(bytes.to_vec()), options);
        let answer = tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| self.error(format!("block/put took over {:?}", self.timeout)))?
            .map_err(|e| self.failed("block/put", e))?;
        match Cid::from_str(&answer.key) {
            Ok(theirs) if theirs == ours => Ok(ours),
            _ => Err(self.error(format!(
                "block/put answered {}, expected {ours} (a CIDv1 raw sha2-256 id)",
                answer.key
            ))),
        }
    }

    /// Reads a raw block, at most [`MAX_BLOCK_BYTES`], checked against `cid`.
    pub async fn get(&self, cid: &Cid) -> Result<Vec<u8>, BlobError> {
        let text = cid.to_string();
        let read = async {
            let mut stream = self.client.block_get(&text);
            let mut out = Vec::new();
            while let Some(chunk) = stream
                .try_next()
                .await
                .map_err(|e| self.failed("block/get", e))?
            {
                if out.len().saturating_add(chunk.len()) > MAX_BLOCK_BYTES {
                    return Err(BlobError::TooLarge {
                        len: out.len().saturating_add(chunk.len()),
                    });
                }
                out.extend_from_slice(&chunk);
            }
            Ok(out)
        };
        let bytes = tokio::time::timeout(self.timeout, read)
            .await
            .map_err(|_| self.error(format!("block/get took over {:?}", self.timeout)))??;
        if !cid.matches(&bytes) {
            return Err(BlobError::Mismatch(*cid));
        }
        Ok(bytes)
    }
}
