//! NDL and NDL_f problems, a forward prover, renderings in the styles models write, and
//! the corruptions.

use super::{Expected, GenCase, Rng, pretty, random_formula};
use crate::proof::{
    formula::Formula,
    ndl::rules::Rule,
    report::{ErrorKind, Language},
    sat::{Entailment, entails},
};

const ATOMS: [&str; 5] = ["A", "B", "C", "D", "E"];

#[derive(Debug, Clone)]
enum Node {
    Step {
        tag: usize,
        rule: Rule,
        args: Vec<Formula>,
        concl: Formula,
        /// Formulas that hold where the step stands.
        avail: Vec<Formula>,
    },
    Assume {
        tag: usize,
        hyp: Formula,
        body: Vec<Node>,
        absurd: bool,
        concl: Formula,
    },
}

impl Node {
    fn concl(&self) -> &Formula {
        match self {
            Node::Step { concl, .. } | Node::Assume { concl, .. } => concl,
        }
    }
}

struct Prover<'r> {
    rng: &'r mut Rng,
    next_tag: usize,
    atoms: Vec<&'static str>,
    used_premises: Vec<Formula>,
    premises: Vec<Formula>,
}

impl Prover<'_> {
    fn tag(&mut self) -> usize {
        self.next_tag = self.next_tag.saturating_add(1);
        self.next_tag
    }

    fn note_use(&mut self, args: &[Formula], rule: Rule) {
        for (i, a) in args.iter().enumerate() {
            if rule.must_hold(i) && self.premises.contains(a) && !self.used_premises.contains(a) {
                self.used_premises.push(a.clone());
            }
        }
    }

    /// Rule applications available on `facts`.
    fn moves(&mut self, facts: &[Formula]) -> Vec<(Rule, Vec<Formula>)> {
        let mut out = Vec::new();
        let holds = |f: &Formula| facts.contains(f);
        for f in facts {
            match f {
                Formula::And(..) => {
                    out.push((Rule::LeftAnd, vec![f.clone()]));
                    out.push((Rule::RightAnd, vec![f.clone()]));
                }
                Formula::Implies(p, q) => {
                    if holds(p) {
                        out.push((Rule::Mp, vec![f.clone(), (**p).clone()]));
                    }
                    if let Some(c) = facts.iter().find(|c| c.complements(q)) {
                        out.push((Rule::Mt, vec![f.clone(), c.clone()]));
                    }
                }
                Formula::Or(p, q) => {
                    if let Some(c) = facts.iter().find(|c| c.complements(p) || c.complements(q)) {
                        out.push((Rule::Dsyl, vec![f.clone(), c.clone()]));
                    }
                }
                Formula::Iff(..) => {
                    out.push((Rule::LeftIff, vec![f.clone()]));
                    out.push((Rule::RightIff, vec![f.clone()]));
                }
                Formula::Not(inner) => match &**inner {
                    Formula::Not(_) => out.push((Rule::Dn, vec![f.clone()])),
                    Formula::And(..) | Formula::Or(..) => out.push((Rule::Dm, vec![f.clone()])),
                    Formula::Implies(..) => out.push((Rule::NegCond, vec![f.clone()])),
                    _ => {}
                },
                _ => {}
            }
        }
        for f in facts {
            if let Some(c) = facts.iter().find(|c| c.complements(f)) {
                out.push((Rule::Absurd, vec![f.clone(), c.clone()]));
            }
        }
        if facts.len() >= 2 && self.rng.chance(1, 3) {
            let a = self.rng.pick(facts).cloned();
            let b = self.rng.pick(facts).cloned();
            if let (Some(a), Some(b)) = (a, b)
                && a != b
            {
                out.push((Rule::Both, vec![a, b]));
            }
        }
        if self.rng.chance(1, 4)
            && let Some(a) = self.rng.pick(facts).cloned()
        {
            let other = Formula::atom(self.rng.pick(&self.atoms).copied().unwrap_or("A"));
            let rule = if self.rng.chance(1, 2) {
                Rule::LeftEither
            } else {
                Rule::RightEither
            };
            let args = if rule == Rule::LeftEither {
                vec![a, other]
            } else {
                vec![other, a]
            };
            out.push((rule, args));
        }
        out
    }

    fn step(&mut self, facts: &[Formula]) -> Option<Node> {
        let mut moves = self.moves(facts);
        // prefer moves that derive something new and small
        moves.retain(|(r, args)| {
            r.apply(args, facts.contains(&Formula::False))
                .is_ok_and(|c| !facts.contains(&c) && c.measure().0 <= 15)
        });
        let i = self.rng.below(moves.len());
        if moves.is_empty() {
            return None;
        }
        let (rule, args) = moves.swap_remove(i);
        let concl = rule.apply(&args, facts.contains(&Formula::False)).ok()?;
        self.note_use(&args, rule);
        Some(Node::Step {
            tag: self.tag(),
            rule,
            args,
            concl,
            avail: facts.to_vec(),
        })
    }

    /// A conditional proof, sometimes a proof by contradiction.
    fn assume(&mut self, facts: &[Formula], depth: usize, ndl_f: bool) -> Option<Vec<Node>> {
        // by contradiction: (p ==> q) and q' hold, p does not: assume p, derive false
        let targets: Vec<(Formula, Formula, Formula)> = facts
            .iter()
            .filter_map(|f| match f {
                Formula::Implies(p, q) if !facts.contains(p) => facts
                    .iter()
                    .find(|c| c.complements(q))
                    .map(|c| ((**p).clone(), (**q).clone(), c.clone())),
                _ => None,
            })
            .collect();
        if !targets.is_empty() && self.rng.chance(1, 2) {
            let (p, q, c) = targets.get(self.rng.below(targets.len()))?.clone();
            let cond = Formula::implies(p.clone(), q.clone());
            let mut inner = facts.to_vec();
            inner.push(p.clone());
            self.note_use(&[cond.clone(), c.clone()], Rule::Mp);
            let mp = Node::Step {
                tag: self.tag(),
                rule: Rule::Mp,
                args: vec![cond, p.clone()],
                concl: q.clone(),
                avail: inner.clone(),
            };
            inner.push(q.clone());
            let absurd = Node::Step {
                tag: self.tag(),
                rule: Rule::Absurd,
                args: vec![q, c],
                concl: Formula::False,
                avail: inner,
            };
            let use_sa = !ndl_f && self.rng.chance(1, 2);
            let block = Node::Assume {
                tag: self.tag(),
                hyp: p.clone(),
                body: vec![mp, absurd],
                absurd: use_sa,
                concl: if use_sa {
                    Formula::negate(p.clone())
                } else {
                    Formula::implies(p.clone(), Formula::False)
                },
            };
            if use_sa {
                return Some(vec![block]);
            }
            let mut after = facts.to_vec();
            after.push(Formula::implies(p.clone(), Formula::False));
            let target = p.complement();
            let bc = Node::Step {
                tag: self.tag(),
                rule: Rule::ByContradiction,
                args: vec![target.clone(), Formula::implies(p, Formula::False)],
                concl: target,
                avail: after,
            };
            return Some(vec![block, bc]);
        }
        // plain conditional proof
        let candidates: Vec<Formula> = facts
            .iter()
            .filter_map(|f| match f {
                Formula::Implies(p, _) if !facts.contains(p) => Some((**p).clone()),
                Formula::Or(p, _) if !facts.contains(p) => Some((**p).clone()),
                _ => None,
            })
            .collect();
        let hyp = match self.rng.pick(&candidates) {
            Some(h) => h.clone(),
            None => random_formula(self.rng, &ATOMS[..3], 1, false),
        };
        let mut inner = facts.to_vec();
        inner.push(hyp.clone());
        let n = 1usize.saturating_add(self.rng.below(3));
        let body = self.forward(&inner, n, depth.saturating_add(1), ndl_f);
        let last = body.last()?.concl().clone();
        Some(vec![Node::Assume {
            tag: self.tag(),
            hyp: hyp.clone(),
            body,
            absurd: false,
            concl: Formula::implies(hyp, last),
        }])
    }

    fn forward(&mut self, facts: &[Formula], n: usize, depth: usize, ndl_f: bool) -> Vec<Node> {
        let mut facts = facts.to_vec();
        let mut out = Vec::new();
        for _ in 0..n {
            let nodes = if depth < 2 && self.rng.chance(1, 4) {
                self.assume(&facts, depth, ndl_f)
            } else {
                self.step(&facts).map(|s| vec![s])
            };
            let Some(nodes) = nodes else { continue };
            for node in nodes {
                facts.push(node.concl().clone());
                out.push(node);
            }
        }
        out
    }
}

