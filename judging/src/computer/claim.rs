//! Judging a segment's claim as a seat receives it: a single step, or a group of a long
//! trace's consecutive steps judged one by one, each with the premises it would have as a
//! segment of its own. The steps of a group are cut and linked as the decomposer cuts and
//! links them ([`readable::steps_of`], [`readable::Links`]).

use trust_protocol::{Hash, Vote};

use super::{Judgement, check_segment, readable};

/// Most steps of one group the Computer tier judges (one by one): a bound on the work of
/// one judgement, which a seat must finish within the commit window. A longer group goes
/// to the LLM tier.
pub const MAX_GROUP_STEPS: usize = 1024;

/// For each of `steps` (in trace order), the earlier ones it rests on, as the decomposer
/// links a step that is a segment of its own ([`readable::Links`]): for each of its
/// symbols the latest earlier step that mentions it, failing any a few by the numbers it
/// shares, a rule's antecedent, a truth table's parts. The problem statement is no step
/// here (it travels with a segment as a given). A judge of a group gives each step these
/// premises, so a grouped step is judged with what it would have been judged with on its
/// own.
pub fn step_links(steps: &[&str]) -> Vec<Vec<usize>> {
    let mut links = readable::Links::new("");
    let mut out = vec![Vec::new(); steps.len()];
    // Node 0 stands for the problem; node i + 1 for step i.
    for (i, (step, l)) in steps.iter().zip(&mut out).enumerate() {
        let (premises, _) = links.premises(i.saturating_add(1), step, 0);
        l.extend(
            premises
                .into_iter()
                .filter_map(|(to, _)| to.checked_sub(1))
                .filter(|&to| to < i),
        );
        l.sort_unstable();
        l.dedup();
    }
    out
}

/// The Computer tier's judgement of a segment as a seat receives it (its claim, the claims
/// it cites, the givens sealed with it): [`check_segment`] for a single step; for
/// a group of a long trace's steps, each step judged as it would be as a segment of its
/// own, with the givens and, as premises, the steps it rests on ([`step_links`] over the
/// steps of the cited segments and the group's earlier steps). A group is Valid when every
/// step is, wrong when one step is wrong under every reading (that step named), and
/// otherwise an abstention: a step the checkers cannot read never makes a group wrong.
pub fn check_claim(claim: &str, premises: &[String], givens: &[String], seed: &Hash) -> Judgement {
    let steps = readable::steps_of(claim);
    if steps.len() <= 1 {
        return check_segment(claim, premises, givens, seed);
    }
    if steps.len() > MAX_GROUP_STEPS {
        return Judgement::Abstain(format!(
            "a group of {} steps: more than the {MAX_GROUP_STEPS} the checkers judge in one segment",
            steps.len()
        ));
    }
    // A cited segment may be a group too: its steps are premises one by one.
    let cited: Vec<&str> = premises
        .iter()
        .flat_map(|p| readable::steps_of(p))
        .collect();
    let all: Vec<&str> = cited.iter().chain(&steps).copied().collect();
    let links = step_links(&all);
    let mut undecided: Option<String> = None;
    let n = steps.len();
    for (k, step) in steps.iter().enumerate() {
        let at = || {
            let head: String = step.chars().take(60).collect();
            format!("step {} of {n} ({head:?})", k.saturating_add(1))
        };
        let premises: Vec<String> = links
            .get(cited.len().saturating_add(k))
            .into_iter()
            .flatten()
            .filter_map(|&j| all.get(j))
            .map(|p| (*p).to_string())
            .collect();
        match check_segment(step, &premises, givens, seed) {
            Judgement::Vote {
                vote: Vote::Valid, ..
            } => {}
            Judgement::Vote { vote, reason } => {
                return Judgement::Vote {
                    vote,
                    reason: format!("{}: {reason}", at()),
                };
            }
            Judgement::Abstain(why) => {
                undecided.get_or_insert_with(|| format!("{}: {why}", at()));
            }
        }
    }
    match undecided {
        Some(why) => Judgement::Abstain(why),
        None => Judgement::Vote {
            vote: Vote::Valid,
            reason: format!("all {n} steps check"),
        },
    }
}
