//! Honeypots against a coalition that reads only the public manifest (each segment's
//! level, tier, weight, `depends_on`, `supports` and conclusion flag, and the left-out
//! entries) and guesses which segments are honeypots from their place in the graph.
//!
//! The classifier is the one a security review described:
//!
//! - **twins**: segments with the same level, tier and `depends_on`, of which one has a
//!   dependent that is not itself flagged and another has none: the one without is
//!   flagged (a honeypot that copied a step's premises has the step as its twin, and
//!   only honeypots rest on honeypots);
//! - **tails**: a dead end (no dependent, not the conclusion, not an OPERATION) resting
//!   on a segment whose only dependent is that dead end (the follower of a honeypot
//!   chain);
//! - **orphan OPERATIONs**: a segment of the OPERATION level that supports nothing.
//!
//! It runs over sessions prepared from the repository's own traces
//! (`examples/traces/`, and the trace of every `correct` record of
//! `examples/corpus/quality.jsonl` and `examples/corpus/written.jsonl`), each once with
//! only its Computer tier audited and once with every tier, honeypots forged with fixed
//! seeds. Its precision is compared with chance: the precision a guesser would get that
//! flags as many segments of each session at random (the share of honeypots among that
//! session's segments, weighted by what it flags there).

use std::collections::{BTreeMap, BTreeSet};

use rand::{SeedableRng, rngs::StdRng};
use trust_judging::{
    decompose::{Options, decompose},
    session::{
        honeypot,
        prepare::{TierWeights, prepare_with, restrict},
    },
};
use trust_protocol::{
    hdag::AbstractionLevel,
    trace::Trace,
    tx::{QuorumParams, SessionManifest, Tier},
    units::Ppm,
};

/// What a classifier made of a set of sessions.
#[derive(Debug, Default, Clone, Copy)]
struct Score {
    segments: usize,
    honeypots: usize,
    flagged: usize,
    caught: usize,
    /// Sum over flagged segments of their session's share of honeypots.
    chance: f64,
}

impl Score {
    fn add(&mut self, m: &SessionManifest, planted: &BTreeSet<usize>, flagged: &BTreeSet<usize>) {
        let n = m.segments.len();
        self.segments += n;
        self.honeypots += planted.len();
        self.flagged += flagged.len();
        self.caught += flagged.intersection(planted).count();
        self.chance += flagged.len() as f64 * planted.len() as f64 / n.max(1) as f64;
    }
    fn precision(&self) -> f64 {
        self.caught as f64 / self.flagged.max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.caught as f64 / self.honeypots.max(1) as f64
    }
    fn base_rate(&self) -> f64 {
        self.honeypots as f64 / self.segments.max(1) as f64
    }
    fn chance_precision(&self) -> f64 {
        self.chance / self.flagged.max(1) as f64
    }
    fn line(&self, what: &str) -> String {
        format!(
            "{what}: {} honeypots among {} segments (base rate {:.3}); flagged {}, of them {} honeypots: precision {:.3} (chance {:.3}), recall {:.3}",
            self.honeypots,
            self.segments,
            self.base_rate(),
            self.flagged,
            self.caught,
            self.precision(),
            self.chance_precision(),
            self.recall()
        )
    }
}

/// The segments of `m` that rest on each segment (`depends_on`), and whether a left-out
/// entry rests on it.
fn dependents(m: &SessionManifest) -> (Vec<Vec<usize>>, Vec<bool>) {
    let n = m.segments.len();
    let mut of = vec![Vec::new(); n];
    for (j, g) in m.segments.iter().enumerate() {
        for &d in &g.depends_on {
            if let Some(x) = of.get_mut(usize::from(d)) {
                x.push(j);
            }
        }
    }
    let mut left = vec![false; n];
    for l in &m.left_out {
        for &d in &l.depends_on {
            if let Some(x) = left.get_mut(usize::from(d)) {
                *x = true;
            }
        }
    }
    (of, left)
}

/// A segment that could be a honeypot, as the manifest shows: not the conclusion, no
/// OPERATION of another.
fn candidate(m: &SessionManifest, i: usize) -> bool {
    let g = &m.segments[i];
    !g.conclusion && g.supports.is_none()
}

/// What each rule of the review's classifier (see the module doc) flags: tails, twins,
/// OPERATIONs supporting nothing.
struct Flags {
    tails: BTreeSet<usize>,
    twins: BTreeSet<usize>,
    orphans: BTreeSet<usize>,
}

