//! Provider side of a session: turn a trace's HDAG into what goes on the ledger and into
//! the blob store, without revealing the trace.
//!
//! [`prepare`] orders the segments so dependencies come first, gives each a blinded id
//! ([`blinded_id`]: a hash of a fresh salt and of everything sealed in the segment, the
//! claim with its givens and operations, so equal steps in two traces do not match),
//! encrypts each with its own key (id as associated data), and builds the
//! [`SessionManifest`]: ids, levels, tiers, weights, `depends_on` indices and ciphertext
//! CIDs, plus a commitment to the segment → trace mapping that the provider opens at tally
//! time. The segment keys stay with the provider until seats are drawn, when each is
//! sealed to that segment's seats only. [`prepare_with`] also plants honeypots forged by
//! [`honeypot::forge`], blinded among the real segments.

use std::collections::BTreeMap;

use rand::RngCore;
use serde::{Deserialize, Serialize};
use trust_protocol::{
    Hash, Salt, Vote,
    block::MAX_TX_BYTES,
    cid::Cid,
    encoding,
    hdag::Relationship,
    honeypot_commitment,
    seal::{KEY_LEN, NONCE_LEN, SealError, SegmentDoc, encrypt_segment},
    tx::{
        Call, Difficulty, LeftOut, MAX_DEPENDENCIES, MAX_SEGMENTS, QuorumParams, SegmentEntry,
        SessionManifest, Tier, Tx, TxFormatError,
    },
    units::Amount,
};
pub use trust_protocol::{MappingEntry, mapping_document_hash};

use super::honeypot::{self, Bait, Calculation};
pub use super::restrict::{
    Dropped, MAX_CONTEXT_BYTES, Restricted, restrict, restrict_nodes, route_to_people, tool_cells,
};
use crate::decompose::{self, dependency_order};

/// Weight of a segment in the trace quorum, per tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierWeights {
    /// Computer-tier segments.
    pub computer: u32,
    /// LLM-tier segments.
    pub llm: u32,
    /// Human-tier segments.
    pub human: u32,
}

impl TierWeights {
    /// Every tier weighs 1.
    pub const EQUAL: TierWeights = TierWeights {
        computer: 1,
        llm: 1,
        human: 1,
    };

    /// The weight of `tier`'s segments.
    pub fn of(&self, tier: Tier) -> u32 {
        match tier {
            Tier::Computer => self.computer,
            Tier::Llm => self.llm,
            Tier::Human => self.human,
        }
    }

    /// The weights as the terms record them (Computer, LLM, Human).
    pub fn as_array(&self) -> [u32; 3] {
        [self.computer, self.llm, self.human]
    }
}

/// What the provider keeps and publishes for one session.
#[derive(Debug, Clone)]
pub struct PreparedSession {
    /// Goes on the ledger in `OpenSession`.
    pub manifest: SessionManifest,
    /// Ciphertext blocks to store and serve, with their CIDs, in manifest order.
    pub blocks: Vec<(Cid, Vec<u8>)>,
    /// Segment keys in manifest order (sealed to seats once they are drawn).
    pub keys: Vec<[u8; KEY_LEN]>,
    /// The mapping, in manifest order.
    pub mapping: Vec<MappingEntry>,
    /// Salt of the mapping commitment.
    pub mapping_salt: Salt,
    /// The honeypots planted, to open after voting.
    pub honeypots: Vec<Planted>,
    /// Salt of the manifest's commitment to the set of honeypot segments.
    pub honeypot_set_salt: Salt,
}

/// A honeypot in a manifest, and what opens its commitment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planted {
    /// Its index in the manifest.
    pub segment: u16,
    /// The known verdict.
    pub verdict: Vote,
    /// Its difficulty.
    pub difficulty: Difficulty,
    /// The salt of its commitment.
    pub salt: Salt,
}

/// Why a session could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// The HDAG's dependencies admit no order (a cycle).
    #[error("the HDAG's depends_on edges form a cycle")]
    Cycle,
    /// Encryption failed (a segment too large).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// More segments than a session holds.
    #[error(
        "the session would hold {segments} segments ({honeypots} of them honeypots) and leave {left_out} out; a session holds at most {MAX_SEGMENTS} of each: submit a shorter trace or an HDAG with fewer nodes"
    )]
    TooManySegments {
        /// Segments to audit, honeypots included.
        segments: usize,
        /// Honeypots among them.
        honeypots: usize,
        /// Segments left out.
        left_out: usize,
    },
    /// The `OpenSession` would not fit in one transaction.
    #[error(
        "the session's OpenSession transaction would take {bytes} bytes for {segments} segments and {left_out} left out, more than the {MAX_TX_BYTES}-byte transaction limit: submit a shorter trace or an HDAG with fewer nodes or dependencies"
    )]
    TooLarge {
        /// Its encoded size, signature included.
        bytes: usize,
        /// Segments to audit, honeypots included.
        segments: usize,
        /// Segments left out.
        left_out: usize,
    },
    /// The manifest breaks a protocol bound.
    #[error("the session manifest is not acceptable: {0}")]
    Manifest(#[from] TxFormatError),
}

