//! The embedded store as Bitswap's block store: what peers (our nodes or a Kubo) may ask
//! for, and where blocks fetched from peers land.
//!
//! Only CIDv1 raw sha2-256 ids exist here. Any other CID (CIDv0, another codec or hash)
//! is simply not held, so the node never answers with a CIDv0 block prefix, which Kubo
//! does not accept for raw blocks. Blocks arriving from peers go through
//! [`BlobStore::put_verified`]: size limit and CID check, whatever Bitswap checked before.

use cid::CidGeneric;

use super::{BlobError, BlobStore};
use trust_protocol::cid::Cid;

/// Largest multihash the Bitswap behaviour handles (sha2-256 needs 32 bytes).
pub const MAX_MULTIHASH: usize = 64;

/// Our CID type for a Bitswap CID, if it is CIDv1 raw sha2-256.
pub fn from_generic<const S: usize>(cid: &CidGeneric<S>) -> Option<Cid> {
    Cid::from_bytes(&cid.to_bytes()).ok()
}

/// The Bitswap CID for one of ours.
pub fn to_generic(cid: &Cid) -> CidGeneric<MAX_MULTIHASH> {
    // Our binary form is always a well-formed CIDv1; this cannot fail.
    CidGeneric::try_from(&cid.to_bytes()[..]).unwrap_or_default()
}

/// Hashes received blocks for Bitswap: sha2-256 only, which is all our CIDs use (beetswap
/// knows no hash function unless one is registered).
#[derive(Debug, Clone, Copy)]
pub struct Sha256Hasher;

impl beetswap::multihasher::Multihasher<MAX_MULTIHASH> for Sha256Hasher {
    async fn hash(
        &self,
        multihash_code: u64,
        input: &[u8],
    ) -> Result<cid::multihash::Multihash<MAX_MULTIHASH>, beetswap::multihasher::MultihasherError>
    {
        use beetswap::multihasher::MultihasherError;
        if multihash_code != u64::from(trust_protocol::cid::SHA2_256) {
            return Err(MultihasherError::UnknownMultihashCode);
        }
        let digest = trust_protocol::Hash::sha256(input);
        cid::multihash::Multihash::wrap(multihash_code, digest.as_bytes())
            .map_err(|_| MultihasherError::InvalidMultihashSize)
    }
}

fn store_error(e: BlobError) -> blockstore::Error {
    match e {
        BlobError::TooLarge { .. } => blockstore::Error::ValueTooLarge,
        BlobError::Mismatch(c) => {
            blockstore::Error::StoredDataError(format!("bytes do not match {c}"))
        }
        BlobError::Corrupted(c) => blockstore::Error::StoredDataError(format!("{c} is corrupted")),
        BlobError::Db(e) => blockstore::Error::FatalDatabaseError(e.to_string()),
        other => blockstore::Error::StoredDataError(other.to_string()),
    }
}

impl blockstore::Blockstore for BlobStore {
    async fn get<const S: usize>(
        &self,
        cid: &CidGeneric<S>,
    ) -> blockstore::Result<Option<Vec<u8>>> {
        match from_generic(cid) {
            Some(c) => BlobStore::get(self, &c).map_err(store_error),
            None => Ok(None),
        }
    }

    async fn put_keyed<const S: usize>(
        &self,
        cid: &CidGeneric<S>,
        data: &[u8],
    ) -> blockstore::Result<()> {
        let c = from_generic(cid).ok_or_else(|| {
            blockstore::Error::StoredDataError(format!("only CIDv1 raw sha2-256 is kept: {cid}"))
        })?;
        self.put_verified(&c, data).map_err(store_error)
    }

    async fn remove<const S: usize>(&self, cid: &CidGeneric<S>) -> blockstore::Result<()> {
        if let Some(c) = from_generic(cid) {
            self.remove(&c).map_err(store_error)?;
        }
        Ok(())
    }

    async fn has<const S: usize>(&self, cid: &CidGeneric<S>) -> blockstore::Result<bool> {
        match from_generic(cid) {
            Some(c) => BlobStore::has(self, &c).map_err(store_error),
            None => Ok(false),
        }
    }

    async fn close(self) -> blockstore::Result<()> {
        self.flush().map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use blockstore::Blockstore;

    use super::*;

    #[tokio::test]
    async fn only_cidv1_raw_sha256_blocks_are_held_and_inputs_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let s = BlobStore::open(&db).unwrap();
        let ours = s.put(b"ciphertext").unwrap();
        let g = to_generic(&ours);
        assert_eq!(g.to_string(), ours.to_string(), "same text form as IPFS");
        assert_eq!(
            Blockstore::get(&s, &g).await.unwrap(),
            Some(b"ciphertext".to_vec())
        );
        // The same digest as CIDv0 (dag-pb) or under another codec is not ours.
        let v0 = CidGeneric::<64>::new_v0(*g.hash()).unwrap();
        assert_eq!(Blockstore::get(&s, &v0).await.unwrap(), None);
        let dag_cbor = CidGeneric::<64>::new_v1(0x71, *g.hash());
        assert!(!Blockstore::has(&s, &dag_cbor).await.unwrap());
        assert!(Blockstore::put_keyed(&s, &dag_cbor, b"x").await.is_err());
        // A block offered for a CID it does not match is refused and not stored.
        let other = to_generic(&Cid::of(b"other"));
        assert!(
            Blockstore::put_keyed(&s, &other, b"not other")
                .await
                .is_err()
        );
        assert!(!Blockstore::has(&s, &other).await.unwrap());
        Blockstore::put_keyed(&s, &other, b"other").await.unwrap();
        assert!(Blockstore::has(&s, &other).await.unwrap());
    }
}
