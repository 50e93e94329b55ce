//! The provider's own list of the sessions it opened: each with the labels its operator
//! gave it (model, run id, dataset row) and the idempotency key it was asked under, kept
//! in this node's database and never on chain.
//!
//! **Idempotency.** A request that carries a key is answered, when the key was seen
//! before with the same request, by the session that first request opened: nothing is
//! prepared, signed or charged again. The same key with another request is refused (a
//! client reusing a key for a new trace would otherwise be told its new trace was
//! audited). Keyed requests run one at a time, so two retries racing each other open one
//! session.
//!
//! **Bounded.** At most [`MAX_LISTED`] sessions are kept; past that the oldest entry and
//! its key go. Labels and keys are bounded in number and size ([`check_labels`],
//! [`check_key`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trust_protocol::Hash;
use utoipa::ToSchema;

use super::Submitted;

/// Most sessions the list keeps.
pub const MAX_LISTED: usize = 100_000;
/// Most labels on one session.
pub const MAX_LABELS: usize = 16;
/// Longest label name, in bytes.
pub const MAX_LABEL_KEY: usize = 64;
/// Longest label value, in bytes.
pub const MAX_LABEL_VALUE: usize = 256;
/// Longest idempotency key, in bytes.
pub const MAX_IDEMPOTENCY_KEY: usize = 128;

/// One session this node opened, as its list keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    /// What `POST /v1/sessions` answered when it opened.
    pub submitted: Submitted,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// The idempotency key it was opened under, if any.
    pub key: Option<String>,
    /// The hash of the request that opened it (trace, HDAG, terms, labels).
    pub request: Hash,
    /// When it was opened, Unix milliseconds.
    pub opened_ms: u64,
}

/// Why labels or a key cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingError {
    /// A label or key breaks a size or character rule; the message names it.
    #[error("{0}")]
    Invalid(String),
    /// The key was used before for a different request.
    #[error(
        "idempotency key {key:?} was used for a different request (session {session}): use a new key for a new request"
    )]
    KeyReused {
        /// The key.
        key: String,
        /// The session the first request opened.
        session: Hash,
    },
}

/// Labels are 1 to [`MAX_LABELS`] pairs; a name is 1 to [`MAX_LABEL_KEY`] bytes of
/// letters, digits, `_`, `-`, `.` and `/`; a value at most [`MAX_LABEL_VALUE`] bytes with
/// no control character.
pub fn check_labels(labels: &BTreeMap<String, String>) -> Result<(), ListingError> {
    if labels.len() > MAX_LABELS {
        return Err(ListingError::Invalid(format!(
            "{} labels: a session takes at most {MAX_LABELS}",
            labels.len()
        )));
    }
    for (k, v) in labels {
        let name_ok = !k.is_empty()
            && k.len() <= MAX_LABEL_KEY
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
        if !name_ok {
            return Err(ListingError::Invalid(format!(
                "label name {:?}: 1 to {MAX_LABEL_KEY} letters, digits, _ - . /",
                k.chars().take(MAX_LABEL_KEY).collect::<String>()
            )));
        }
        if v.len() > MAX_LABEL_VALUE || v.chars().any(char::is_control) {
            return Err(ListingError::Invalid(format!(
                "label {k}: a value is at most {MAX_LABEL_VALUE} bytes with no control characters"
            )));
        }
    }
    Ok(())
}

/// An idempotency key is 1 to [`MAX_IDEMPOTENCY_KEY`] bytes of printable ASCII.
pub fn check_key(key: &str) -> Result<(), ListingError> {
    if key.is_empty()
        || key.len() > MAX_IDEMPOTENCY_KEY
        || !key.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ListingError::Invalid(format!(
            "an idempotency key is 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters, no spaces"
        )));
    }
    Ok(())
}

/// The hash a request is known by: everything that decides what session it opens.
pub fn request_hash(
    trace: &str,
    hdag: Option<&str>,
    terms_json: &str,
    labels: &BTreeMap<String, String>,
) -> Hash {
    let labels = serde_json::to_string(labels).unwrap_or_default();
    Hash::of_parts(
        "trust/v1/provider-request",
        &[
            trace.as_bytes(),
            hdag.unwrap_or("\u{0}none").as_bytes(),
            terms_json.as_bytes(),
            labels.as_bytes(),
        ],
    )
}

