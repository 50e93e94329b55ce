//! The exposure budget on the provider's side: what each segment's seats get to read, and
//! which segments the draw could not staff without some auditor seeing more of the trace
//! than the session's `max_exposure` allows.
//!
//! The contract enforces the budget at the draw ([`trust_contracts::sight`] counts, for a
//! seat, its segment, the premises whose keys are sealed to it, the left-out segments
//! whose text travels with it and the OPERATIONs checking it); a draw that cannot fill a
//! segment's seats within the budget fails the session. So the provider leaves out, before
//! it submits, every segment for which such a draw is possible at all, whatever the seed:
//!
//! Draws run in manifest order. Before segment `i` (tier `t`, `s_i` seats, sight `c_i`),
//! the auditors of `t` hold together at most `U = sum s_j c_j` over the earlier segments
//! `j` of tier `t`. An auditor is turned away from `i` only if it already sees at least
//! `B - c_i + 1` segments, so at most `floor(U / (B - c_i + 1))` are; `i` is safe when
//! the `E_t` eligible auditors less those still leave `s_i`. The bound is conservative
//! (it assumes the worst sharing of earlier seats), so a budget leaves out somewhat more
//! than an optimal assignment would; it never lets a draw fail.

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::tx::{SessionManifest, Tier};

use crate::session::{
    prepare::{PreparedSession, Restricted},
    terms::Resolved,
};

/// Under a budget, a kept segment's `rests_on_left_out` names every left-out segment
/// whose text travels with it (not only the ones it rests on directly), so that the
/// contract counts all of them. (The extra names change no verdict: a segment resting on
/// a left-out one through another is unsound either way.) A honeypot, and a worded
/// honeypot's OPERATION, carry the givens of the node they copy, and name what it names.
pub fn seal_sight(prepared: &mut PreparedSession, r: &Restricted) {
    let dropped_at: BTreeMap<&str, u16> = r
        .dropped
        .iter()
        .enumerate()
        .filter_map(|(j, d)| Some((d.id.as_str(), u16::try_from(j).ok()?)))
        .collect();
    for (entry, m) in prepared.manifest.segments.iter_mut().zip(&prepared.mapping) {
        let copied = if let Some(step) = m.node.strip_prefix("calculation-of-honeypot:") {
            r.supports
                .iter()
                .find(|(_, s)| s.as_str() == step)
                .map(|(op, _)| op.as_str())
        } else {
            Some(m.node.strip_prefix("honeypot:").unwrap_or(&m.node))
        };
        let Some(through) = copied.and_then(|node| r.passes_dropped.get(node)) else {
            continue;
        };
        let mut all: BTreeSet<u16> = entry.rests_on_left_out.iter().copied().collect();
        all.extend(through.iter().filter_map(|id| dropped_at.get(id.as_str())));
        entry.rests_on_left_out = all.into_iter().collect();
    }
}

/// The kept nodes whose seats would read text of other session segments that the
/// contract's count of a seat's sight ([`trust_contracts::sight`]) does not name: a node
/// resting on more premises than a manifest entry can name (the older ones travel as
/// givens, [`Restricted::passes_kept`]), and a tool call of a persistent kernel that
/// replays more earlier cells than it names among its premises. Under an exposure budget
/// the provider leaves these out, so that no seat reads more of the trace than the budget
/// the contract enforces (issue 54: replayed cells count against the budget).
pub fn hidden_sight(r: &Restricted) -> BTreeSet<String> {
    use trust_protocol::hdag::Relationship;
    let tool_kind = |id: &str| {
        r.hdag
            .nodes
            .iter()
            .any(|n| n.id == id && n.kind == crate::computer::tool::TOOL_KIND)
    };
    let mut out: BTreeSet<String> = r.passes_kept.keys().cloned().collect();
    for (node, cells) in &r.cells {
        let named = r
            .hdag
            .edges
            .iter()
            .filter(|e| {
                e.relationship == Relationship::DependsOn && e.from == *node && tool_kind(&e.to)
            })
            .count();
        if cells.len() > named && r.hdag.nodes.iter().any(|n| n.id == *node) {
            out.insert(node.clone());
        }
    }
    out
}

/// The trace segments one seat on segment `i` reads (see [`trust_contracts::sight`]).
pub fn sight(m: &SessionManifest, i: usize) -> Vec<u16> {
    trust_contracts::sight(m.segments.len(), |j| m.segments.get(j), &m.left_out, i)
}

