//! The seat's vote book: every vote and salt this node commits to, kept in sled and
//! flushed **before** the commitment leaves the node, so a node that crashes between
//! commit and reveal still reveals after restart (a commitment whose salt is lost can
//! never be opened, and the seat would be slashed as a no-show).
//!
//! Keys are `(session, segment, round)`; the value records the vote, its reason, the salt,
//! the seat and whether the reveal was sent. Entries of decided sessions are dropped with
//! [`VoteBook::forget_session`]. Records written before votes carried reasons (without the
//! field) still read, with an empty reason.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use trust_protocol::{AccountId, Commitment, Hash, Salt, Vote, commitment, encoding};

const TREE: &str = "audit/votes";

/// Why the vote book failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VoteBookError {
    /// sled failed.
    #[error("vote book storage: {0}")]
    Db(#[from] sled::Error),
    /// Stored bytes do not decode.
    #[error("vote book entry is corrupt: {0}")]
    Corrupt(#[source] encoding::DecodeError),
    /// The vote was written but could not be flushed to disk: it must not be committed.
    /// One failed flush fails every vote it was to write, so they share its error.
    #[error("vote not flushed to disk: {0}")]
    NotFlushed(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// A different vote is already recorded for this seat: committing again would
    /// equivocate.
    #[error("a different vote is already recorded for session {session} segment {segment}")]
    Conflict {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
    },
}

/// One recorded vote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteRecord {
    /// Session.
    pub session: Hash,
    /// Segment index in the manifest.
    pub segment: u16,
    /// Round (1 after an escalation).
    pub round: u8,
    /// The segment's blinded id (part of the commitment).
    pub segment_id: Hash,
    /// This node's seat account.
    pub seat: AccountId,
    /// The vote.
    pub vote: Vote,
    /// The salt.
    pub salt: Salt,
    /// Whether the reveal has been sent.
    pub revealed: bool,
    /// Why the seat voted so, already fitted to the protocol's limit
    /// ([`trust_protocol::fit_reason`]): bound into the commitment, sent with the reveal.
    pub reason: String,
}

/// A record as written before votes carried reasons: read back with an empty reason.
#[derive(Deserialize, Serialize)]
struct RecordWithoutReason {
    session: Hash,
    segment: u16,
    round: u8,
    segment_id: Hash,
    seat: AccountId,
    vote: Vote,
    salt: Salt,
    revealed: bool,
}

impl From<RecordWithoutReason> for VoteRecord {
    fn from(r: RecordWithoutReason) -> Self {
        Self {
            session: r.session,
            segment: r.segment,
            round: r.round,
            segment_id: r.segment_id,
            seat: r.seat,
            vote: r.vote,
            salt: r.salt,
            revealed: r.revealed,
            reason: String::new(),
        }
    }
}

impl VoteRecord {
    /// The commitment this record opens.
    pub fn commitment(&self) -> Commitment {
        commitment(
            &self.session,
            &self.segment_id,
            &self.seat,
            self.vote,
            &self.salt,
            &self.reason,
        )
    }
}

fn key(session: &Hash, segment: u16, round: u8) -> Vec<u8> {
    let mut k = session.as_ref().to_vec();
    k.extend_from_slice(&segment.to_be_bytes());
    k.push(round);
    k
}

/// The vote book.
#[derive(Debug, Clone)]
pub struct VoteBook {
    db: sled::Db,
    tree: sled::Tree,
}

impl VoteBook {
    /// Opens the book in a node's database.
    pub fn open(db: &sled::Db) -> Result<Self, VoteBookError> {
        Ok(Self {
            db: db.clone(),
            tree: db.open_tree(TREE)?,
        })
    }

    fn decode(bytes: &[u8]) -> Result<VoteRecord, VoteBookError> {
        // An older record lacks the trailing reason, so it never decodes as a current one
        // (the reason's length prefix is missing), and a current one never as an older one
        // (its reason is trailing bytes).
        encoding::decode::<VoteRecord>(bytes).or_else(|e| {
            encoding::decode::<RecordWithoutReason>(bytes)
                .map(VoteRecord::from)
                .map_err(|_| VoteBookError::Corrupt(e))
        })
    }

    /// Records a vote and flushes it to disk; only then may its commitment be sent.
    /// Recording the identical vote again is a no-op (a retry after a crash); a different
    /// vote for the same seat is refused.
    pub fn record(&self, r: &VoteRecord) -> Result<Commitment, VoteBookError> {
        self.record_all(std::slice::from_ref(r))
            .pop()
            .unwrap_or_else(|| {
                Err(VoteBookError::NotFlushed(Arc::from(crate::Cause::from(
                    "no result",
                ))))
            })
    }

    /// Records several votes with one flush to disk (one `fsync` for a block's worth of
    /// seats instead of one each); only then may their commitments be sent. One result
    /// per record, in order, with [`VoteBook::record`]'s rules; when the flush fails, every
    /// record fails with it.
    pub fn record_all(&self, records: &[VoteRecord]) -> Vec<Result<Commitment, VoteBookError>> {
        let mut out: Vec<Result<Commitment, VoteBookError>> = records
            .iter()
            .map(|r| {
                let k = key(&r.session, r.segment, r.round);
                // Insert only if absent, atomically: two judgements racing for one seat
                // cannot both believe their salt is the one kept.
                match self
                    .tree
                    .compare_and_swap(&k, None::<&[u8]>, Some(encoding::encode(r)))?
                {
                    Ok(()) => Ok(r.commitment()),
                    Err(sled::CompareAndSwapError { current, .. }) => {
                        let old = Self::decode(&current.unwrap_or_default())?;
                        if (old.vote, old.salt, old.seat, old.segment_id, &old.reason)
                            != (r.vote, r.salt, r.seat, r.segment_id, &r.reason)
                        {
                            return Err(VoteBookError::Conflict {
                                session: r.session,
                                segment: r.segment,
                            });
                        }
                        // A retry after a crash: the flush below puts it on disk.
                        Ok(old.commitment())
                    }
                }
            })
            .collect();
        if let Err(e) = self.db.flush() {
            let why: Arc<dyn std::error::Error + Send + Sync> = Arc::new(e);
            for r in &mut out {
                if r.is_ok() {
                    *r = Err(VoteBookError::NotFlushed(why.clone()));
                }
            }
        }
        out
    }

    /// The recorded vote of a seat, if any.
    pub fn get(
        &self,
        session: &Hash,
        segment: u16,
        round: u8,
    ) -> Result<Option<VoteRecord>, VoteBookError> {
        self.tree
            .get(key(session, segment, round))?
            .map(|b| Self::decode(&b))
            .transpose()
    }

    /// Votes of a session still waiting for their reveal (what to send once the commit
    /// window has closed, including after a restart).
    pub fn unrevealed(&self, session: &Hash) -> Result<Vec<VoteRecord>, VoteBookError> {
        let mut out = Vec::new();
        for item in self.tree.scan_prefix(session.as_ref()) {
            let (_, v) = item?;
            let r = Self::decode(&v)?;
            if !r.revealed {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Marks a vote as revealed.
    pub fn mark_revealed(
        &self,
        session: &Hash,
        segment: u16,
        round: u8,
    ) -> Result<(), VoteBookError> {
        let k = key(session, segment, round);
        if let Some(b) = self.tree.get(&k)? {
            let mut r = Self::decode(&b)?;
            r.revealed = true;
            self.tree.insert(k, encoding::encode(&r))?;
            self.db.flush()?;
        }
        Ok(())
    }

    /// Drops every entry of a decided session; returns how many.
    pub fn forget_session(&self, session: &Hash) -> Result<usize, VoteBookError> {
        let keys: Vec<sled::IVec> = self
            .tree
            .scan_prefix(session.as_ref())
            .keys()
            .collect::<Result<_, _>>()?;
        for k in &keys {
            self.tree.remove(k)?;
        }
        self.db.flush()?;
        Ok(keys.len())
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::{Keypair, verify_commitment};

    use super::*;

    fn record(session: &str, segment: u16, vote: Vote) -> VoteRecord {
        VoteRecord {
            session: Hash::sha256(session.as_bytes()),
            segment,
            round: 0,
            segment_id: Hash::sha256(&segment.to_le_bytes()),
            seat: Keypair::from_label("seat").public(),
            vote,
            salt: Salt([segment as u8; 32]),
            revealed: false,
            reason: format!("segment {segment} looks {vote:?}"),
        }
    }

    /// Opens a sled database that a dropped handle may still be closing: sled's flusher
    /// thread releases the file lock shortly after the last handle goes, so a restart
    /// waits for the lock (bounded) as a restarted process would.
    fn reopen(path: &std::path::Path) -> sled::Db {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match sled::open(path) {
                Ok(db) => return db,
                Err(e) if std::time::Instant::now() < deadline => {
                    assert!(e.to_string().contains("lock"), "{e}");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn a_vote_survives_a_restart_and_opens_its_commitment() {
        let dir = tempfile::tempdir().unwrap();
        let r = record("s", 3, Vote::Invalid);
        let c = {
            let db = sled::open(dir.path()).unwrap();
            let book = VoteBook::open(&db).unwrap();
            book.record(&r).unwrap()
            // dropped without any further flush: `record` flushed already
        };
        let db = reopen(dir.path());
        let book = VoteBook::open(&db).unwrap();
        let back = book.unrevealed(&r.session).unwrap();
        assert_eq!(back, vec![r.clone()]);
        assert!(verify_commitment(
            &c,
            &r.session,
            &r.segment_id,
            &r.seat,
            back[0].vote,
            &back[0].salt,
            &back[0].reason
        ));
        assert_eq!(back[0].reason, "segment 3 looks Invalid");
        book.mark_revealed(&r.session, 3, 0).unwrap();
        assert!(book.unrevealed(&r.session).unwrap().is_empty());
        assert!(book.get(&r.session, 3, 0).unwrap().unwrap().revealed);
    }

    /// A batch is on disk after one call (the database reopened finds every vote), and
    /// one conflicting record in it fails alone.
    #[test]
    fn a_batch_is_flushed_together_and_a_conflict_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let batch: Vec<VoteRecord> = (0..20)
            .map(|i| {
                record(
                    "s",
                    i,
                    if i % 2 == 0 {
                        Vote::Valid
                    } else {
                        Vote::Invalid
                    },
                )
            })
            .collect();
        {
            let db = sled::open(dir.path()).unwrap();
            let book = VoteBook::open(&db).unwrap();
            book.record(&batch[5]).unwrap();
            let mut with_conflict = batch.clone();
            with_conflict.push(record("s", 5, Vote::Valid)); // segment 5 holds Invalid
            let out = book.record_all(&with_conflict);
            assert_eq!(out.len(), 21);
            assert!(out[..20].iter().all(Result::is_ok), "{out:?}");
            assert!(matches!(
                out[20],
                Err(VoteBookError::Conflict { segment: 5, .. })
            ));
        }
        let db = reopen(dir.path());
        let book = VoteBook::open(&db).unwrap();
        assert_eq!(book.unrevealed(&batch[0].session).unwrap().len(), 20);
    }

    /// A record written before votes carried reasons still reads (with an empty reason):
    /// an upgraded node's vote book opens, lists and forgets it like any other.
    #[test]
    fn a_record_from_before_reasons_reads_with_an_empty_reason() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let book = VoteBook::open(&db).unwrap();
        let r = record("s", 4, Vote::Valid);
        let old = RecordWithoutReason {
            session: r.session,
            segment: r.segment,
            round: r.round,
            segment_id: r.segment_id,
            seat: r.seat,
            vote: r.vote,
            salt: r.salt,
            revealed: false,
        };
        book.tree
            .insert(key(&r.session, 4, 0), encoding::encode(&old))
            .unwrap();
        let back = book.get(&r.session, 4, 0).unwrap().unwrap();
        assert_eq!(
            back,
            VoteRecord {
                reason: String::new(),
                ..r.clone()
            }
        );
        assert_eq!(book.unrevealed(&r.session).unwrap(), vec![back]);
        book.mark_revealed(&r.session, 4, 0).unwrap();
        assert!(book.get(&r.session, 4, 0).unwrap().unwrap().revealed);
        // Garbage is still refused as corrupt.
        book.tree
            .insert(key(&r.session, 5, 0), &[1u8, 2, 3][..])
            .unwrap();
        assert!(matches!(
            book.get(&r.session, 5, 0),
            Err(VoteBookError::Corrupt(_))
        ));
    }

    #[test]
    fn no_equivocation_and_idempotent_retries() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let book = VoteBook::open(&db).unwrap();
        let r = record("s", 1, Vote::Valid);
        let c = book.record(&r).unwrap();
        assert_eq!(book.record(&r).unwrap(), c);
        assert!(matches!(
            book.record(&record("s", 1, Vote::Invalid)),
            Err(VoteBookError::Conflict { segment: 1, .. })
        ));
        book.record(&record("s", 2, Vote::Valid)).unwrap();
        book.record(&record("other", 1, Vote::Valid)).unwrap();
        assert_eq!(book.unrevealed(&r.session).unwrap().len(), 2);
        assert_eq!(book.forget_session(&r.session).unwrap(), 2);
        assert!(book.get(&r.session, 1, 0).unwrap().is_none());
        assert_eq!(book.unrevealed(&Hash::sha256(b"other")).unwrap().len(), 1);
    }
}