fn distinct(fs: &[Formula]) -> bool {
    fs.iter()
        .enumerate()
        .all(|(i, f)| fs.iter().skip(i.saturating_add(1)).all(|g| g != f))
}

/// ProofGrid's constraints on a problem (appendix B.1).
pub(crate) fn good_problem(premises: &[Formula], goal: &Formula) -> bool {
    let mut all = premises.to_vec();
    all.push(goal.clone());
    if !distinct(&all) {
        return false;
    }
    let refs: Vec<&Formula> = premises.iter().collect();
    if entails(&refs, goal) != Entailment::Valid {
        return false;
    }
    for i in 0..premises.len() {
        let rest: Vec<&Formula> = premises
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, f)| f)
            .collect();
        if entails(&rest, goal) == Entailment::Valid {
            return false;
        }
    }
    let mut patoms = Vec::new();
    for p in premises {
        p.atoms_into(&mut patoms);
    }
    let mut gatoms = Vec::new();
    goal.atoms_into(&mut gatoms);
    if !gatoms.iter().all(|a| patoms.contains(a)) {
        return false;
    }
    matches!(entails(&refs, &Formula::False), Entailment::Countermodel(_))
        && matches!(entails(&[], goal), Entailment::Countermodel(_))
}

// ---------------------------------------------------------------------------------------
// Rendering