/// Bytes a signed transaction adds to its encoded body (signer key and signature), with
/// room to spare.
const SIGNATURE_BYTES: usize = 256;

/// The formal-proof payload of kept node `id` ([`ProofDoc`](crate::computer::formal::ProofDoc)):
/// its step's document for a step node, the proof's skeleton with each step's manifest
/// position (`position`; `u16::MAX` for a step not audited) for the structure node.
/// `None` outside a formal proof's session and for nodes that are neither.
pub fn proof_payload(
    r: &Restricted,
    id: &str,
    position: impl Fn(&str) -> Option<u16>,
) -> Option<serde_json::Value> {
    use crate::computer::formal::ProofDoc;
    let plan = r.proof.as_ref()?;
    if id == decompose::proof::STRUCTURE_ID {
        let segments = (0..plan.steps.len())
            .map(|i| position(&decompose::proof::step_id(i)).unwrap_or(u16::MAX))
            .collect();
        return ProofDoc::Structure {
            skeleton: plan.skeleton(),
            segments,
        }
        .to_value();
    }
    let i = decompose::proof::step_of(id)?;
    ProofDoc::Step {
        step: plan.step_doc(i)?,
    }
    .to_value()
}

pub use crate::decompose::conclusion_ids;

/// The document a seat reads for `claim` standing at kept node `node` of `r`: `claim`
/// with that node's givens and OPERATIONs; a formal proof's step or structure node gets
/// its payload from [`proof_payload`] after (the blinded id binds it too). A real step's
/// claim is its node's text; a honeypot's is its forged text at its source node.
pub fn step_doc(r: &Restricted, node: &str, claim: String) -> SegmentDoc {
    SegmentDoc {
        claim,
        given: r.givens.get(node).cloned().unwrap_or_default(),
        operations: r.operations.get(node).cloned().unwrap_or_default(),
        proof: None,
        cells: r.cells.get(node).cloned().unwrap_or_default(),
    }
}

/// A segment's blinded id: `H("trust/v2/segment-id", salt, doc_digest(doc))`. It binds
/// the segment to everything sealed with it, not to its claim alone: the context a seat
/// was shown (the givens, the operations) is part of the id, and the id is the associated
/// data of the segment's encryption, so a seat decrypts only a document sealed under the
/// manifest's id. Once the provider opens its mapping (each segment's HDAG node and salt:
/// [`MappingEntry`], whose hash the `RevealMapping` transaction opens against the
/// manifest's mapping commitment, see [`mapping_commitment`]), anyone holding a segment's
/// document (a seat that decrypted it, or the provider showing it) checks
/// `blinded_id(&entry.salt, &doc) == manifest.segments[i].id`. One id matches one
/// document: a provider cannot later claim it showed a seat another context, nor show two
/// seats of a segment two documents under keys crafted to open one ciphertext both ways
/// (XChaCha20-Poly1305 does not commit to its key).
pub fn blinded_id(salt: &Salt, doc: &SegmentDoc) -> Hash {
    Hash::of_parts(
        "trust/v2/segment-id",
        &[salt.as_ref(), doc_digest(doc).as_ref()],
    )
}

/// The digest of a segment document: its claim, then its givens and its operations, each
/// list with its length first, so no two documents share a digest by moving text
/// between fields; then, for a formal proof's step or structure, its payload (the step's
/// scope facts, or the skeleton with its braces), so that what a seat of a formal proof
/// judges is bound to the id as much as its claim is: a provider cannot seal the payload
/// of a re-braced proof under the step lines of the one it shows. A document with no
/// payload digests as it always did.
pub fn doc_digest(doc: &SegmentDoc) -> Hash {
    let givens = (doc.given.len() as u64).to_le_bytes();
    let operations = (doc.operations.len() as u64).to_le_bytes();
    let mut parts: Vec<&[u8]> = vec![doc.claim.as_bytes(), &givens];
    parts.extend(doc.given.iter().map(|g| g.as_bytes()));
    parts.push(&operations);
    parts.extend(doc.operations.iter().map(|o| o.as_bytes()));
    // serde_json's maps are ordered by key here (no `preserve_order`): one value, one
    // encoding.
    let payload = doc
        .proof
        .as_ref()
        .map(|v| serde_json::to_vec(v).unwrap_or_default());
    if let Some(bytes) = &payload {
        parts.push(b"formal-proof-payload");
        parts.push(bytes);
    }
    // A tool call's replayed cells, with their count: what its seats run is bound as much
    // as what they read.
    let cells = (doc.cells.len() as u64).to_le_bytes();
    if !doc.cells.is_empty() {
        parts.push(b"replayed-cells");
        parts.push(&cells);
        parts.extend(doc.cells.iter().map(|c| c.as_bytes()));
    }
    Hash::of_parts("trust/v1/segment-doc", &parts)
}

/// The on-chain commitment to the mapping,
/// [`trust_protocol::mapping_commitment`] of [`mapping_document_hash`].
pub fn mapping_commitment(mapping: &[MappingEntry], salt: &Salt) -> Hash {
    trust_protocol::mapping_commitment(&mapping_document_hash(mapping), salt)
}

