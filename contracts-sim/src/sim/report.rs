//! What a simulation reports: reputation and cumulative profit per strategy over time
//! (the paper's Figure 6), final means, and accuracy against ground truth next to a
//! single-auditor and a plain-majority baseline computed on the same revealed votes.

use std::collections::BTreeMap;

use serde::Serialize;
use trust_protocol::units::Ppm;

use super::{SessionTruth, Sim, SimConfig, Strategy};
use crate::{
    Outcome, SegmentVerdict, TraceVerdict,
    tally::{self, Weighed},
};

/// Means per strategy at one point in time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// Sessions decided so far.
    pub decided: u64,
    /// Block height.
    pub height: u64,
    /// Mean reputation (0..1) per strategy name.
    pub reputation: BTreeMap<String, f64>,
    /// Mean cumulative profit (rewards minus slashes) per strategy name.
    pub profit: BTreeMap<String, f64>,
}

/// Final numbers of one strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrategySummary {
    /// Strategy name.
    pub strategy: String,
    /// Auditors following it.
    pub auditors: u32,
    /// Mean final reputation.
    pub final_reputation_mean: f64,
    /// Mean final profit.
    pub final_profit_mean: f64,
    /// Auditors still eligible for seats.
    pub active: u32,
    /// Auditors flagged as rubber-stampers.
    pub flagged: u32,
    /// Share of its scored seats on which the strategy agreed with the verdict, over all
    /// its auditors (no-shows count as disagreements); 0 when none was scored.
    pub agreement: f64,
}

/// Accuracy against ground truth (honeypots excluded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// Segments judged.
    pub segments: u64,
    /// Traces judged.
    pub traces: u64,
    /// The network's segment accuracy.
    pub network_segment: f64,
    /// The network's trace accuracy: traces whose verdict was Pass when every segment
    /// holds and Fail otherwise, over all traces (an Inconclusive verdict is not a hit).
    pub network_trace: f64,
    /// Share of traces the network left Inconclusive (its own outcome: neither right
    /// nor wrong).
    pub network_inconclusive: f64,
    /// Share of traces the network decided wrongly (Pass on a flawed trace, or Fail on a
    /// sound one).
    pub network_trace_wrong: f64,
    /// First revealed vote per segment.
    pub single_segment: f64,
    /// Trace accuracy from the single-auditor segment verdicts.
    pub single_trace: f64,
    /// Majority of all revealed votes per segment.
    pub majority_segment: f64,
    /// Trace accuracy from the majority segment verdicts.
    pub majority_trace: f64,
}

/// Running counts behind [`Accuracy`].
#[derive(Debug, Clone, Default)]
pub(crate) struct AccuracyCounts {
    segments: u64,
    traces: u64,
    hits: [u64; 3],
    trace_hits: [u64; 3],
    inconclusive: u64,
    trace_wrong: u64,
}

/// ARES propagation over per-segment "holds" flags.
fn propagate(local: &[bool], deps: &[Vec<u16>]) -> Vec<bool> {
    let mut out: Vec<bool> = Vec::with_capacity(local.len());
    for (i, ok) in local.iter().enumerate() {
        let inherited = deps
            .get(i)
            .is_some_and(|ds| ds.iter().any(|d| out.get(usize::from(*d)) == Some(&false)));
        out.push(*ok && !inherited);
    }
    out
}

/// Whether a trace with these per-segment "holds" flags (after propagation) passes by the
/// contract's own rule ([`crate::tally::trace_verdict`]): no error at a conclusion (the
/// sinks of `depends_on`: the simulator flags none) and the passing weight at `beta`.
/// Truth and every predictor are judged by the same rule.
fn trace_passes(
    holds: &[bool],
    deps: &[Vec<u16>],
    weights: &[u32],
    skip: Option<usize>,
    beta: Ppm,
) -> bool {
    let dep_refs: Vec<&[u16]> = deps.iter().map(Vec::as_slice).collect();
    let sinks = tally::conclusions(&vec![false; holds.len()], &dep_refs);
    let weighed: Vec<Weighed> = holds
        .iter()
        .zip(weights)
        .zip(&sinks)
        .enumerate()
        .filter(|(i, _)| Some(*i) != skip)
        .map(|(_, ((h, w), c))| Weighed {
            verdict: if *h {
                SegmentVerdict::Valid
            } else {
                SegmentVerdict::Invalid
            },
            weight: *w,
            conclusion: *c,
            // After propagation a segment holds only when everything it rests on does.
            sound: *h,
        })
        .collect();
    tally::trace_verdict(&weighed, beta).verdict == TraceVerdict::Pass
}

