//! The state commitment: a Jellyfish Merkle Tree (the `jmt` crate) over the entries of
//! the contract [`State`], updated per block in proportion to what the block changed.
//!
//! # Keys and values
//!
//! One leaf per entry ([`StateKey`]): every account, auditor, live session, outcome,
//! failed session and appealable session, plus one `Global` leaf holding the small fixed
//! part (parameters, height, burned, supply). The leaf key is `sha256(tag || id)`, the value the entry's
//! canonical encoding ([`entry_value`]: bincode, the state's one fixed config). The
//! state root is the tree's root hash: a function of the set of entries alone (the JMT
//! is a canonical radix tree over key hashes; versions name storage slots and are not
//! hashed), so a tree rebuilt from a snapshot has the root of the tree that was updated
//! block by block.
//!
//! # Where the tree lives, and why here
//!
//! In memory, inside the pure crate, next to the state it commits to. The contract is the
//! only writer of the state, so it is the one place that knows which entries a block
//! touched ([`Tree::touch`]); keeping the tree here keeps "same blocks, same root" a
//! property of this crate alone (the chain, the ledger's verify, the simulator and
//! snapshot restore all get it for free), and leaves the node's storage untouched: a
//! restart rebuilds the tree from the snapshotted state once, in O(state).
//!
//! # Cost and memory
//!
//! [`Tree::commit`] re-encodes only the touched entries and writes one JMT version: a
//! path of at most 64 nodes per touched leaf, independent of how many outcomes the state
//! already holds. Only the newest version is kept: the nodes the update made stale (and
//! the previous root) are removed at once, so the node map holds one tree, O(entries),
//! never the history. Values are not stored (the state holds them); a proof reads the
//! one value it needs from the state.
//!
//! # Determinism and safety
//!
//! Ordered maps and sets only; no clock, no randomness. The touched set may over-approximate
//! (an unchanged entry rewritten leaves the root as it was). Should the `jmt` update ever
//! report an error, the tree is rebuilt from the state, which yields the same canonical
//! root: the root never depends on the path taken to it.

use std::collections::BTreeSet;

use jmt::{
    KeyHash, OwnedValue, RootHash, Sha256Jmt, Version,
    proof::SparseMerkleProof,
    storage::{LeafNode, Node, NodeKey, TreeReader, TreeUpdateBatch},
};
use serde::{Deserialize, Serialize};
use trust_protocol::{AccountId, Hash};

use crate::{params::Params, state::State};

/// The hasher of the tree (leaf keys, leaf values and nodes).
pub type TreeHasher = sha2::Sha256;

/// One leaf of the state tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum StateKey {
    /// Parameters, height, burned and supply.
    Global,
    /// An account.
    Account(AccountId),
    /// An auditor's registry entry.
    Auditor(AccountId),
    /// A live session.
    Session(Hash),
    /// A decided session's outcome.
    Outcome(Hash),
    /// A session that failed to run.
    Failed(Hash),
    /// A decided session kept, with its seats, until its appeal window passes.
    Appealable(Hash),
}

impl StateKey {
    /// The key's preimage: a one-byte tag, then the 32-byte id (none for `Global`).
    pub fn preimage(&self) -> Vec<u8> {
        let (tag, id): (u8, Option<&[u8; 32]>) = match self {
            StateKey::Global => (0, None),
            StateKey::Account(a) => (1, Some(a.as_bytes())),
            StateKey::Auditor(a) => (2, Some(a.as_bytes())),
            StateKey::Session(h) => (3, Some(h.as_bytes())),
            StateKey::Outcome(h) => (4, Some(h.as_bytes())),
            StateKey::Failed(h) => (5, Some(h.as_bytes())),
            StateKey::Appealable(h) => (6, Some(h.as_bytes())),
        };
        let mut out = Vec::with_capacity(33);
        out.push(tag);
        if let Some(id) = id {
            out.extend_from_slice(id);
        }
        out
    }

    /// The leaf's key in the tree: `sha256` of the preimage.
    pub fn key_hash(&self) -> KeyHash {
        KeyHash::with::<TreeHasher>(self.preimage())
    }
}