#[derive(Debug, Clone, Copy)]
struct Style {
    ndl_f: bool,
    annotate: bool,
    names: bool,
    premise_names: bool,
    pretty: bool,
    comments: bool,
}

#[derive(Debug, Clone, Default)]
struct Placed {
    /// tag -> (plan index, line); for assume blocks, the opening.
    at: Vec<(usize, usize, usize)>,
    /// tag -> (plan index, line) of closing steps.
    close_at: Vec<(usize, usize, usize)>,
}

struct Renderer<'a> {
    style: Style,
    premises: &'a [Formula],
    lines: Vec<String>,
    index: usize,
    placed: Placed,
    /// Named results in scope: (formula, name).
    names: Vec<(Formula, String)>,
    next_name: usize,
    /// Lines whose text a corruption breaks: tag of the step.
    rng: Rng,
}

impl Renderer<'_> {
    fn show(&self, f: &Formula) -> String {
        if self.style.pretty {
            pretty(f)
        } else {
            f.to_string()
        }
    }

    fn arg(&mut self, f: &Formula) -> String {
        if self.style.premise_names
            && let Some(i) = self.premises.iter().position(|p| p == f)
            && self.rng.chance(2, 3)
        {
            return format!("premise-{}", i.saturating_add(1));
        }
        if self.style.names
            && let Some((_, n)) = self.names.iter().rev().find(|(g, _)| g == f)
            && self.rng.chance(2, 3)
        {
            return n.clone();
        }
        self.show(f)
    }

    fn line_no(&self) -> usize {
        self.lines.len().saturating_add(1)
    }

    fn nodes(&mut self, nodes: &[Node], indent: usize) {
        let pad = " ".repeat(indent);
        let mark = self.names.len();
        for (i, node) in nodes.iter().enumerate() {
            let last = i.saturating_add(1) == nodes.len();
            let semi = if last { "" } else { ";" };
            match node {
                Node::Step {
                    tag,
                    rule,
                    args,
                    concl,
                    ..
                } => {
                    if self.style.comments && self.rng.chance(1, 5) {
                        self.lines
                            .push(format!("{pad}# next we use {}", rule.name()));
                    }
                    let name = if self.style.names && !last && self.rng.chance(1, 3) {
                        self.next_name = self.next_name.saturating_add(1);
                        Some(format!("s{}", self.next_name))
                    } else {
                        None
                    };
                    let text = if self.style.ndl_f {
                        let justs: Vec<String> = args
                            .iter()
                            .enumerate()
                            .filter(|(k, _)| rule.must_hold(*k))
                            .map(|(_, a)| a.clone())
                            .collect::<Vec<_>>()
                            .iter()
                            .map(|a| self.arg(a))
                            .collect();
                        let justs = if justs.is_empty() {
                            vec![self.arg(&args.first().cloned().unwrap_or(Formula::True))]
                        } else {
                            justs
                        };
                        format!("{} from {}", self.show(concl), justs.join(", "))
                    } else {
                        let shown: Vec<String> = args.iter().map(|a| self.arg(a)).collect();
                        if self.style.annotate || self.rng.chance(1, 6) {
                            format!(
                                "{} BY {} on {}",
                                self.show(concl),
                                rule.name(),
                                shown.join(", ")
                            )
                        } else {
                            format!("{} on {}", rule.name(), shown.join(", "))
                        }
                    };
                    let prefix = name.as_ref().map_or(String::new(), |n| format!("{n} := "));
                    self.placed.at.push((*tag, self.index, self.line_no()));
                    self.index = self.index.saturating_add(1);
                    self.lines.push(format!("{pad}{prefix}{text}{semi}"));
                    if let Some(n) = name {
                        self.names.push((concl.clone(), n));
                    }
                }
                Node::Assume {
                    tag,
                    hyp,
                    body,
                    absurd,
                    ..
                } => {
                    let kw = if *absurd { "suppose-absurd" } else { "assume" };
                    self.placed.at.push((*tag, self.index, self.line_no()));
                    self.index = self.index.saturating_add(1);
                    let hyp_text = self.show(hyp);
                    self.lines.push(format!("{pad}{kw} {hyp_text} {{"));
                    self.nodes(body, indent.saturating_add(2));
                    self.placed
                        .close_at
                        .push((*tag, self.index, self.line_no()));
                    self.index = self.index.saturating_add(1);
                    self.lines.push(format!("{pad}}}{semi}"));
                }
            }
        }
        self.names.truncate(mark);
    }
}