impl AccuracyCounts {
    pub(crate) fn add(&mut self, t: &SessionTruth, o: &Outcome, beta: Ppm) {
        let skip = t.honeypot.map(|(i, ..)| usize::from(i));
        let truth = propagate(&t.correct, &t.deps);
        let network: Vec<bool> = o
            .segments
            .iter()
            .map(|s| s.verdict == SegmentVerdict::Valid)
            .collect();
        let single_local: Vec<bool> = t
            .reveals
            .iter()
            .map(|r| r.first().is_some_and(|v| v.is_valid()))
            .collect();
        let majority_local: Vec<bool> = t
            .reveals
            .iter()
            .map(|r| {
                let yes = r.iter().filter(|v| v.is_valid()).count();
                yes * 2 > r.len()
            })
            .collect();
        let preds = [
            network,
            propagate(&single_local, &t.deps),
            propagate(&majority_local, &t.deps),
        ];
        let truth_trace = trace_passes(&truth, &t.deps, &t.weights, skip, beta);
        for (m, p) in preds.iter().enumerate() {
            for (i, (a, b)) in p.iter().zip(&truth).enumerate() {
                if Some(i) != skip && a == b {
                    self.hits[m] += 1;
                }
            }
            // The network's own three-valued verdict; the baselines have no third value.
            let hit = if m == 0 {
                match o.trace {
                    TraceVerdict::Pass => truth_trace,
                    TraceVerdict::Fail => !truth_trace,
                    TraceVerdict::Inconclusive => {
                        self.inconclusive += 1;
                        false
                    }
                }
            } else {
                trace_passes(p, &t.deps, &t.weights, skip, beta) == truth_trace
            };
            if hit {
                self.trace_hits[m] += 1;
            } else if m == 0 && o.trace != TraceVerdict::Inconclusive {
                self.trace_wrong += 1;
            }
        }
        self.segments += truth.len() as u64 - u64::from(skip.is_some());
        self.traces += 1;
    }

    fn finish(&self) -> Accuracy {
        let r = |h: u64, n: u64| if n == 0 { 0.0 } else { h as f64 / n as f64 };
        Accuracy {
            segments: self.segments,
            traces: self.traces,
            network_segment: r(self.hits[0], self.segments),
            network_trace: r(self.trace_hits[0], self.traces),
            network_inconclusive: r(self.inconclusive, self.traces),
            network_trace_wrong: r(self.trace_wrong, self.traces),
            single_segment: r(self.hits[1], self.segments),
            single_trace: r(self.trace_hits[1], self.traces),
            majority_segment: r(self.hits[2], self.segments),
            majority_trace: r(self.trace_hits[2], self.traces),
        }
    }
}

/// Everything a run produces.
#[derive(Debug, Clone, Serialize)]
pub struct SimReport {
    /// The configuration used.
    pub config: SimConfig,
    /// Blocks produced.
    pub blocks: u64,
    /// Sessions decided.
    pub sessions_decided: u64,
    /// Sessions that failed (too few eligible auditors).
    pub sessions_failed: u32,
    /// Transactions applied.
    pub txs_applied: u64,
    /// Transactions rejected, by error kind.
    pub txs_rejected: BTreeMap<String, u64>,
    /// The final state root (hex).
    pub state_root: String,
    /// Final numbers per strategy present.
    pub strategies: Vec<StrategySummary>,
    /// Time series (Figure 6).
    pub series: Vec<SeriesPoint>,
    /// Accuracy against ground truth.
    pub accuracy: Accuracy,
}