/// Segments of `m` whose seats a draw could fail to fill within a budget of `budget`
/// segments per auditor, given `staffed[t]` eligible auditors per tier.
pub fn over_budget_segments(
    m: &SessionManifest,
    staffed: &[usize; 3],
    resolved: &Resolved,
    budget: usize,
) -> Vec<usize> {
    let mut held = [0usize; 3];
    let mut over = Vec::new();
    for (i, e) in m.segments.iter().enumerate() {
        let t = tier_slot(e.tier);
        let seats = resolved.seats(e.tier);
        let c = sight(m, i).len();
        let have = staffed.get(t).copied().unwrap_or(0);
        let turned_away = match budget.checked_sub(c) {
            None => usize::MAX,
            Some(room) => held
                .get(t)
                .copied()
                .unwrap_or(0)
                .checked_div(room.saturating_add(1))
                .unwrap_or(usize::MAX),
        };
        if have.saturating_sub(turned_away) < seats {
            over.push(i);
            continue;
        }
        if let Some(h) = held.get_mut(t) {
            *h = h.saturating_add(seats.saturating_mul(c));
        }
    }
    over
}

/// The most trace segments one auditor of the session could read: the budget when one is
/// set, else, for the tier whose seats read the most, everything its segments' seats read
/// (one auditor may be drawn on all of them).
pub fn most_seen(m: &SessionManifest, budget: Option<usize>) -> usize {
    let trace = m.segments.len().saturating_add(m.left_out.len());
    if let Some(b) = budget {
        return b.min(trace);
    }
    let mut per_tier: BTreeMap<Tier, BTreeSet<u16>> = BTreeMap::new();
    for (i, e) in m.segments.iter().enumerate() {
        per_tier.entry(e.tier).or_default().extend(sight(m, i));
    }
    let most = per_tier.values().map(BTreeSet::len).max().unwrap_or(0);
    // The contract keeps one auditor off a whole session while others remain.
    most.min(trace.saturating_sub(1).max(1))
}