/// What a listing filter asks for: labels that must match (a name, or `name=value`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelFilter {
    /// Each `(name, value)`: the session carries the label, with that value if given.
    pub wanted: Vec<(String, Option<String>)>,
}

impl LabelFilter {
    /// Parses `name` or `name=value`.
    pub fn add(&mut self, s: &str) {
        match s.split_once('=') {
            Some((k, v)) => self.wanted.push((k.to_string(), Some(v.to_string()))),
            None => self.wanted.push((s.to_string(), None)),
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.wanted.iter().all(|(k, v)| match (labels.get(k), v) {
            (Some(have), Some(want)) => have == want,
            (Some(_), None) => true,
            (None, _) => false,
        })
    }
}

/// The list, in this node's database.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Session id -> [`Listed`] (JSON).
    by_id: sled::Tree,
    /// `opened_ms (big-endian) || session` -> nothing: the order sessions were opened in.
    by_age: sled::Tree,
    /// Idempotency key -> session id.
    keys: sled::Tree,
}

/// A listing that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sled::Error),
    /// An entry did not encode or decode.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Listing {
    /// The list in `db`.
    pub fn open(db: &sled::Db) -> Result<Self, sled::Error> {
        Ok(Self {
            by_id: db.open_tree("provider/listing")?,
            by_age: db.open_tree("provider/listing-by-age")?,
            keys: db.open_tree("provider/idempotency")?,
        })
    }

    /// The session opened under `key`, if any.
    pub fn by_key(&self, key: &str) -> Result<Option<Listed>, StoreError> {
        let Some(id) = self.keys.get(key.as_bytes())? else {
            return Ok(None);
        };
        let Some(bytes) = self.by_id.get(&id)? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_slice(&bytes)?))
    }

    /// The entry of `session`, if this node opened it (and still lists it).
    pub fn get(&self, session: &Hash) -> Result<Option<Listed>, StoreError> {
        match self.by_id.get(session.as_ref())? {
            Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    /// Keeps `entry`, and drops the oldest beyond `keep` ([`MAX_LISTED`] in the node).
    pub fn insert(&self, entry: &Listed, keep: usize) -> Result<(), StoreError> {
        let id = entry.submitted.session;
        self.by_id.insert(id.as_ref(), serde_json::to_vec(entry)?)?;
        self.by_age.insert(age_key(entry.opened_ms, &id), &[])?;
        if let Some(k) = &entry.key {
            self.keys.insert(k.as_bytes(), id.as_ref())?;
        }
        while self.by_age.len() > keep {
            let Some((k, _)) = self.by_age.pop_min()? else {
                break;
            };
            let Some(old) = k.get(8..).and_then(|b| <[u8; 32]>::try_from(b).ok()) else {
                continue;
            };
            if let Some(bytes) = self.by_id.remove(old)?
                && let Ok(gone) = serde_json::from_slice::<Listed>(&bytes)
                && let Some(key) = gone.key
            {
                self.keys.remove(key.as_bytes())?;
            }
        }
        self.by_id.flush()?;
        Ok(())
    }

    /// The sessions matching `filter`, newest first, opened before `before_ms` (all when
    /// `None`), at most `limit`.
    pub fn list(
        &self,
        filter: &LabelFilter,
        before_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Listed>, StoreError> {
        let end = age_key(before_ms.unwrap_or(u64::MAX), &Hash([0; 32]));
        let mut out = Vec::new();
        for item in self.by_age.range(..end).rev() {
            if out.len() >= limit {
                break;
            }
            let (k, _) = item?;
            let Some(id) = k.get(8..) else {
                continue;
            };
            let Some(bytes) = self.by_id.get(id)? else {
                continue;
            };
            let entry: Listed = serde_json::from_slice(&bytes)?;
            if filter.matches(&entry.labels) {
                out.push(entry);
            }
        }
        Ok(out)
    }
}

fn age_key(ms: u64, session: &Hash) -> Vec<u8> {
    let mut k = ms.to_be_bytes().to_vec();
    k.extend_from_slice(session.as_ref());
    k
}

/// A session in `GET /v1/sessions`: what this node opened, under which labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ListedView {
    /// The session id.
    #[schema(value_type = String)]
    pub session: Hash,
    /// When this node opened it, Unix milliseconds.
    pub opened_ms: u64,
    /// The same as RFC 3339 in UTC.
    pub opened: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// The fee escrowed.
    pub fee: u64,
    /// `pending`, `live`, `decided` or `failed`.
    pub status: String,
    /// The trace verdict once decided: `pass`, `fail` or `inconclusive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u8, ms: u64, key: Option<&str>, labels: &[(&str, &str)]) -> Listed {
        Listed {
            submitted: Submitted {
                session: Hash([n; 32]),
                tx: Hash([n; 32]),
                segments: Vec::new(),
                left_out: Vec::new(),
                fee: u64::from(n),
                honeypots: 0,
            },
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            key: key.map(str::to_string),
            request: Hash([n; 32]),
            opened_ms: ms,
        }
    }

    /// Newest first, filtered by label name or name=value, paged by time; a key finds its
    /// session; past the bound the oldest entry goes, and its key with it.
    #[test]
    fn the_list_is_newest_first_filtered_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let l = Listing::open(&db).unwrap();
        l.insert(&entry(1, 10, Some("k1"), &[("model", "a")]), 10)
            .unwrap();
        l.insert(&entry(2, 20, None, &[("model", "b"), ("run", "7")]), 10)
            .unwrap();
        l.insert(&entry(3, 30, Some("k3"), &[("model", "a")]), 10)
            .unwrap();
        let ids = |v: Vec<Listed>| v.iter().map(|e| e.submitted.fee).collect::<Vec<_>>();
        let all = LabelFilter::default();
        assert_eq!(ids(l.list(&all, None, 10).unwrap()), vec![3, 2, 1]);
        assert_eq!(ids(l.list(&all, Some(30), 10).unwrap()), vec![2, 1]);
        assert_eq!(ids(l.list(&all, None, 2).unwrap()), vec![3, 2]);
        let mut f = LabelFilter::default();
        f.add("model=a");
        assert_eq!(ids(l.list(&f, None, 10).unwrap()), vec![3, 1]);
        let mut f = LabelFilter::default();
        f.add("run");
        assert_eq!(ids(l.list(&f, None, 10).unwrap()), vec![2]);
        assert_eq!(l.by_key("k1").unwrap().unwrap().submitted.fee, 1);
        assert!(l.by_key("k2").unwrap().is_none());
        l.insert(&entry(4, 40, None, &[]), 3).unwrap();
        assert_eq!(ids(l.list(&all, None, 10).unwrap()), vec![4, 3, 2]);
        assert!(
            l.by_key("k1").unwrap().is_none(),
            "the oldest key went with it"
        );
        assert!(l.get(&Hash([1; 32])).unwrap().is_none());
    }

    /// Labels and keys out of their bounds are refused, naming the rule.
    #[test]
    fn labels_and_keys_are_bounded() {
        let many: BTreeMap<String, String> =
            (0..17).map(|i| (format!("k{i}"), String::new())).collect();
        assert!(check_labels(&many).is_err());
        for (k, v) in [("", "x"), ("a b", "x"), ("ok", "line\nbreak")] {
            let one = BTreeMap::from([(k.to_string(), v.to_string())]);
            assert!(check_labels(&one).is_err(), "{k:?}={v:?}");
        }
        let long = BTreeMap::from([("k".to_string(), "v".repeat(257))]);
        assert!(check_labels(&long).is_err());
        let fine = BTreeMap::from([("model/run-id.v2".to_string(), "gpt 4 — row 17".to_string())]);
        assert_eq!(check_labels(&fine), Ok(()));
        assert!(check_key("").is_err());
        assert!(check_key("with space").is_err());
        assert!(check_key(&"x".repeat(129)).is_err());
        assert_eq!(check_key("retry-2026-12-02T05:00Z/7"), Ok(()));
    }
}