/// Prepares a session for the kept nodes of `r` (see [`restrict`]): each carries its
/// givens (see [`SegmentDoc`]); the dropped ones go into the manifest as left out, with
/// their weight and the kept segments they rest on; `rng` supplies every key, nonce and
/// salt. No honeypots: see [`prepare_with`].
pub fn prepare(
    r: &Restricted,
    quorum: QuorumParams,
    weights: TierWeights,
    fee: Amount,
    domain: &str,
    rng: &mut impl RngCore,
) -> Result<PreparedSession, PrepareError> {
    prepare_with(r, &[], quorum, weights, fee, domain, rng)
}

/// What goes into a manifest entry: a kept HDAG node, a honeypot, or the OPERATION of a
/// worded honeypot.
enum Item<'a> {
    Node(usize),
    Bait(&'a Bait),
    Calculation(&'a Bait),
}

/// [`prepare`], with `baits` planted as honeypots ([`honeypot`]): each at a random place
/// after the premises of the step it copies, with that step's level, tier, weight,
/// premises and givens, and a commitment to its known verdict; every other segment gets
/// a honeypot commitment nobody can open, so the manifest does not tell them apart. A
/// worded honeypot carries its own calculation as its one operation, and that
/// calculation goes in as an OPERATION of its own that `supports` it, copying the source
/// STEP's OPERATION (level, tier, weight, premises, givens) and placed at random after
/// those premises, as a real STEP's OPERATION is.
pub fn prepare_with(
    r: &Restricted,
    baits: &[Bait],
    quorum: QuorumParams,
    weights: TierWeights,
    fee: Amount,
    domain: &str,
    rng: &mut impl RngCore,
) -> Result<PreparedSession, PrepareError> {
    let hdag = &r.hdag;
    let order = dependency_order(hdag);
    if order.len() != hdag.nodes.len() {
        return Err(PrepareError::Cycle);
    }
    let planted = baits
        .iter()
        .filter(|b| hdag.index_of(&b.source).is_some())
        .count();
    let calculations = baits
        .iter()
        .filter(|b| hdag.index_of(&b.source).is_some())
        .filter_map(|b| b.calculation.as_ref())
        .filter(|c| hdag.index_of(&c.source).is_some())
        .count();
    let count = hdag
        .nodes
        .len()
        .saturating_add(planted)
        .saturating_add(calculations);
    if count > MAX_SEGMENTS || r.dropped.len() > MAX_SEGMENTS {
        return Err(PrepareError::TooManySegments {
            segments: count,
            honeypots: planted,
            left_out: r.dropped.len(),
        });
    }
    let too_many = |n: usize| TxFormatError::TooLong {
        what: "segments",
        got: n,
        max: MAX_SEGMENTS,
    };
    let index: BTreeMap<&str, usize> = hdag.positions();
    let index_of = |id: &str| index.get(id).copied();
    let mut premises: Vec<Vec<usize>> = vec![Vec::new(); hdag.nodes.len()];
    for e in &hdag.edges {
        if e.relationship == Relationship::DependsOn
            && let (Some(from), Some(to)) = (index_of(&e.from), index_of(&e.to))
            && let Some(p) = premises.get_mut(from)
        {
            p.push(to);
        }
    }
    let mut items: Vec<Item<'_>> = order.iter().map(|&i| Item::Node(i)).collect();
    // A follower rests on the honeypot of its source's premise instead of that premise.
    let stand_in = |b: &Bait| {
        b.rests_on
            .as_deref()
            .filter(|s| baits.iter().any(|x| x.source == *s && x.rests_on.is_none()))
            .and_then(index_of)
    };
    // The trace's nodes a honeypot cites: its own premises where it was forged with them,
    // else those of the step it copies (but the one its stand-in replaces).
    let cited = |b: &Bait| -> Vec<usize> {
        let replaced = stand_in(b);
        match &b.premises {
            Some(ids) => ids
                .iter()
                .filter_map(|id| index_of(id))
                .chain(
                    b.rests_on
                        .as_deref()
                        .and_then(index_of)
                        .filter(|_| replaced.is_none()),
                )
                .collect(),
            None => index_of(&b.source)
                .and_then(|i| premises.get(i))
                .into_iter()
                .flatten()
                .copied()
                .filter(|&d| Some(d) != replaced)
                .collect(),
        }
    };
    // The trace's nodes the OPERATION of a worded honeypot cites.
    let cited_by_calculation = |b: &Bait| -> Vec<usize> {
        match b.calculation.as_ref() {
            Some(Calculation {
                premises: Some(ids),
                ..
            }) => ids.iter().filter_map(|id| index_of(id)).collect(),
            Some(c) => index_of(&c.source)
                .and_then(|i| premises.get(i))
                .cloned()
                .unwrap_or_default(),
            None => Vec::new(),
        }
    };
    for b in baits {
        if index_of(&b.source).is_none() {
            continue;
        }
        let real = cited(b);
        let base = stand_in(b).and(b.rests_on.as_deref());
        let last_premise = items
            .iter()
            .enumerate()
            .filter(|(_, x)| match x {
                Item::Node(n) => real.contains(n),
                Item::Bait(y) => y.rests_on.is_none() && Some(y.source.as_str()) == base,
                Item::Calculation(_) => false,
            })
            .map(|(at, _)| at)
            .max();
        let at = honeypot::place(last_premise, items.len(), rng);
        items.insert(at, Item::Bait(b));
    }
    // A worded honeypot's OPERATION, after its premises.
    for b in baits {
        if b.calculation
            .as_ref()
            .and_then(|c| index_of(&c.source))
            .is_none()
            || index_of(&b.source).is_none()
        {
            continue;
        }
        let real = cited_by_calculation(b);
        let last_premise = items
            .iter()
            .enumerate()
            .filter(|(_, x)| matches!(x, Item::Node(n) if real.contains(n)))
            .map(|(at, _)| at)
            .max();
        let at = honeypot::place(last_premise, items.len(), rng);
        items.insert(at, Item::Calculation(b));
    }
    // Position of each HDAG node in the manifest.
    let mut position = vec![0u16; hdag.nodes.len()];
    for (pos, item) in items.iter().enumerate() {
        if let Item::Node(node) = item {
            let at = u16::try_from(pos).map_err(|_| too_many(items.len()))?;
            if let Some(p) = position.get_mut(*node) {
                *p = at;
            }
        }
    }
    // Position of each honeypot that a follower rests on, by the HDAG id of its source.
    let mut bait_position: BTreeMap<&str, u16> = BTreeMap::new();
    for (pos, item) in items.iter().enumerate() {
        if let Item::Bait(b) = item
            && b.rests_on.is_none()
        {
            bait_position.insert(
                &b.source,
                u16::try_from(pos).map_err(|_| too_many(items.len()))?,
            );
        }
    }
    // `depends_on` of an entry citing the nodes `cited`, and the honeypot planted from
    // `base` (a follower's).
    let deps_of = |cited: &[usize], base: Option<&str>| {
        let mut d: Vec<u16> = cited
            .iter()
            .filter_map(|&j| position.get(j).copied())
            .chain(base.and_then(|s| bait_position.get(s).copied()))
            .collect();
        d.sort_unstable();
        d.dedup();
        d
    };
    // Entries are numbered session segments first, then left-out ones.
    let dropped_at: BTreeMap<&str, usize> = r
        .dropped
        .iter()
        .enumerate()
        .map(|(j, d)| (d.id.as_str(), j))
        .collect();
    let left_deps_of = |ids: Option<&Vec<String>>| {
        let mut d: Vec<u16> = ids
            .into_iter()
            .flatten()
            .filter_map(|id| dropped_at.get(id.as_str()))
            .filter_map(|j| u16::try_from(*j).ok())
            .collect();
        d.sort_unstable();
        d.dedup();
        // The nearest premises matter most; a step resting on more keeps the latest.
        let extra = d.len().saturating_sub(MAX_DEPENDENCIES);
        d.drain(..extra);
        d
    };
    let entry_of = |id: &str| match index_of(id) {
        Some(i) => position.get(i).copied(),
        None => dropped_at
            .get(id)
            .and_then(|j| u16::try_from(items.len().saturating_add(*j)).ok()),
    };
    let mut segments = Vec::with_capacity(items.len());
    let mut blocks = Vec::with_capacity(items.len());
    let mut keys = Vec::with_capacity(items.len());
    let mut mapping = Vec::with_capacity(items.len());
    let mut honeypots = Vec::new();
    for item in &items {
        let (node, claim, name) = match item {
            Item::Node(i) => {
                let Some(n) = hdag.nodes.get(*i) else {
                    continue;
                };
                (n, n.content.clone(), n.id.clone())
            }
            Item::Bait(b) => match index_of(&b.source).and_then(|i| hdag.nodes.get(i)) {
                Some(n) => (n, b.claim.clone(), b.name()),
                None => continue,
            },
            Item::Calculation(b) => match (b.calculation.as_ref(), b.calculation_name()) {
                (Some(c), Some(name)) => {
                    match index_of(&c.source).and_then(|i| hdag.nodes.get(i)) {
                        Some(n) => (n, c.text.clone(), name),
                        None => continue,
                    }
                }
                _ => continue,
            },
        };
        let mut salt = [0u8; 32];
        let mut key = [0u8; KEY_LEN];
        let mut nonce = [0u8; NONCE_LEN];
        let mut hp_salt = [0u8; 32];
        rng.fill_bytes(&mut salt);
        rng.fill_bytes(&mut key);
        rng.fill_bytes(&mut nonce);
        rng.fill_bytes(&mut hp_salt);
        let salt = Salt(salt);
        let mut doc = step_doc(r, &node.id, claim);
        match item {
            Item::Bait(Bait {
                calculation: Some(c),
                ..
            }) => doc.operations = vec![c.text.clone()],
            Item::Node(_) => {
                doc.proof = proof_payload(r, &node.id, |id| {
                    index_of(id).and_then(|i| position.get(i).copied())
                })
            }
            Item::Bait(_) | Item::Calculation(_) => {}
        }
        let id = blinded_id(&salt, &doc);
        let ciphertext = encrypt_segment(&key, &nonce, &id, &doc.to_bytes())?;
        let cid = Cid::of(&ciphertext);
        let tier = Tier::from(node.primary_auditor);
        let (honeypot, conclusion) = match item {
            Item::Bait(b) => {
                let index = u16::try_from(segments.len()).map_err(|_| too_many(items.len()))?;
                let hp_salt = Salt(hp_salt);
                honeypots.push(Planted {
                    segment: index,
                    verdict: b.verdict,
                    difficulty: b.difficulty,
                    salt: hp_salt,
                });
                (
                    honeypot_commitment(&id, b.verdict, b.difficulty, &hp_salt),
                    false,
                )
            }
            // A commitment nobody can open: the real segments look like honeypots too.
            Item::Node(_) => (Hash(hp_salt), r.conclusions.contains(&node.id)),
            Item::Calculation(_) => (Hash(hp_salt), false),
        };
        segments.push(SegmentEntry {
            id,
            level: node.abstraction_level,
            tier,
            weight: weights.of(tier),
            depends_on: match item {
                Item::Node(i) => deps_of(premises.get(*i).map_or(&[], Vec::as_slice), None),
                Item::Bait(b) => deps_of(&cited(b), stand_in(b).and(b.rests_on.as_deref())),
                Item::Calculation(b) => deps_of(&cited_by_calculation(b), None),
            },
            // A honeypot's document carries the givens of the step it copies, and with
            // them the left-out segments that step rests on, as the step's own does.
            rests_on_left_out: left_deps_of(r.rests_on_dropped.get(&node.id)),
            supports: match item {
                Item::Node(_) => r.supports.get(&node.id).and_then(|s| entry_of(s)),
                Item::Calculation(b) => bait_position.get(b.source.as_str()).copied(),
                Item::Bait(_) => None,
            },
            cid,
            honeypot: Some(honeypot),
            conclusion,
        });
        blocks.push((cid, ciphertext));
        keys.push(key);
        mapping.push(MappingEntry { node: name, salt });
    }
    let left_out = r
        .dropped
        .iter()
        .map(|d| {
            let mut depends_on: Vec<u16> = d
                .depends_on
                .iter()
                .filter_map(|id| index_of(id))
                .filter_map(|j| position.get(j).copied())
                .collect();
            depends_on.sort_unstable();
            depends_on.dedup();
            // The nearest premises matter most; a step resting on more keeps the latest.
            let extra = depends_on.len().saturating_sub(MAX_DEPENDENCIES);
            depends_on.drain(..extra);
            LeftOut {
                tier: d.tier,
                weight: weights.of(d.tier),
                depends_on,
                rests_on_left_out: left_deps_of(Some(&d.rests_on_dropped)),
                conclusion: r.conclusions.contains(&d.id),
                supports: r.supports.get(&d.id).and_then(|s| entry_of(s)),
            }
        })
        .collect();
    let mut mapping_salt = [0u8; 32];
    rng.fill_bytes(&mut mapping_salt);
    let mapping_salt = Salt(mapping_salt);
    let mut set_salt = [0u8; 32];
    rng.fill_bytes(&mut set_salt);
    let honeypot_set_salt = Salt(set_salt);
    let set: Vec<u16> = honeypots.iter().map(|h| h.segment).collect();
    let manifest = SessionManifest {
        segments,
        mapping_commitment: mapping_commitment(&mapping, &mapping_salt),
        quorum,
        fee,
        domain: domain.to_string(),
        left_out,
        terms: trust_protocol::tx::SessionTerms {
            tier_weights: weights.as_array(),
            ..trust_protocol::tx::SessionTerms::default()
        },
        honeypot_set: trust_protocol::honeypot_set_commitment(&set, &honeypot_set_salt),
    };
    manifest.validate()?;
    let bytes = encoding::encode(&Tx {
        nonce: u64::MAX,
        call: Call::OpenSession(manifest.clone()),
    })
    .len()
    .saturating_add(SIGNATURE_BYTES);
    if bytes > MAX_TX_BYTES {
        return Err(PrepareError::TooLarge {
            bytes,
            segments: manifest.segments.len(),
            left_out: manifest.left_out.len(),
        });
    }
    Ok(PreparedSession {
        manifest,
        blocks,
        keys,
        mapping,
        mapping_salt,
        honeypots,
        honeypot_set_salt,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::{SeedableRng, rngs::StdRng};
    use trust_protocol::{hdag::Hdag, seal::decrypt_segment, trace::Trace, units::Ppm};

    use super::*;
    use crate::decompose::{Options, decompose};

    fn hdag() -> (Trace, Hdag) {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/traces/fraction-incorrect.txt"
        ))
        .expect("trace");
        let t = Trace::parse(&text).expect("parse");
        let h = decompose(&t, &Options::default()).expect("decompose");
        (t, h)
    }

    fn quorum() -> QuorumParams {
        QuorumParams {
            k: [1, 3, 5],
            extra_seats: 1,
            tau: Ppm(500_000),
            beta: Ppm(800_000),
        }
    }

    const W: TierWeights = TierWeights {
        computer: 1,
        llm: 2,
        human: 3,
    };

    #[test]
    fn manifest_is_valid_and_reveals_nothing() {
        let (trace, h) = hdag();
        let p = prepare(
            &restrict(&h, |_| true),
            quorum(),
            W,
            100,
            "math",
            &mut StdRng::seed_from_u64(1),
        )
        .expect("prepare");
        // Every node but the problem statement, which is a given.
        assert_eq!(p.manifest.segments.len(), h.nodes.len() - 1);
        // Dependencies point to earlier segments (validate checks it too).
        for (i, s) in p.manifest.segments.iter().enumerate() {
            assert!(s.depends_on.iter().all(|&d| usize::from(d) < i));
        }
        // Nothing of the trace is in the manifest or the ciphertexts.
        let public = encoding::encode(&p.manifest);
        for (_, block) in &p.blocks {
            for needle in ["5x = 9x", "numerator", "3x − 7"] {
                assert!(!block.windows(needle.len()).any(|w| w == needle.as_bytes()));
                assert!(!public.windows(needle.len()).any(|w| w == needle.as_bytes()));
            }
        }
        // Each block is stored under its CID and opens with its own key and id only.
        for (i, ((cid, block), key)) in p.blocks.iter().zip(&p.keys).enumerate() {
            assert!(cid.matches(block));
            let seg = &p.manifest.segments[i];
            let node = h
                .nodes
                .iter()
                .find(|n| n.id == p.mapping[i].node)
                .expect("node");
            let doc =
                SegmentDoc::from_bytes(&decrypt_segment(key, &seg.id, block).expect("decrypts"))
                    .expect("a segment document");
            assert_eq!(doc.claim, node.content);
            // Nothing is left out here, so the only given is the problem statement: the
            // context of every segment, never a segment itself.
            assert_ne!(node.id, "G1");
            assert_eq!(
                doc.given,
                vec![trace.problem.trim().to_string()],
                "{}",
                node.id
            );
            assert!(
                trace.thinking.contains(&node.content)
                    || trace.problem.contains(&node.content)
                    || trace.output.contains(&node.content)
            );
            let other = &p.keys[(i + 1) % p.keys.len()];
            assert!(decrypt_segment(other, &seg.id, block).is_err());
        }
        // The mapping commitment opens with the kept mapping and salt.
        assert_eq!(
            mapping_commitment(&p.mapping, &p.mapping_salt),
            p.manifest.mapping_commitment
        );
    }

    /// Without LLM auditors, the claims in words go to people where the Human tier is
    /// staffed; the calculations stay with the Computer tier; with LLM auditors, or with
    /// no people, nothing moves.
    #[test]
    fn worded_claims_go_to_people_when_no_llm_auditor_is_staffed() {
        use trust_protocol::hdag::AuditorType;
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/traces/bakery-correct.txt"
        ))
        .expect("trace");
        let h = decompose(&Trace::parse(&text).expect("parse"), &Options::default())
            .expect("decompose");
        let worded = |h: &Hdag, a: AuditorType| {
            h.nodes
                .iter()
                .filter(|n| n.kind != crate::decompose::PROBLEM_KIND && n.primary_auditor == a)
                .count()
        };
        let (llm, auto) = (worded(&h, AuditorType::Llm), worded(&h, AuditorType::Auto));
        assert!(llm > 0 && auto > 0, "{h:?}");
        for staffed in [
            (|t: Tier| t != Tier::Human) as fn(Tier) -> bool,
            |t: Tier| t == Tier::Computer,
            |_: Tier| true,
        ] {
            let mut same = h.clone();
            assert_eq!(route_to_people(&mut same, staffed), 0);
            assert_eq!(same.nodes, h.nodes);
        }
        let mut moved = h.clone();
        let no_llm = |t: Tier| t != Tier::Llm;
        assert_eq!(route_to_people(&mut moved, no_llm), llm);
        assert_eq!(worded(&moved, AuditorType::Llm), 0);
        assert_eq!(worded(&moved, AuditorType::Auto), auto);
        let r = restrict(&moved, no_llm);
        assert!(r.dropped.is_empty(), "nothing left out: {:?}", r.dropped);
        // The same documents as before the move: a segment's id binds no tier.
        let before = restrict(&h, |_| true);
        for n in &r.hdag.nodes {
            let doc = |r: &Restricted| step_doc(r, &n.id, n.content.clone());
            assert_eq!(doc(&r), doc(&before), "{}", n.id);
        }
    }

    /// Planted honeypots open with what the provider keeps, cite premises of their own
    /// (not a copy of their source's), rest under nothing, and look like the other
    /// segments on the ledger.
    #[test]
    fn honeypots_are_planted_blinded_among_the_segments() {
        let (_, h) = hdag();
        let r = restrict(&h, |t| t == Tier::Computer);
        for seed in 0..8 {
            let mut rng = StdRng::seed_from_u64(seed);
            let baits = honeypot::forge(&r, 2, &mut rng);
            assert!(!baits.is_empty(), "seed {seed}: nothing forged");
            let p = prepare_with(&r, &baits, quorum(), W, 100, "math", &mut rng).expect("prepare");
            let m = &p.manifest;
            assert_eq!(m.segments.len(), r.hdag.nodes.len() + baits.len());
            assert_eq!(p.honeypots.len(), baits.len());
            assert!(
                m.segments.iter().all(|g| g.honeypot.is_some()),
                "every segment committed"
            );
            for h in &p.honeypots {
                let i = usize::from(h.segment);
                let b = baits
                    .iter()
                    .find(|b| b.name() == p.mapping[i].node)
                    .expect("a forged bait");
                let g = &m.segments[i];
                assert_eq!(
                    g.honeypot,
                    Some(honeypot_commitment(&g.id, h.verdict, h.difficulty, &h.salt))
                );
                assert_eq!((h.verdict, h.difficulty), (b.verdict, b.difficulty));
                assert!(!g.conclusion);
                // Only honeypots rest on a honeypot.
                let planted: Vec<u16> = p.honeypots.iter().map(|x| x.segment).collect();
                assert!(
                    m.segments
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| x.depends_on.contains(&h.segment))
                        .all(|(j, _)| planted.contains(&(j as u16)))
                );
                // The step it copies: same level, tier and weight; its premises are its
                // own (a follower's include its base honeypot), and a honeypot that no
                // honeypot rests on cites no premise set a real segment with a dependent
                // cites (it has no twin a dependent tells from it).
                let src = p.mapping.iter().position(|e| e.node == b.source).unwrap();
                let s = &m.segments[src];
                assert_eq!((g.level, g.tier, g.weight), (s.level, s.tier, s.weight));
                let at = |node: &str| p.mapping.iter().position(|e| e.node == node).unwrap();
                let mut expected: Vec<u16> = b
                    .premises
                    .as_ref()
                    .expect("forged with premises of its own")
                    .iter()
                    .map(|id| at(id) as u16)
                    .chain(
                        b.rests_on
                            .iter()
                            .map(|premise| at(&format!("honeypot:{premise}")) as u16),
                    )
                    .collect();
                expected.sort_unstable();
                assert_eq!(g.depends_on, expected);
                if b.rests_on.is_none() {
                    let real = |j: usize| !planted.contains(&(j as u16));
                    for (j, x) in m.segments.iter().enumerate().filter(|(j, _)| real(*j)) {
                        let has_dependent = m
                            .segments
                            .iter()
                            .any(|y| y.depends_on.contains(&(j as u16)))
                            || m.left_out
                                .iter()
                                .any(|l| l.depends_on.contains(&(j as u16)));
                        assert!(
                            x.depends_on != g.depends_on || !has_dependent,
                            "seed {seed}: {b:?} twins segment {j}"
                        );
                    }
                }
                assert!(g.depends_on.iter().all(|&d| usize::from(d) < i));
                let doc = SegmentDoc::from_bytes(
                    &decrypt_segment(&p.keys[i], &g.id, &p.blocks[i].1).expect("decrypts"),
                )
                .unwrap();
                assert_eq!(doc.claim, b.claim);
            }
        }
    }

    /// Finding 10: "no dependents and not the conclusion" used to pick out every
    /// honeypot. Over the sample traces, the chained honeypots (the bases) have dependents
    /// like real steps: the classifier now misses a good share of the honeypots, and what
    /// it flags is not only honeypots.
    #[test]
    fn a_dead_end_classifier_no_longer_singles_out_the_honeypots() {
        let (mut honeypots, mut caught, mut flagged) = (0usize, 0usize, 0usize);
        for file in [
            "bakery-correct.txt",
            "fraction-correct.txt",
            "fraction-incorrect.txt",
            "rules-correct.txt",
            "rules-wrong.txt",
        ] {
            let text = std::fs::read_to_string(format!(
                "{}/../examples/traces/{file}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            let h = decompose(&Trace::parse(&text).unwrap(), &Options::default()).unwrap();
            let r = restrict(&h, |t| t == Tier::Computer);
            for seed in 0..10 {
                let mut rng = StdRng::seed_from_u64(seed);
                let baits = honeypot::forge(&r, honeypot::DEFAULT_PER_SESSION, &mut rng);
                let p = prepare_with(&r, &baits, quorum(), W, 100, "math", &mut rng).unwrap();
                let m = &p.manifest;
                let planted: BTreeSet<u16> = p.honeypots.iter().map(|x| x.segment).collect();
                for (i, g) in m.segments.iter().enumerate() {
                    let i = i as u16;
                    let dependents = m.segments.iter().any(|x| x.depends_on.contains(&i))
                        || m.left_out.iter().any(|l| l.depends_on.contains(&i));
                    let dead_end = !dependents && !g.conclusion;
                    flagged += usize::from(dead_end);
                    if planted.contains(&i) {
                        honeypots += 1;
                        caught += usize::from(dead_end);
                    }
                }
            }
        }
        assert!(honeypots >= 50, "only {honeypots} honeypots planted");
        let recall = caught as f64 / honeypots as f64;
        let precision = caught as f64 / flagged as f64;
        eprintln!(
            "dead-end classifier: recall {recall:.2}, precision {precision:.2} over {honeypots} honeypots"
        );
        assert!(
            recall <= 0.7,
            "the classifier still finds {recall:.2} of the honeypots"
        );
        assert!(precision < 1.0, "the classifier flags only honeypots");
    }

    #[test]
    fn blinded_ids_differ_between_sessions_of_the_same_trace() {
        let (_, h) = hdag();
        let a = prepare(
            &restrict(&h, |_| true),
            quorum(),
            W,
            1,
            "",
            &mut StdRng::seed_from_u64(1),
        )
        .expect("a");
        let b = prepare(
            &restrict(&h, |_| true),
            quorum(),
            W,
            1,
            "",
            &mut StdRng::seed_from_u64(2),
        )
        .expect("b");
        for (x, y) in a.manifest.segments.iter().zip(&b.manifest.segments) {
            assert_ne!(x.id, y.id);
            assert_ne!(x.cid, y.cid);
        }
    }

    /// A 1 MiB trace of 5,000 steps, as the decomposer groups it, fits one session's
    /// manifest and one transaction.
    #[test]
    fn a_five_thousand_step_trace_fits_one_session() {
        let t = Trace::parse(&crate::decompose::sample::counter_trace(5000, 208, 0, None))
            .expect("parses");
        let h = decompose(&t, &Options::default()).expect("decomposes");
        let p = prepare(
            &restrict(&h, |_| true),
            quorum(),
            W,
            1,
            "",
            &mut StdRng::seed_from_u64(7),
        )
        .expect("one session holds it");
        assert_eq!(
            p.manifest.segments.len(),
            h.nodes.len() - 1,
            "the problem is a given"
        );
    }

    /// An HDAG of `n` steps, each resting on the `deps` steps before it.
    fn wide(n: usize, deps: usize) -> Hdag {
        let nodes = (0..n)
            .map(|i| {
                serde_json::json!({"id": format!("S{i}"), "content": format!("step {i}"),
                    "abstraction_level": "STEP", "primary_auditor": "T_Auto"})
            })
            .collect::<Vec<_>>();
        let edges = (0..n)
            .flat_map(|i| {
                (i.saturating_sub(deps)..i).map(move |j| {
                    serde_json::json!({"from": format!("S{i}"), "to": format!("S{j}"),
                        "relationship": "depends_on"})
                })
            })
            .collect::<Vec<_>>();
        serde_json::from_value(serde_json::json!({"nodes": nodes, "edges": edges})).unwrap()
    }

    /// The decomposer's segment budget fits one `OpenSession` even at its worst: every
    /// segment with the most dependencies a manifest allows, and every honeypot planted.
    #[test]
    fn the_largest_decomposition_fits_one_transaction() {
        let n = crate::decompose::MAX_DECOMPOSED_SEGMENTS + honeypot::MAX_PER_SESSION;
        let p = prepare(
            &restrict(&wide(n, MAX_DEPENDENCIES), |_| true),
            quorum(),
            W,
            1,
            "math",
            &mut StdRng::seed_from_u64(1),
        )
        .expect("fits");
        assert_eq!(p.manifest.segments.len(), n);
        assert!(
            p.manifest
                .segments
                .iter()
                .skip(MAX_DEPENDENCIES)
                .all(|s| s.depends_on.len() == MAX_DEPENDENCIES)
        );
    }

    /// A step resting on more steps than a manifest entry may name keeps the nearest as
    /// dependencies and reads the others as givens.
    #[test]
    fn premises_beyond_the_dependency_limit_travel_as_givens() {
        let h = wide(30, 20);
        let r = restrict(&h, |_| true);
        let last: Vec<&str> = r.hdag.dependencies_of("S29").collect();
        assert_eq!(last.len(), MAX_DEPENDENCIES);
        assert!(last.contains(&"S28") && last.contains(&"S13") && !last.contains(&"S12"));
        let g = &r.givens["S29"];
        assert_eq!(g, &["step 9", "step 10", "step 11", "step 12"]);
        assert!(
            prepare(&r, quorum(), W, 1, "", &mut StdRng::seed_from_u64(1)).is_ok(),
            "the manifest is valid"
        );
    }

    /// Too much for one session or one transaction: refused with the numbers.
    #[test]
    fn a_session_too_large_is_refused_with_the_numbers() {
        let e = prepare(
            &restrict(&wide(MAX_SEGMENTS + 1, 1), |_| true),
            quorum(),
            W,
            1,
            "",
            &mut StdRng::seed_from_u64(1),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("1025 segments") && msg.contains("at most 1024"),
            "{msg}"
        );
        let e = prepare(
            &restrict(&wide(MAX_SEGMENTS, MAX_DEPENDENCIES), |_| true),
            quorum(),
            W,
            1,
            "",
            &mut StdRng::seed_from_u64(1),
        )
        .unwrap_err();
        let PrepareError::TooLarge {
            bytes, segments, ..
        } = e
        else {
            panic!("{e}");
        };
        assert_eq!(segments, MAX_SEGMENTS);
        assert!(bytes > MAX_TX_BYTES);
        assert!(
            e.to_string().contains("131072-byte transaction limit"),
            "{e}"
        );
    }

    #[test]
    fn bad_quorum_is_refused() {
        let (_, h) = hdag();
        let mut q = quorum();
        q.k = [0, 3, 5];
        assert!(matches!(
            prepare(
                &restrict(&h, |_| true),
                q,
                W,
                1,
                "",
                &mut StdRng::seed_from_u64(1)
            ),
            Err(PrepareError::Manifest(_))
        ));
    }
}