fn tier_slot(t: Tier) -> usize {
    match t {
        Tier::Computer => 0,
        Tier::Llm => 1,
        Tier::Human => 2,
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::{
        Hash,
        tx::{QuorumParams, SegmentEntry, SessionTerms},
        units::Ppm,
    };

    use super::*;
    use crate::session::terms::SessionOptions;

    fn chain(n: usize, deps: bool) -> SessionManifest {
        SessionManifest {
            segments: (0..n)
                .map(|i| SegmentEntry {
                    depends_on: if deps && i > 0 {
                        vec![u16::try_from(i - 1).unwrap()]
                    } else {
                        Vec::new()
                    },
                    ..SegmentEntry::plain(Hash::of_parts("s", &[&[i as u8]]), Tier::Computer)
                })
                .collect(),
            mapping_commitment: Hash::of_parts("m", &[]),
            quorum: QuorumParams {
                k: [3; 3],
                extra_seats: 0,
                tau: Ppm(600_000),
                beta: Ppm(600_000),
            },
            fee: 0,
            domain: String::new(),
            left_out: Vec::new(),
            terms: SessionTerms::default(),
            honeypot_set: trust_protocol::honeypot_set_commitment(
                &[],
                &trust_protocol::Salt([0; 32]),
            ),
        }
    }

    fn resolved() -> Resolved {
        SessionOptions::default()
            .resolve(&trust_contracts::Params::default())
            .unwrap()
    }

    #[test]
    fn a_seat_reads_its_segment_and_its_premises() {
        let m = chain(4, true);
        assert_eq!(sight(&m, 0), vec![0]);
        assert_eq!(sight(&m, 3), vec![2, 3]);
    }

    #[test]
    fn segments_past_what_the_auditors_can_hold_are_over_budget() {
        // 6 auditors, 3 seats each, a budget of 6 segments, independent segments: before
        // segment 8, the 24 seats held could have filled 4 auditors' budgets, leaving 2
        // for its 3 seats; segments 0..=7 are safe, the rest are turned away.
        let m = chain(12, false);
        let over = over_budget_segments(&m, &[6, 0, 0], &resolved(), 6);
        assert_eq!(over, (8..12).collect::<Vec<_>>());
        // With room for everything nothing is over.
        assert!(over_budget_segments(&m, &[40, 0, 0], &resolved(), 6).is_empty());
        // A segment reading more than the budget can never be staffed.
        let m = chain(3, true);
        assert_eq!(
            over_budget_segments(&m, &[40, 0, 0], &resolved(), 1),
            vec![1, 2]
        );
    }

    /// A kernel transcript of `calls` calls, each `xN = N` and shown.
    fn kernel(calls: usize) -> trust_protocol::trace::Trace {
        use trust_protocol::trace::blocks::{Semantics, render_tool};
        let mut thinking = String::from("I set the values one by one.\n");
        for i in 1..=calls {
            let code = format!("x{i} = {i}\nx{i}");
            thinking += &render_tool(
                &format!("c{i}"),
                "python",
                Some(Semantics::Cell),
                &code,
                &i.to_string(),
            )
            .expect("renders");
            thinking += &format!("So x{i} is {i}.\n");
        }
        trust_protocol::trace::Trace {
            problem: "Set x1 to x20 to 1 to 20.".into(),
            thinking,
            output: "Done.".into(),
        }
    }

    /// Issue 54: a call that replays more earlier cells than its entry can name as
    /// premises (or any segment resting on more premises than that) lets its seats read
    /// segments the contract's count of sight does not name; a short kernel names all.
    #[test]
    fn replayed_cells_past_the_named_premises_are_hidden_sight() {
        use crate::{
            decompose::{Options, decompose},
            session::prepare::restrict,
        };
        let limit = trust_protocol::tx::MAX_DEPENDENCIES;
        let short = kernel(4);
        let r = restrict(
            &decompose(&short, &Options::default()).expect("decompose"),
            |_| true,
        );
        assert!(
            r.cells.values().any(|c| c.len() == 3),
            "the last call replays 3"
        );
        assert!(hidden_sight(&r).is_empty(), "{:?}", hidden_sight(&r));

        let long = kernel(limit + 3);
        let r = restrict(
            &decompose(&long, &Options::default()).expect("decompose"),
            |_| true,
        );
        let hidden = hidden_sight(&r);
        let replaying_more: BTreeSet<String> = r
            .cells
            .iter()
            .filter(|(_, c)| c.len() > limit)
            .map(|(n, _)| n.clone())
            .collect();
        assert!(!replaying_more.is_empty());
        assert!(
            replaying_more.is_subset(&hidden),
            "every call replaying more than {limit} cells is hidden sight: {hidden:?}"
        );
        // The early calls name every cell they replay.
        let early: Vec<&String> = r
            .cells
            .iter()
            .filter(|(_, c)| c.len() < 3)
            .map(|(n, _)| n)
            .collect();
        assert!(!early.is_empty() && early.iter().all(|n| !hidden.contains(*n)));
    }

    #[test]
    fn without_a_budget_one_auditor_may_see_a_whole_tier() {
        let m = chain(5, true);
        assert_eq!(most_seen(&m, None), 4, "never the whole trace");
        assert_eq!(most_seen(&m, Some(2)), 2);
    }

    /// Under a budget a honeypot names the left-out segments its source names (their
    /// text travels with both), and a worded honeypot's OPERATION those of the OPERATION
    /// it copies: on the ledger neither differs from what it copies there.
    #[test]
    fn honeypots_name_the_left_out_segments_of_what_they_copy() {
        use rand::{SeedableRng, rngs::StdRng};

        use crate::{
            decompose::{Options, decompose},
            session::{
                honeypot,
                prepare::{TierWeights, prepare_with, restrict},
            },
        };
        let mut named = 0;
        let dir = format!("{}/../examples/traces", env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let Ok(t) = trust_protocol::trace::Trace::parse(&text) else {
                continue;
            };
            let h = decompose(&t, &Options::default()).unwrap();
            for keep in [Tier::Computer, Tier::Llm] {
                let mut r = restrict(&h, |x| x == keep);
                // Every kept node rests on the first left-out one, and the last passes
                // through to it: what each names differs from none.
                let (Some(first), Some(last)) = (r.dropped.first(), r.dropped.last()) else {
                    continue;
                };
                let (first, last) = (first.id.clone(), last.id.clone());
                for n in &r.hdag.nodes {
                    r.rests_on_dropped.insert(n.id.clone(), vec![first.clone()]);
                    r.passes_dropped.insert(n.id.clone(), vec![last.clone()]);
                }
                for seed in 0..8 {
                    let mut rng = StdRng::seed_from_u64(seed);
                    let baits = honeypot::forge(&r, 2, &mut rng);
                    let quorum = chain(0, false).quorum;
                    let Ok(mut p) =
                        prepare_with(&r, &baits, quorum, TierWeights::EQUAL, 0, "", &mut rng)
                    else {
                        continue;
                    };
                    seal_sight(&mut p, &r);
                    let at = |node: &str| p.mapping.iter().position(|e| e.node == node).unwrap();
                    let left = |i: usize| p.manifest.segments[i].rests_on_left_out.clone();
                    for b in &baits {
                        assert_eq!(left(at(&b.name())), left(at(&b.source)), "{file:?}: {b:?}");
                        named += usize::from(!left(at(&b.source)).is_empty());
                        if let (Some(c), Some(name)) = (&b.calculation, b.calculation_name()) {
                            assert_eq!(left(at(&name)), left(at(&c.source)), "{file:?}: {b:?}");
                        }
                    }
                }
            }
        }
        assert!(named > 0, "no honeypot's source names a left-out segment");
    }
}