/// A Merkle proof of one entry against a state root.
pub type EntryProof = SparseMerkleProof<TreeHasher>;

/// Why an entry's proof does not hold against a root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error("the proof of {key:?} does not hold against state root {root}: {reason}")]
pub struct ProofError {
    /// The entry.
    pub key: StateKey,
    /// The root it was checked against.
    pub root: Hash,
    /// What `jmt`'s verifier said.
    pub reason: String,
}

/// Checks that `proof` shows `key` holding `value` (`None`: absent) under `root`.
pub fn verify_entry(
    root: Hash,
    key: &StateKey,
    value: Option<&[u8]>,
    proof: &EntryProof,
) -> Result<(), ProofError> {
    proof
        .verify(RootHash(root.0), key.key_hash(), value)
        .map_err(|e| ProofError {
            key: *key,
            root,
            reason: e.to_string(),
        })
}

/// The fixed part of the state, as the `Global` leaf encodes it.
#[derive(Serialize)]
struct GlobalEntry<'a> {
    chain: trust_protocol::Hash,
    params: &'a Params,
    height: u64,
    burned: u64,
    supply: u64,
}

/// The canonical encoding of one entry of `state`, or `None` when the entry is absent.
pub fn entry_value(state: &State, key: &StateKey) -> Option<Vec<u8>> {
    fn enc<T: Serialize + ?Sized>(v: &T) -> Option<Vec<u8>> {
        bincode::serde::encode_to_vec(v, crate::state::STATE_CONFIG).ok()
    }
    match key {
        StateKey::Global => enc(&GlobalEntry {
            chain: state.chain,
            params: &state.params,
            height: state.height,
            burned: state.burned,
            supply: state.supply,
        }),
        StateKey::Account(a) => state.accounts.get(a).and_then(enc),
        StateKey::Auditor(a) => state.auditors.get(a).and_then(enc),
        StateKey::Session(h) => state.sessions.get(h).and_then(enc),
        StateKey::Outcome(h) => state.outcomes.get(h).and_then(enc),
        StateKey::Failed(h) => state.failed.get(h).and_then(enc),
        StateKey::Appealable(h) => state.appealable.get(h).and_then(enc),
    }
}

/// Encodes one value as an entry's leaf holds it (the state's canonical encoding).
pub fn encode_entry_value<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, crate::state::STATE_CONFIG).unwrap_or_default()
}

/// Largest entry value [`decode_entry`] reads (values come from other nodes).
pub const MAX_ENTRY_BYTES: usize = 4 * 1024 * 1024;

/// Decodes an entry's value as [`entry_value`] encodes it (e.g. an `Outcome` or an
/// `Account` a proof carries); `None` unless the bytes are exactly one value.
pub fn decode_entry<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    if bytes.len() > MAX_ENTRY_BYTES {
        return None;
    }
    let cfg = crate::state::STATE_CONFIG.with_limit::<MAX_ENTRY_BYTES>();
    let (v, used): (T, usize) = bincode::serde::decode_from_slice(bytes, cfg).ok()?;
    (used == bytes.len()).then_some(v)
}

/// Every key present in `state`, in key order.
pub fn all_keys(state: &State) -> impl Iterator<Item = StateKey> + '_ {
    // Destructured so that a new field of `State` fails to compile here until it is
    // given a leaf.
    let State {
        chain: _,
        params: _,
        height: _,
        accounts,
        auditors,
        sessions,
        outcomes,
        failed,
        appealable,
        burned: _,
        supply: _,
        // Derived from accounts, auditors and sessions, which the tree commits to.
        eligible: _,
        seated: _,
        standing_due: _,
        power_due: _,
        failed_due: _,
        outcomes_due: _,
        judging: _,
    } = state;
    std::iter::once(StateKey::Global)
        .chain(accounts.keys().map(|a| StateKey::Account(*a)))
        .chain(auditors.keys().map(|a| StateKey::Auditor(*a)))
        .chain(sessions.keys().map(|h| StateKey::Session(*h)))
        .chain(outcomes.keys().map(|h| StateKey::Outcome(*h)))
        .chain(failed.keys().map(|h| StateKey::Failed(*h)))
        .chain(appealable.keys().map(|h| StateKey::Appealable(*h)))
}