impl Flags {
    fn all(&self) -> BTreeSet<usize> {
        self.tails
            .iter()
            .chain(&self.twins)
            .chain(&self.orphans)
            .copied()
            .collect()
    }
}

/// The review's classifier (see the module doc).
fn twins_and_tails(m: &SessionManifest) -> Flags {
    let n = m.segments.len();
    let (of, left) = dependents(m);
    let dead_end = |i: usize| of[i].is_empty() && !left[i];
    let mut flagged: BTreeSet<usize> = BTreeSet::new();
    let mut orphans: BTreeSet<usize> = BTreeSet::new();
    for i in (0..n).filter(|&i| candidate(m, i)) {
        let g = &m.segments[i];
        if g.level == AbstractionLevel::Operation {
            orphans.insert(i);
        }
        let tail = dead_end(i)
            && g.depends_on.iter().any(|&d| {
                let d = usize::from(d);
                of[d] == [i] && !left[d]
            });
        if tail {
            flagged.insert(i);
        }
    }
    let tails = flagged.clone();
    flagged.extend(&orphans);
    let mut groups: BTreeMap<(AbstractionLevel, Tier, Vec<u16>), Vec<usize>> = BTreeMap::new();
    for (i, g) in m.segments.iter().enumerate() {
        groups
            .entry((g.level, g.tier, g.depends_on.clone()))
            .or_default()
            .push(i);
    }
    loop {
        let before = flagged.len();
        let real_dependent = |j: usize, flagged: &BTreeSet<usize>| {
            left[j] || of[j].iter().any(|x| !flagged.contains(x))
        };
        for members in groups.values().filter(|v| v.len() >= 2) {
            if !members.iter().any(|&j| real_dependent(j, &flagged)) {
                continue;
            }
            let lone: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&j| candidate(m, j) && !real_dependent(j, &flagged))
                .collect();
            flagged.extend(lone);
        }
        if flagged.len() == before {
            break;
        }
    }
    let twins = flagged
        .into_iter()
        .filter(|i| !tails.contains(i) && !orphans.contains(i))
        .collect();
    Flags {
        tails,
        twins,
        orphans,
    }
}

/// The older classifier (finding 10): every dead end that is not the conclusion (nor an
/// OPERATION of another segment).
fn dead_ends(m: &SessionManifest) -> BTreeSet<usize> {
    let (of, left) = dependents(m);
    (0..m.segments.len())
        .filter(|&i| candidate(m, i) && of[i].is_empty() && !left[i])
        .collect()
}

/// The traces the sessions are prepared from: the examples, and the `correct` records of
/// the two labelled corpora.
fn traces() -> Vec<(String, Trace)> {
    let root = format!("{}/../examples", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(format!("{root}/traces"))
        .expect("examples/traces")
        .map(|e| e.expect("an entry").path())
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a trace");
        if let Ok(t) = Trace::parse(&text) {
            out.push((path.display().to_string(), t));
        }
    }
    for corpus in ["quality.jsonl", "written.jsonl"] {
        let text = std::fs::read_to_string(format!("{root}/corpus/{corpus}")).expect("corpus");
        for line in text.lines() {
            let r: serde_json::Value = serde_json::from_str(line).expect("a record");
            if r["variant"] != "correct" {
                continue;
            }
            if let Some(t) = r["trace"].as_str().and_then(|t| Trace::parse(t).ok()) {
                out.push((r["id"].to_string(), t));
            }
        }
    }
    out
}

/// How many candidate segments of each shape (resting on nothing but with dependents,
/// a tail, another dead end), real and honeypot.
#[derive(Debug, Default)]
struct Shapes {
    real: [usize; 3],
    honeypot: [usize; 3],
}

impl Shapes {
    fn add(&mut self, m: &SessionManifest, planted: &BTreeSet<usize>) {
        let (of, left) = dependents(m);
        for i in (0..m.segments.len()).filter(|&i| candidate(m, i)) {
            let dead = of[i].is_empty() && !left[i];
            let tail = dead
                && m.segments[i].depends_on.iter().any(|&d| {
                    let d = usize::from(d);
                    of[d] == [i] && !left[d]
                });
            let k = if !dead {
                0
            } else if tail {
                1
            } else {
                2
            };
            if planted.contains(&i) {
                self.honeypot[k] += 1;
            } else {
                self.real[k] += 1;
            }
        }
    }
}

