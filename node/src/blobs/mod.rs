//! Content-addressed storage of encrypted segment fragments.
//!
//! Blocks are raw IPFS blocks: the id of a block is its CIDv1 (raw codec, sha2-256), so the
//! same bytes have the same id here, on every peer and in IPFS itself. The embedded store
//! keeps blocks in sled; blocks of open sessions are pinned and survive [`BlobStore::gc`].
//! Every block read back, or received from elsewhere, is checked against its CID, so a
//! corrupted disk or a lying peer is detected instead of passed on.
//!
//! Peers exchange blocks over Bitswap ([`bitswap`]: this store is what the node's Bitswap
//! serves from and stores into); an operator's own IPFS node can be used as well
//! ([`kubo`], `[ipfs] api` in `config.toml`).

pub mod bitswap;
pub mod kubo;

use trust_protocol::{
    Hash,
    cid::{Cid, MAX_BLOCK_BYTES},
};

/// Why a blob operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// The block is larger than IPFS's 1 MiB block limit.
    #[error(
        "block of {len} bytes exceeds the {MAX_BLOCK_BYTES}-byte limit (segments are small: split the trace)"
    )]
    TooLarge {
        /// Its length.
        len: usize,
    },
    /// Bytes offered for a CID are not the block that CID names.
    #[error("bytes do not match {0}")]
    Mismatch(Cid),
    /// A stored block no longer matches its CID (disk corruption).
    #[error("stored block {0} is corrupted")]
    Corrupted(Cid),
    /// An external IPFS node (Kubo RPC) failed or answered wrongly.
    #[error("IPFS RPC at {url}: {message}")]
    Kubo {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A call to an external IPFS node (Kubo RPC) failed.
    #[error("IPFS RPC at {url}: {call}: {source}")]
    KuboCall {
        /// The endpoint.
        url: String,
        /// The RPC call (`block/put`, `block/get`).
        call: &'static str,
        /// Why.
        #[source]
        source: ipfs_api_backend_hyper::Error,
    },
    /// The IPFS RPC URL does not parse.
    #[error("IPFS RPC at {url}: {source}")]
    KuboUrl {
        /// The URL given.
        url: String,
        /// Why it is no URL.
        #[source]
        source: crate::Cause,
    },
    /// The database failed.
    #[error("blob store: {0}")]
    Db(#[from] sled::Error),
}

/// The embedded block store.
#[derive(Debug, Clone)]
pub struct BlobStore {
    blocks: sled::Tree,
    pins: sled::Tree,
}

impl BlobStore {
    /// Opens (or creates) the store's trees in `db`.
    pub fn open(db: &sled::Db) -> Result<BlobStore, BlobError> {
        Ok(BlobStore {
            blocks: db.open_tree("blobs/blocks")?,
            pins: db.open_tree("blobs/pins")?,
        })
    }

    /// Stores a block and returns its CID. Storing the same bytes twice is a no-op.
    pub fn put(&self, bytes: &[u8]) -> Result<Cid, BlobError> {
        if bytes.len() > MAX_BLOCK_BYTES {
            return Err(BlobError::TooLarge { len: bytes.len() });
        }
        let cid = Cid::of(bytes);
        self.blocks.insert(cid.0.as_bytes(), bytes)?;
        Ok(cid)
    }

    /// Stores a block received for `cid` (from a peer or IPFS) after checking it.
    pub fn put_verified(&self, cid: &Cid, bytes: &[u8]) -> Result<(), BlobError> {
        if bytes.len() > MAX_BLOCK_BYTES {
            return Err(BlobError::TooLarge { len: bytes.len() });
        }
        if !cid.matches(bytes) {
            return Err(BlobError::Mismatch(*cid));
        }
        self.blocks.insert(cid.0.as_bytes(), bytes)?;
        Ok(())
    }

    /// The block with this CID, if held; checked against the CID on the way out.
    pub fn get(&self, cid: &Cid) -> Result<Option<Vec<u8>>, BlobError> {
        match self.blocks.get(cid.0.as_bytes())? {
            None => Ok(None),
            Some(v) if cid.matches(&v) => Ok(Some(v.to_vec())),
            Some(_) => Err(BlobError::Corrupted(*cid)),
        }
    }

    /// Drops a block (pins are not consulted: see [`BlobStore::gc`] for that).
    pub fn remove(&self, cid: &Cid) -> Result<(), BlobError> {
        self.blocks.remove(cid.0.as_bytes())?;
        Ok(())
    }

    /// Whether the block is held.
    pub fn has(&self, cid: &Cid) -> Result<bool, BlobError> {
        Ok(self.blocks.contains_key(cid.0.as_bytes())?)
    }

    /// Pins blocks for a session so [`BlobStore::gc`] keeps them.
    pub fn pin(&self, session: &Hash, cids: &[Cid]) -> Result<(), BlobError> {
        let mut batch = sled::Batch::default();
        for cid in cids {
            batch.insert(pin_key(session, cid).as_slice(), &[]);
        }
        self.pins.apply_batch(batch)?;
        Ok(())
    }

    /// Releases a session's pins (its blocks go at the next [`BlobStore::gc`] unless
    /// another session pins them).
    pub fn unpin(&self, session: &Hash) -> Result<(), BlobError> {
        let mut batch = sled::Batch::default();
        for kv in self.pins.scan_prefix(session.as_bytes()) {
            let (k, _) = kv?;
            batch.remove(k);
        }
        self.pins.apply_batch(batch)?;
        Ok(())
    }

    /// Ends a session's hold on its blocks: unpins them and removes those that no other
    /// session pins. Returns how many blocks were removed.
    pub fn release(&self, session: &Hash) -> Result<usize, BlobError> {
        let mine: Vec<Vec<u8>> = self
            .pins
            .scan_prefix(session.as_bytes())
            .keys()
            .map(|k| k.map(|k| k.get(32..64).map(<[u8]>::to_vec).unwrap_or_default()))
            .collect::<Result<_, _>>()?;
        self.unpin(session)?;
        if mine.is_empty() {
            return Ok(0);
        }
        let still_pinned: std::collections::BTreeSet<Vec<u8>> = self
            .pins
            .iter()
            .keys()
            .map(|k| k.map(|k| k.get(32..64).map(<[u8]>::to_vec).unwrap_or_default()))
            .collect::<Result<_, _>>()?;
        let mut removed = 0usize;
        for cid in mine.iter().filter(|c| !still_pinned.contains(*c)) {
            if self.blocks.remove(cid)?.is_some() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes every block no session pins; returns how many were removed.
    pub fn gc(&self) -> Result<usize, BlobError> {
        let mut pinned = std::collections::BTreeSet::new();
        for kv in self.pins.iter() {
            let (k, _) = kv?;
            if let Some(cid) = k.get(32..64) {
                pinned.insert(cid.to_vec());
            }
        }
        let mut removed = 0usize;
        for kv in self.blocks.iter() {
            let (k, _) = kv?;
            if !pinned.contains(k.as_ref()) {
                self.blocks.remove(k)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Number of blocks held.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is held.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Writes everything to disk.
    pub fn flush(&self) -> Result<(), BlobError> {
        self.blocks.flush()?;
        self.pins.flush()?;
        Ok(())
    }

    #[cfg(test)]
    fn raw_blocks(&self) -> &sled::Tree {
        &self.blocks
    }
}

fn pin_key(session: &Hash, cid: &Cid) -> [u8; 64] {
    let mut k = [0u8; 64];
    k[..32].copy_from_slice(session.as_bytes());
    k[32..].copy_from_slice(cid.0.as_bytes());
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, sled::Db, BlobStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sled::open(dir.path()).expect("sled");
        let s = BlobStore::open(&db).expect("open");
        (dir, db, s)
    }

    #[test]
    fn put_get_by_the_ipfs_cid_and_survive_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cid = {
            let db = sled::open(dir.path()).expect("sled");
            let s = BlobStore::open(&db).expect("open");
            let cid = s.put(b"hello world").expect("put");
            assert_eq!(
                cid.to_string(),
                "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
            );
            s.flush().expect("flush");
            cid
        };
        // sled's I/O threads may hold the file lock a moment after the last handle.
        let db = crate::reopen::when_unlocked(|| sled::open(dir.path())).expect("reopen");
        let s = BlobStore::open(&db).expect("open");
        assert_eq!(s.get(&cid).expect("get"), Some(b"hello world".to_vec()));
        assert!(s.get(&Cid::of(b"other")).expect("get").is_none());
    }

    #[test]
    fn oversized_and_mismatched_blocks_are_refused() {
        let (_d, _db, s) = store();
        let big = vec![0u8; MAX_BLOCK_BYTES + 1];
        assert!(matches!(s.put(&big), Err(BlobError::TooLarge { .. })));
        let cid = Cid::of(b"real");
        assert!(matches!(
            s.put_verified(&cid, b"fake"),
            Err(BlobError::Mismatch(c)) if c == cid
        ));
        assert!(!s.has(&cid).expect("has"));
        s.put_verified(&cid, b"real")
            .expect("matching bytes are stored");
        assert!(s.has(&cid).expect("has"));
        assert!(s.put(&vec![0u8; MAX_BLOCK_BYTES]).is_ok());
    }

    #[test]
    fn corruption_on_disk_is_detected() {
        let (_d, _db, s) = store();
        let cid = s.put(b"segment").expect("put");
        s.raw_blocks()
            .insert(cid.0.as_bytes(), b"tampered".as_slice())
            .expect("raw write");
        assert!(matches!(s.get(&cid), Err(BlobError::Corrupted(_))));
    }

    #[test]
    fn release_removes_a_sessions_blocks_unless_another_pins_them() {
        let (_d, _db, s) = store();
        let (a, b) = (s.put(b"a").expect("put"), s.put(b"b").expect("put"));
        let (s1, s2) = (Hash::sha256(b"s1"), Hash::sha256(b"s2"));
        s.pin(&s1, &[a, b]).expect("pin");
        s.pin(&s2, &[b]).expect("pin");
        assert_eq!(s.release(&s1).expect("release"), 1);
        assert!(!s.has(&a).expect("has") && s.has(&b).expect("has"));
        assert_eq!(s.release(&s2).expect("release"), 1);
        assert!(s.is_empty());
        assert_eq!(s.release(&s1).expect("again"), 0);
    }

    #[test]
    fn gc_keeps_pinned_blocks_only() {
        let (_d, _db, s) = store();
        let (a, b, c) = (
            s.put(b"a").expect("put"),
            s.put(b"b").expect("put"),
            s.put(b"c").expect("put"),
        );
        let (s1, s2) = (Hash::sha256(b"s1"), Hash::sha256(b"s2"));
        s.pin(&s1, &[a, b]).expect("pin");
        s.pin(&s2, &[b]).expect("pin");
        assert_eq!(s.gc().expect("gc"), 1);
        assert!(!s.has(&c).expect("has"));
        s.unpin(&s1).expect("unpin");
        assert_eq!(s.gc().expect("gc"), 1);
        assert!(!s.has(&a).expect("has") && s.has(&b).expect("has"));
        assert_eq!(s.len(), 1);
    }
}