/// The nodes of the newest tree version, by node key.
#[derive(Clone, Default)]
struct NodeStore {
    /// Shared with the store's copies ([`crate::state::Map`]): copying a tree is O(1).
    /// Each node sits behind its own pointer, so a change that copies a run of the map's
    /// entries copies keys and pointers, not nodes with up to 16 child hashes each.
    ///
    /// Keyed by [`Slot`], a fixed-size copy of the node key: a change to a shared run of
    /// the map copies its keys, and a `NodeKey` holds its path on the heap (one allocation
    /// per key copied), which made a block's tree update grow with the map's size.
    nodes: crate::state::Map<Slot, std::sync::Arc<(NodeKey, Node)>>,
}

/// A node key as plain bytes: its version (big-endian), its number of nibbles and its
/// nibbles packed two a byte (a key hash has 64, so 32 bytes hold any path). Equal slots
/// are equal keys; the order is (version, length, path), which nothing depends on.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Slot([u8; 41]);

impl Slot {
    fn of(key: &NodeKey) -> Slot {
        let path = key.nibble_path();
        let n = path.num_nibbles().min(64);
        let mut packed = [0u8; 32];
        for (i, byte) in packed.iter_mut().enumerate() {
            let at = i.saturating_mul(2);
            let nibble = |j: usize| (j < n).then(|| u8::from(path.get_nibble(j)));
            *byte =
                nibble(at).unwrap_or(0).wrapping_shl(4) | nibble(at.saturating_add(1)).unwrap_or(0);
        }
        let mut b = [0u8; 41];
        let (version, rest) = b.split_at_mut(8);
        version.copy_from_slice(&key.version().to_be_bytes());
        if let Some((len, path_bytes)) = rest.split_first_mut() {
            // At most 64 nibbles: the length fits a byte.
            *len = u8::try_from(n).unwrap_or(u8::MAX);
            path_bytes.copy_from_slice(&packed);
        }
        Slot(b)
    }
}

/// A read view over the node store; answers a value lookup only for the one key (and
/// value) a proof is being made for, since the state, not the tree, holds values.
struct Reader<'a> {
    store: &'a NodeStore,
    value: Option<(KeyHash, &'a [u8])>,
}

impl TreeReader for Reader<'_> {
    fn get_node_option(&self, node_key: &NodeKey) -> anyhow::Result<Option<Node>> {
        Ok(self
            .store
            .nodes
            .get(&Slot::of(node_key))
            .map(|n| n.1.clone()))
    }

    fn get_value_option(
        &self,
        _max_version: Version,
        key_hash: KeyHash,
    ) -> anyhow::Result<Option<OwnedValue>> {
        Ok(self
            .value
            .filter(|(k, _)| *k == key_hash)
            .map(|(_, v)| v.to_vec()))
    }

    fn get_rightmost_leaf(&self) -> anyhow::Result<Option<(NodeKey, LeafNode)>> {
        // Only `jmt`'s restore and migration paths ask for this; answered honestly anyway.
        Ok(self
            .store
            .nodes
            .values()
            .filter_map(|n| match &n.1 {
                Node::Leaf(l) => Some((n.0.clone(), l.clone())),
                _ => None,
            })
            .max_by_key(|(_, l)| l.key_hash()))
    }
}

/// The incremental state tree: the newest JMT version and the keys touched since.
#[derive(Clone)]
pub(crate) struct Tree {
    store: NodeStore,
    /// Version of the current root.
    version: Version,
    /// Storage key of the current root node.
    root_key: Option<NodeKey>,
    /// Root of the committed version.
    root: Hash,
    /// Entries changed (or possibly changed) since the last commit.
    dirty: BTreeSet<StateKey>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("version", &self.version)
            .field("nodes", &self.store.nodes.len())
            .field("root", &self.root)
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            store: NodeStore::default(),
            version: 0,
            root_key: None,
            root: Hash::ZERO,
            dirty: BTreeSet::new(),
        }
    }
}