fn render(nodes: &[Node], premises: &[Formula], style: Style, seed: u64) -> (String, Placed) {
    let mut r = Renderer {
        style,
        premises,
        lines: Vec::new(),
        index: 0,
        placed: Placed::default(),
        names: Vec::new(),
        next_name: 0,
        rng: Rng::new(seed),
    };
    r.lines.push("{".into());
    r.nodes(nodes, 2);
    r.lines.push("}".into());
    (r.lines.join("\n"), r.placed)
}

fn problem_text(premises: &[Formula], goal: &Formula, ndl_f: bool, rng: &mut Rng) -> String {
    let mut s = String::new();
    if ndl_f && rng.chance(1, 2) {
        s.push_str("Write the proof in NDL_f.\n");
    }
    for (i, p) in premises.iter().enumerate() {
        let shown = if rng.chance(1, 2) {
            pretty(p)
        } else {
            p.to_string()
        };
        s.push_str(&format!(
            "assert premise-{} := {shown}\n",
            i.saturating_add(1)
        ));
    }
    s.push_str(&format!("\nDerive: {}\n", pretty(goal)));
    s
}

// ---------------------------------------------------------------------------------------
// Corruptions

fn walk_mut(nodes: &mut [Node], f: &mut dyn FnMut(&mut Node) -> bool) -> bool {
    for n in nodes.iter_mut() {
        if f(n) {
            return true;
        }
        if let Node::Assume { body, .. } = n
            && walk_mut(body, f)
        {
            return true;
        }
    }
    false
}

fn steps_of(nodes: &[Node], out: &mut Vec<Node>) {
    for n in nodes {
        out.push(n.clone());
        if let Node::Assume { body, .. } = n {
            steps_of(body, out);
        }
    }
}

fn place(placed: &Placed, tag: usize) -> Option<(usize, usize)> {
    placed
        .at
        .iter()
        .find(|(t, _, _)| *t == tag)
        .map(|(_, i, l)| (*i, *l))
}