/// Both classifiers over every session of every trace (Computer tier only, then every
/// tier; `seeds` sessions of each).
fn measure(seeds: u64) -> (Score, Score, Shapes, [Score; 3]) {
    let quorum = QuorumParams {
        k: [3, 3, 3],
        extra_seats: 0,
        tau: Ppm(600_000),
        beta: Ppm(600_000),
    };
    let (mut review, mut ends) = (Score::default(), Score::default());
    let mut shapes = Shapes::default();
    let mut rules = [Score::default(); 3];
    for (_, t) in traces() {
        let Ok(h) = decompose(&t, &Options::default()) else {
            continue;
        };
        for computer_only in [true, false] {
            let r = restrict(&h, |tier| !computer_only || tier == Tier::Computer);
            for seed in 0..seeds {
                let mut rng = StdRng::seed_from_u64(seed);
                let baits = honeypot::forge(&r, honeypot::DEFAULT_PER_SESSION, &mut rng);
                if baits.is_empty() {
                    continue;
                }
                let Ok(p) = prepare_with(
                    &r,
                    &baits,
                    quorum.clone(),
                    TierWeights::EQUAL,
                    1,
                    "",
                    &mut rng,
                ) else {
                    continue;
                };
                let m = &p.manifest;
                let planted: BTreeSet<usize> =
                    p.honeypots.iter().map(|h| usize::from(h.segment)).collect();
                let f = twins_and_tails(m);
                review.add(m, &planted, &f.all());
                rules[0].add(m, &planted, &f.tails);
                rules[1].add(m, &planted, &f.twins);
                rules[2].add(m, &planted, &f.orphans);
                ends.add(m, &planted, &dead_ends(m));
                shapes.add(m, &planted);
            }
        }
    }
    (review, ends, shapes, rules)
}

/// The review's classifier does barely better than chance at picking honeypots out of a
/// manifest, and the dead-end classifier of finding 10 no better than it once did.
///
/// Before honeypots cited premises of their own (a honeypot copied its source's
/// `depends_on`, and the Computer tier copied OPERATIONs, which then supported nothing),
/// over the same traces and seeds: 4698 honeypots among 18896 segments (base rate 0.249);
/// twins, tails and orphan OPERATIONs together flagged 5958 segments at precision 0.704
/// (chance 0.274) and recall 0.893; twins alone at precision 0.567 (chance 0.195); orphan
/// OPERATIONs alone 0.835 (chance 0.291); dead ends 0.581 (chance 0.265), recall 0.825.
/// Now no honeypot has a twin a dependent tells from it, and no OPERATION is copied
/// (fewer honeypots: where a trace's Computer tier holds only OPERATIONs, there is
/// nothing left to copy that would not give itself away).
///
/// What remains, and the margins below allow for it, is the dead end every session's
/// honeypots end in: only honeypots may rest on a honeypot, so with two honeypots a
/// session has one dead end (the follower of a chain, a tail resting on its base alone)
/// or two (lone honeypots), while the trace's own steps are dead ends less often (about
/// 39% of them here, 4% tails). Chains are drawn at the odds that balance tails against
/// plain dead ends trace by trace (`Graph::chain_odds`); over these traces the tails rule
/// keeps precision about 0.67 at recall 0.21 and the combined classifier about 0.12 above
/// chance at recall 0.33, the dead-end rule about 0.21 above chance. The bounds (0.15
/// above chance and recall at most 0.4 for the review's classifier, twins at chance,
/// orphan OPERATIONs 0.15 above chance, dead ends 0.25 above chance) each fail on the
/// figures before.
#[test]
fn the_manifest_shape_does_not_single_out_honeypots() {
    let (review, ends, shapes, rules) = measure(2);
    let [tails, twins, orphans] = rules;
    eprintln!("shapes (with dependents, tail, other dead end): {shapes:?}");
    eprintln!("{}", tails.line("tails"));
    eprintln!("{}", twins.line("twins"));
    eprintln!("{}", orphans.line("orphan OPERATIONs"));
    eprintln!("{}", review.line("twins, tails and orphan OPERATIONs"));
    eprintln!("{}", ends.line("dead ends"));
    assert!(review.honeypots >= 1000, "{}", review.line("planted"));
    assert!(
        twins.precision() <= twins.chance_precision(),
        "{}",
        twins.line("twins")
    );
    assert!(
        orphans.precision() <= orphans.chance_precision() + 0.15,
        "{}",
        orphans.line("orphan OPERATIONs")
    );
    assert!(
        review.precision() <= review.chance_precision() + 0.15 && review.recall() <= 0.4,
        "{}",
        review.line("twins, tails and orphan OPERATIONs")
    );
    assert!(
        ends.precision() <= ends.chance_precision() + 0.25,
        "{}",
        ends.line("dead ends")
    );
}