impl Tree {
    /// Builds the tree of `state` from nothing: O(entries), done at genesis and restore.
    pub(crate) fn build(state: &State) -> Self {
        let mut t = Tree::default();
        let set: Vec<(KeyHash, Option<OwnedValue>)> = all_keys(state)
            .map(|k| (k.key_hash(), entry_value(state, &k)))
            .collect();
        let empty = NodeStore::default();
        let reader = Reader {
            store: &empty,
            value: None,
        };
        match Sha256Jmt::new(&reader).put_value_set(set, 0) {
            Ok((root, batch)) => {
                t.apply(batch);
                t.root = Hash(root.0);
            }
            // Reading an empty store cannot fail; were it to, every node would keep the
            // same all-zero root, so the outcome is still deterministic.
            Err(_) => t.root = Hash::ZERO,
        }
        t
    }

    /// Marks an entry as possibly changed by the block being applied.
    pub(crate) fn touch(&mut self, key: StateKey) {
        self.dirty.insert(key);
    }

    /// The touched entries with their new values.
    fn pending(&self, state: &State) -> Vec<(KeyHash, Option<OwnedValue>)> {
        self.dirty
            .iter()
            .map(|k| (k.key_hash(), entry_value(state, k)))
            .collect()
    }

    fn update(&self, state: &State) -> Option<(RootHash, TreeUpdateBatch)> {
        let reader = Reader {
            store: &self.store,
            value: None,
        };
        let next = self.version.checked_add(1)?;
        Sha256Jmt::new(&reader)
            .put_value_set(self.pending(state), next)
            .ok()
    }

    /// The root of `state`: the committed root when nothing is pending, else the root the
    /// pending entries would give (computed, not written: cost proportional to them).
    pub(crate) fn root(&self, state: &State) -> Hash {
        if self.dirty.is_empty() {
            return self.root;
        }
        match self.update(state) {
            Some((root, _)) => Hash(root.0),
            None => Tree::build(state).root,
        }
    }

    /// Writes the touched entries as a new version and prunes what it made stale.
    pub(crate) fn commit(&mut self, state: &State) {
        if self.dirty.is_empty() {
            return;
        }
        match self.update(state) {
            Some((root, batch)) => {
                self.version = self.version.saturating_add(1);
                self.apply(batch);
                self.root = Hash(root.0);
                self.dirty.clear();
            }
            None => *self = Tree::build(state),
        }
    }

    /// Stores a batch's new nodes and drops the ones it made stale, and the old root.
    fn apply(&mut self, batch: TreeUpdateBatch) {
        let mut new_root = None;
        for (k, n) in batch.node_batch.nodes() {
            if k.nibble_path().is_empty() && k.version() == self.version {
                new_root = Some(k.clone());
            }
            self.store
                .nodes
                .insert(Slot::of(k), std::sync::Arc::new((k.clone(), n.clone())));
        }
        for stale in &batch.stale_node_index_batch {
            self.store.nodes.remove(&Slot::of(&stale.node_key));
        }
        // `jmt` marks the replaced root stale, except in a version that changed no leaf,
        // where it copies the root to the new version instead: drop it here either way.
        if let Some(new_root) = new_root
            && let Some(old) = self.root_key.replace(new_root.clone())
            && old != new_root
        {
            self.store.nodes.remove(&Slot::of(&old));
        }
    }

    /// Whether entries were touched since the last commit.
    pub(crate) fn has_pending(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Number of nodes held (one tree version).
    pub(crate) fn node_count(&self) -> usize {
        self.store.nodes.len()
    }

    /// The value of `key` in `state` and its proof against the committed root. Pending
    /// changes must be committed first (they are not in the tree).
    pub(crate) fn prove(
        &self,
        state: &State,
        key: &StateKey,
    ) -> Option<(Option<Vec<u8>>, EntryProof)> {
        let kh = key.key_hash();
        let value = entry_value(state, key);
        let reader = Reader {
            store: &self.store,
            value: value.as_deref().map(|v| (kh, v)),
        };
        Sha256Jmt::new(&reader)
            .get_with_proof(kh, self.version)
            .ok()
    }
}
