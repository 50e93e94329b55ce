//! `GET /v1/snapshot`: what a new node needs to join from a recent state instead of
//! replaying every block (`trust-node run --state-sync`, [`crate::statesync`]).
//!
//! A chunk of the newest contract snapshot below the tip (so that the block after it is
//! stored too), with the snapshot's block and the next one, each as its stored bytes
//! (block and commit certificate). Nothing here is trusted by the asker: it checks the
//! snapshot's state root against the block's header, the next block's link to it, and the
//! next block's commit certificate against the validator powers it trusts.

use axum::{
    Json,
    extract::{Query, State},
};
use serde::{Deserialize, Serialize};
use trust_protocol::encoding;

use super::{Api, ApiError, ApiResult, ErrorBody};
use crate::view::latest;

/// Snapshot answers built at once: each reads the whole snapshot (the state's size) to cut
/// its chunk, so a stranger asking many at once is answered 503 rather than let it fill
/// the node's memory.
pub const MAX_CONCURRENT: usize = 2;

static SERVING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_CONCURRENT);

/// Largest snapshot chunk served, in bytes (hex doubles it in the answer, within the
/// client's response limit).
pub const CHUNK_BYTES: usize = 2 * 1024 * 1024;

/// Which chunk of which snapshot, or which of its blocks.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct SnapshotQuery {
    /// The snapshot's height, from the first chunk's answer (default: the newest).
    pub height: Option<u64>,
    /// Byte offset of the chunk (default 0).
    pub offset: Option<u64>,
    /// What the answer carries: a chunk of the snapshot (default), or the snapshot's block
    /// (`block`), or the block after it (`next`). Each comes in an answer of its own, so
    /// every answer fits the client's response limit by construction (a block is at most
    /// `MAX_BLOCK_BYTES`, hex doubles it; a chunk is at most [`CHUNK_BYTES`]).
    #[param(inline)]
    pub part: Option<SnapshotPart>,
}

/// The part of a snapshot an answer carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotPart {
    /// A chunk of the snapshot's bytes.
    #[default]
    Chunk,
    /// The block the snapshot is the state after.
    Block,
    /// The block after it, whose certificate vouches for it.
    Next,
}

/// One chunk of a contract snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SnapshotChunk {
    /// Height of the block the snapshot is the state after.
    pub height: u64,
    /// The snapshot's size in bytes.
    pub total: u64,
    /// This chunk's offset.
    pub offset: u64,
    /// The chunk, hex (at most [`CHUNK_BYTES`] bytes; empty when another part was asked).
    pub chunk: String,
    /// The block at `height` as stored (canonical encoding of block and certificate), hex;
    /// only when `part=block` was asked.
    pub block: String,
    /// The block at `height + 1` as stored, hex: its certificate is what vouches for the
    /// snapshot's block; only when `part=next` was asked.
    pub next: String,
}

#[utoipa::path(
    get, path = "/v1/snapshot",
    description = "A chunk of this node's newest contract snapshot below its tip, with the snapshot's block and the next one as stored (block and commit certificate): what `trust-node run --state-sync` fetches and checks (the state root against the block's header, the next block's link and certificate against the powers it trusts). 404 when the node holds no snapshot below its tip, or not the one asked for; 503 while two answers are being built.",
    params(SnapshotQuery),
    responses(
        (status = 200, body = SnapshotChunk),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
pub(super) async fn snapshot(
    State(api): State<Api>,
    query: Result<Query<SnapshotQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<SnapshotChunk>> {
    let Query(q) = query.map_err(|e| ApiError::bad("bad_query", e.body_text()))?;
    let Ok(permit) = SERVING.try_acquire() else {
        return Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!("{MAX_CONCURRENT} snapshot answers are being built: ask again shortly"),
        ));
    };
    let tip = latest(&api.chain).tip.height;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        chunk(&api, tip, &q)
    })
    .await
    .map_err(ApiError::internal)?
    .map(Json)
}

fn chunk(api: &Api, tip: u64, q: &SnapshotQuery) -> ApiResult<SnapshotChunk> {
    let below = tip.saturating_sub(1);
    let asked = q.height.unwrap_or(below).min(below);
    let Some((height, bytes)) = api
        .ledger
        .snapshot_at_or_below(asked)
        .map_err(ApiError::internal)?
        .filter(|(h, _)| *h > 0 && q.height.is_none_or(|want| want == *h))
    else {
        return Err(ApiError::not_found(match q.height {
            Some(h) => format!(
                "no snapshot at height {h} here (it may have been replaced by a newer one: start again without height)"
            ),
            None => format!("no snapshot below the tip ({tip}) here yet"),
        }));
    };
    let raw = |h: u64| -> ApiResult<String> {
        let stored = api
            .ledger
            .block(h)
            .map_err(ApiError::internal)?
            .ok_or_else(|| ApiError::not_found(format!("block {h} is not held here")))?;
        Ok(hex::encode(encoding::encode(&stored)))
    };
    let total = bytes.len() as u64;
    let offset = q.offset.unwrap_or(0);
    if offset > total {
        return Err(ApiError::bad(
            "bad_offset",
            format!("offset {offset} is past the snapshot's {total} bytes"),
        ));
    }
    let part = q.part.unwrap_or_default();
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let end = start.saturating_add(CHUNK_BYTES).min(bytes.len());
    // The blocks are fetched to be sure they are held even when not sent: a snapshot is
    // served only with the blocks that make it checkable.
    let (block, next) = (raw(height)?, raw(height.saturating_add(1))?);
    Ok(SnapshotChunk {
        height,
        total,
        offset,
        chunk: match part {
            SnapshotPart::Chunk => hex::encode(bytes.get(start..end).unwrap_or_default()),
            _ => String::new(),
        },
        block: if part == SnapshotPart::Block {
            block
        } else {
            String::new()
        },
        next: if part == SnapshotPart::Next {
            next
        } else {
            String::new()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finding 10 of issue 53: each answer carries one part, so the largest answer (a
    /// block of `MAX_BLOCK_BYTES` with a certificate, in hex) fits the client's limit; two
    /// full blocks in one answer did not.
    #[test]
    fn the_largest_answer_fits_the_clients_limit() {
        let limit = super::super::client::MAX_RESPONSE_BYTES;
        let certificate_room = 256 * 1024;
        let largest_block = 2 * (trust_protocol::block::MAX_BLOCK_BYTES + certificate_room);
        assert!(largest_block + 4096 <= limit);
        assert!(2 * CHUNK_BYTES + 4096 <= limit);
        assert!(
            2 * largest_block > limit,
            "two blocks in one answer would not fit"
        );
    }
}
