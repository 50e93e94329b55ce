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

/// The review's classifier (see the module doc).
fn twins_and_tails(m: &SessionManifest) -> BTreeSet<usize> {
    let n = m.segments.len();
    let (of, left) = dependents(m);
    let dead_end = |i: usize| of[i].is_empty() && !left[i];
    let mut flagged: BTreeSet<usize> = BTreeSet::new();
    for i in (0..n).filter(|&i| candidate(m, i)) {
        let g = &m.segments[i];
        if g.level == AbstractionLevel::Operation {
            flagged.insert(i);
            continue;
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
    flagged
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
fn measure(seeds: u64) -> (Score, Score, Shapes) {
    let quorum = QuorumParams {
        k: [3, 3, 3],
        extra_seats: 0,
        tau: Ppm(600_000),
        beta: Ppm(600_000),
    };
    let (mut review, mut ends) = (Score::default(), Score::default());
    let mut shapes = Shapes::default();
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
                review.add(m, &planted, &twins_and_tails(m));
                ends.add(m, &planted, &dead_ends(m));
                shapes.add(m, &planted);
            }
        }
    }
    (review, ends, shapes)
}

/// The review's classifier does no better than chance at picking honeypots out of a
/// manifest, and the dead-end classifier of finding 10 no better than it once did.
#[test]
fn the_manifest_shape_does_not_single_out_honeypots() {
    let (review, ends, shapes) = measure(2);
    eprintln!("shapes (with dependents, tail, other dead end): {shapes:?}");
    eprintln!("{}", review.line("twins and tails"));
    eprintln!("{}", ends.line("dead ends"));
    assert!(review.honeypots >= 1000, "{}", review.line("planted"));
}