/// The first step whose holding arguments are not available, walking the tree as the
/// checker's assumption bases do (no names are rendered for this check).
fn first_unavailable(nodes: &[Node], facts: &mut Vec<Formula>, ndl_f: bool) -> Option<usize> {
    let mark = facts.len();
    for n in nodes {
        match n {
            Node::Step {
                tag,
                rule,
                args,
                concl,
                ..
            } => {
                let missing = args.iter().enumerate().any(|(i, a)| {
                    (ndl_f || rule.must_hold(i)) && rule.must_hold(i) && !facts.contains(a)
                });
                if missing {
                    return Some(*tag);
                }
                facts.push(concl.clone());
            }
            Node::Assume {
                hyp, body, concl, ..
            } => {
                let m = facts.len();
                facts.push(hyp.clone());
                let r = first_unavailable(body, facts, ndl_f);
                facts.truncate(m);
                if r.is_some() {
                    return r;
                }
                facts.push(concl.clone());
            }
        }
    }
    facts.truncate(mark);
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corruption {
    WrongCount,
    WrongForm,
    Removed,
    Swapped,
    OutOfScope,
    OutOfScopeName,
    Broken,
    NotEntailed,
    TooMany,
}

/// A correct proof and its corruptions.
pub(super) fn cases(rng: &mut Rng, ndl_f: bool) -> Vec<GenCase> {
    let language = if ndl_f { Language::NdlF } else { Language::Ndl };
    let n_atoms = 3usize.saturating_add(rng.below(3));
    let atoms: Vec<&'static str> = ATOMS.iter().copied().take(n_atoms).collect();
    let n_prem = 2usize.saturating_add(rng.below(3));
    let premises: Vec<Formula> = (0..n_prem)
        .map(|_| random_formula(rng, &atoms, 2, false))
        .collect();
    let mut prover = Prover {
        rng,
        next_tag: 0,
        atoms: atoms.clone(),
        used_premises: Vec::new(),
        premises: premises.clone(),
    };
    let len = 3usize.saturating_add(prover.rng.below(6));
    let nodes = prover.forward(&premises, len, 0, ndl_f);
    let used = prover.used_premises.clone();
    let Some(goal) = nodes.last().map(|n| n.concl().clone()) else {
        return Vec::new();
    };
    if nodes.len() < 2 || goal == Formula::False {
        return Vec::new();
    }
    // keep the premises the proof uses, in their order
    let dropped: Vec<Formula> = premises
        .iter()
        .filter(|p| !used.contains(p))
        .cloned()
        .collect();
    let premises: Vec<Formula> = premises.into_iter().filter(|p| used.contains(p)).collect();
    let mut nodes = nodes;
    walk_mut(&mut nodes, &mut |n| {
        if let Node::Step { avail, .. } = n {
            avail.retain(|f| !dropped.contains(f));
        }
        false
    });
    if !good_problem(&premises, &goal) {
        return Vec::new();
    }
    let style = Style {
        ndl_f,
        annotate: rng.chance(4, 5),
        names: rng.chance(1, 2),
        premise_names: rng.chance(2, 3),
        pretty: rng.chance(1, 2),
        comments: rng.chance(1, 2),
    };
    let problem = problem_text(&premises, &goal, ndl_f, rng);
    let seed = rng.next_u64();
    let (proof, _) = render(&nodes, &premises, style, seed);
    let wrap = |rng: &mut Rng, p: String| -> String {
        match rng.below(4) {
            0 => format!("Here is the proof.\n\n```\n{p}\n```\n\nThe proof is complete."),
            1 => format!("Proof:\n{p}\nQED."),
            _ => p,
        }
    };
    let mut out = vec![GenCase {
        language,
        origin: "correct".into(),
        problem: problem.clone(),
        proof: wrap(rng, proof),
        expected: Expected::Pass,
    }];
    let all = [
        Corruption::WrongCount,
        Corruption::WrongForm,
        Corruption::Removed,
        Corruption::Swapped,
        Corruption::OutOfScope,
        Corruption::OutOfScopeName,
        Corruption::Broken,
        Corruption::NotEntailed,
        Corruption::TooMany,
    ];
    for c in all {
        if ndl_f
            && matches!(
                c,
                Corruption::WrongForm | Corruption::Swapped | Corruption::WrongCount
            )
        {
            continue;
        }
        if !ndl_f && matches!(c, Corruption::NotEntailed | Corruption::TooMany) {
            continue;
        }
        if let Some(case) = corrupt(rng, c, &nodes, &premises, &problem, style, language) {
            out.push(case);
        }
    }
    out
}

fn plain(style: Style) -> Style {
    Style {
        names: false,
        ..style
    }
}

fn corrupt(
    rng: &mut Rng,
    c: Corruption,
    nodes: &[Node],
    premises: &[Formula],
    problem: &str,
    style: Style,
    language: Language,
) -> Option<GenCase> {
    let mut nodes = nodes.to_vec();
    let mut flat = Vec::new();
    steps_of(&nodes, &mut flat);
    let step_tags: Vec<usize> = flat
        .iter()
        .filter_map(|n| match n {
            Node::Step { tag, .. } => Some(*tag),
            Node::Assume { .. } => None,
        })
        .collect();
    let target = *rng.pick(&step_tags)?;
    let seed = rng.next_u64();
    let (kind, style, tag, close) = match c {
        Corruption::WrongCount => {
            walk_mut(&mut nodes, &mut |n| match n {
                Node::Step {
                    tag, args, avail, ..
                } if *tag == target => {
                    if args.len() > 1 && avail.len() > 100 {
                        args.pop();
                    } else {
                        let extra = avail.first().cloned().unwrap_or(Formula::True);
                        args.push(extra);
                    }
                    true
                }
                _ => false,
            });
            (ErrorKind::Type, style, target, false)
        }
        Corruption::WrongForm => {
            let mut done = false;
            walk_mut(&mut nodes, &mut |n| match n {
                Node::Step {
                    tag,
                    rule,
                    args,
                    avail,
                    ..
                } if *tag == target => {
                    for i in 0..args.len() {
                        if !rule.must_hold(i) {
                            continue;
                        }
                        for f in avail.iter() {
                            let mut trial = args.clone();
                            if let Some(slot) = trial.get_mut(i) {
                                *slot = f.clone();
                            }
                            if let Err(crate::proof::report::Stop::Fault(fault)) =
                                rule.apply(&trial, avail.contains(&Formula::False))
                                && fault.kind == ErrorKind::Type
                            {
                                *args = trial;
                                done = true;
                                return true;
                            }
                        }
                    }
                    true
                }
                _ => false,
            });
            if !done {
                return None;
            }
            (ErrorKind::Type, style, target, false)
        }
        Corruption::Swapped => {
            let mut done = false;
            walk_mut(&mut nodes, &mut |n| match n {
                Node::Step {
                    tag,
                    rule,
                    args,
                    concl,
                    ..
                } if *tag == target => {
                    let swapped = match rule {
                        Rule::LeftAnd => Some(Rule::RightAnd),
                        Rule::RightAnd => Some(Rule::LeftAnd),
                        Rule::LeftIff => Some(Rule::RightIff),
                        Rule::RightIff => Some(Rule::LeftIff),
                        _ => None,
                    };
                    if let Some(s) = swapped
                        && s.apply(args, false).is_ok_and(|c| c != *concl)
                    {
                        *rule = s;
                        done = true;
                    }
                    true
                }
                _ => false,
            });
            if !done || !style.annotate {
                return None;
            }
            (ErrorKind::Logic, style, target, false)
        }
        Corruption::Removed => {
            // remove a step that is not last in its block, then find the first step that
            // lost an argument
            fn remove(nodes: &mut Vec<Node>, target: usize) -> bool {
                let len = nodes.len();
                if let Some(i) = nodes
                    .iter()
                    .position(|n| matches!(n, Node::Step { tag, .. } if *tag == target))
                {
                    if i.saturating_add(1) < len {
                        nodes.remove(i);
                        return true;
                    }
                    return false;
                }
                for n in nodes.iter_mut() {
                    if let Node::Assume { body, .. } = n
                        && remove(body, target)
                    {
                        return true;
                    }
                }
                false
            }
            if !remove(&mut nodes, target) {
                return None;
            }
            let mut facts = premises.to_vec();
            let failing = first_unavailable(&nodes, &mut facts, language == Language::NdlF)?;
            (ErrorKind::Logic, plain(style), failing, false)
        }
        Corruption::OutOfScope | Corruption::OutOfScopeName => {
            // a result derived inside a closed block, cited after it
            fn insert(
                nodes: &mut Vec<Node>,
                premises: &[Formula],
                new_tag: usize,
            ) -> Option<Formula> {
                let len = nodes.len();
                for i in 0..len {
                    let found = match nodes.get(i) {
                        Some(Node::Assume { body, .. }) if i.saturating_add(1) < len => body
                            .iter()
                            .filter_map(|b| match b {
                                Node::Step { concl, .. } => Some(concl.clone()),
                                Node::Assume { .. } => None,
                            })
                            .find(|c| !premises.contains(c) && *c != Formula::False),
                        _ => None,
                    };
                    if let Some(r) = found {
                        let before: Vec<Formula> = nodes
                            .iter()
                            .take(i.saturating_add(1))
                            .map(|n| n.concl().clone())
                            .collect();
                        if before.contains(&r) {
                            continue;
                        }
                        nodes.insert(
                            i.saturating_add(1),
                            Node::Step {
                                tag: new_tag,
                                rule: Rule::Claim,
                                args: vec![r.clone()],
                                concl: r.clone(),
                                avail: Vec::new(),
                            },
                        );
                        return Some(r);
                    }
                }
                None
            }
            let new_tag = 1_000_000;
            let r = insert(&mut nodes, premises, new_tag)?;
            if c == Corruption::OutOfScopeName {
                // render the inner step with a name, cite the name outside
                let (text, placed) = render(&nodes, premises, plain(style), seed);
                let inner_line = text.lines().position(|l| {
                    let t = l.trim_start();
                    !t.starts_with('#')
                        && l.starts_with("    ")
                        && t.starts_with(
                            &(if style.pretty {
                                pretty(&r)
                            } else {
                                r.to_string()
                            }),
                        )
                })?;
                let (idx, line) = place(&placed, new_tag)?;
                let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                let inner = lines.get_mut(inner_line)?;
                let indent = inner.len().saturating_sub(inner.trim_start().len());
                *inner = format!("{}lemma-out := {}", " ".repeat(indent), inner.trim_start());
                let outer = lines.get_mut(line.saturating_sub(1))?;
                let indent = outer.len().saturating_sub(outer.trim_start().len());
                let semi = if outer.ends_with(';') { ";" } else { "" };
                *outer = if style.ndl_f {
                    format!("{}{} from lemma-out{semi}", " ".repeat(indent), pretty(&r))
                } else {
                    format!("{}claim on lemma-out{semi}", " ".repeat(indent))
                };
                return Some(GenCase {
                    language,
                    origin: "out-of-scope name".into(),
                    problem: problem.to_string(),
                    proof: lines.join("\n"),
                    expected: Expected::Fail {
                        kind: ErrorKind::Syntax,
                        step: Some(idx),
                        line,
                    },
                });
            }
            (ErrorKind::Logic, plain(style), new_tag, false)
        }
        Corruption::Broken => {
            let (text, placed) = render(&nodes, premises, style, seed);
            let (_, line) = place(&placed, target)?;
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let l = lines.get_mut(line.saturating_sub(1))?;
            let broken = if style.ndl_f {
                l.replacen(" from ", " fron ", 1)
            } else if l.contains(" on ") {
                l.replacen(" on ", " onn ", 1)
            } else {
                return None;
            };
            *l = broken;
            return Some(GenCase {
                language,
                origin: "broken syntax".into(),
                problem: problem.to_string(),
                proof: lines.join("\n"),
                expected: Expected::Fail {
                    kind: ErrorKind::Syntax,
                    step: None,
                    line,
                },
            });
        }
        Corruption::NotEntailed => {
            let mut done = false;
            let atoms = ["A", "B", "C"];
            let wrong = random_formula(rng, &atoms, 1, false);
            walk_mut(&mut nodes, &mut |n| match n {
                Node::Step {
                    tag,
                    rule,
                    args,
                    concl,
                    ..
                } if *tag == target => {
                    let justs: Vec<&Formula> = args
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| rule.must_hold(*k))
                        .map(|(_, a)| a)
                        .collect();
                    if !justs.is_empty()
                        && matches!(entails(&justs, &wrong), Entailment::Countermodel(_))
                    {
                        *concl = wrong.clone();
                        done = true;
                    }
                    true
                }
                _ => false,
            });
            if !done {
                return None;
            }
            (ErrorKind::Logic, style, target, false)
        }
        Corruption::TooMany => {
            walk_mut(&mut nodes, &mut |n| match n {
                Node::Step {
                    tag,
                    rule,
                    args,
                    avail,
                    ..
                } if *tag == target => {
                    // every argument becomes a justifier: pad to six with facts that hold
                    *rule = Rule::Claim;
                    let mut k = 0usize;
                    while args.len() < 6 {
                        args.push(avail.get(k).cloned().unwrap_or(Formula::True));
                        k = k.saturating_add(1);
                    }
                    true
                }
                _ => false,
            });
            (ErrorKind::Type, style, target, false)
        }
    };
    let (text, placed) = render(&nodes, premises, style, seed);
    let (step, line) = if close {
        placed
            .close_at
            .iter()
            .find(|(t, _, _)| *t == tag)
            .map(|(_, i, l)| (*i, *l))?
    } else {
        place(&placed, tag)?
    };
    Some(GenCase {
        language,
        origin: format!("{c:?}"),
        problem: problem.to_string(),
        proof: text,
        expected: Expected::Fail {
            kind,
            step: Some(step),
            line,
        },
    })
}