impl SimReport {
    /// The summary of one strategy, if present.
    pub fn strategy(&self, s: Strategy) -> Option<&StrategySummary> {
        self.strategies.iter().find(|x| x.strategy == s.name())
    }
}

fn per_strategy(sim: &Sim) -> BTreeMap<Strategy, Vec<(f64, f64, bool, bool)>> {
    let state = sim.contract.state();
    let mut m: BTreeMap<Strategy, Vec<(f64, f64, bool, bool)>> = BTreeMap::new();
    for a in &sim.agents {
        let (rep, profit, active, flagged) = match state.auditors.get(&a.id) {
            Some(au) => (
                au.reputation.to_f64(),
                au.earned as f64 - au.slashed as f64,
                au.active,
                au.flagged,
            ),
            None => (0.0, 0.0, false, false),
        };
        m.entry(a.strategy)
            .or_default()
            .push((rep, profit, active, flagged));
    }
    m
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0u32), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { s / f64::from(n) }
}

pub(crate) fn sample(sim: &Sim) -> SeriesPoint {
    let m = per_strategy(sim);
    SeriesPoint {
        decided: sim.decided.len() as u64,
        height: sim.height,
        reputation: m
            .iter()
            .map(|(s, v)| (s.name().to_string(), mean(v.iter().map(|x| x.0))))
            .collect(),
        profit: m
            .iter()
            .map(|(s, v)| (s.name().to_string(), mean(v.iter().map(|x| x.1))))
            .collect(),
    }
}

/// Agreed and scored seats per strategy.
fn agreement(sim: &Sim) -> BTreeMap<Strategy, (u64, u64)> {
    let state = sim.contract.state();
    let mut m: BTreeMap<Strategy, (u64, u64)> = BTreeMap::new();
    for a in &sim.agents {
        if let Some(au) = state.auditors.get(&a.id) {
            let e = m.entry(a.strategy).or_default();
            e.0 += au.agreed;
            e.1 += au.agreed + au.disagreed;
        }
    }
    m
}

pub(crate) fn build(sim: Sim) -> SimReport {
    let agreed = agreement(&sim);
    let strategies = per_strategy(&sim)
        .into_iter()
        .map(|(s, v)| StrategySummary {
            agreement: match agreed.get(&s) {
                Some(&(hit, all)) if all > 0 => hit as f64 / all as f64,
                _ => 0.0,
            },
            strategy: s.name().to_string(),
            auditors: v.len() as u32,
            final_reputation_mean: mean(v.iter().map(|x| x.0)),
            final_profit_mean: mean(v.iter().map(|x| x.1)),
            active: v.iter().filter(|x| x.2).count() as u32,
            flagged: v.iter().filter(|x| x.3).count() as u32,
        })
        .collect();
    let mut series = sim.series.clone();
    if series.last().map(|p| p.decided) != Some(sim.decided.len() as u64) {
        series.push(sample(&sim));
    }
    SimReport {
        blocks: sim.height,
        sessions_decided: sim.decided.len() as u64,
        sessions_failed: sim.failed,
        txs_applied: sim.applied,
        txs_rejected: sim.rejected.clone(),
        state_root: sim.contract.state_root().to_hex(),
        strategies,
        series,
        accuracy: sim.accuracy.finish(),
        config: sim.cfg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn propagation_of_truth() {
        assert_eq!(
            propagate(
                &[true, false, true, true],
                &[vec![], vec![0], vec![1], vec![0]]
            ),
            vec![true, false, false, true]
        );
    }

    #[test]
    fn trace_rule_skips_the_honeypot() {
        let beta = Ppm(800_000);
        let deps = vec![vec![], vec![0], vec![]];
        assert!(trace_passes(
            &[true, true, false],
            &deps,
            &[2, 2, 5],
            Some(2),
            beta
        ));
        assert!(!trace_passes(
            &[true, true, false],
            &deps,
            &[2, 2, 5],
            None,
            beta
        ));
        // An error at a conclusion fails the trace even when the weight would pass.
        assert!(!trace_passes(
            &[true, true, true, true, false],
            &[vec![], vec![0], vec![1], vec![2], vec![3]],
            &[1; 5],
            None,
            beta
        ));
    }
}
