//! Equational problems built as ProofGrid built EQ_1: a chain of terms where each term is
//! a small perturbation of the previous one, and the identities induced from the chain.
//! Corruptions: a wrong identity, a wrong rewrite, an extra identity, a removed step, a
//! broken term, a wrong goal.

use super::{Expected, GenCase, Rng};
use crate::proof::{
    eq::check_rewrite,
    problem::Identity,
    report::{ErrorKind, Language},
    term::Term,
};

const CONSTANTS: [&str; 5] = ["a", "b", "c", "d", "e"];

fn symbol(rng: &mut Rng, arity: usize) -> String {
    let base = match arity {
        1 => "f",
        2 => "g",
        3 => "h",
        _ => "r",
    };
    match rng.below(6) {
        0 => base.to_string(),
        k => format!("{base}{k}"),
    }
}

fn random_term(rng: &mut Rng, depth: usize, vars: &[String]) -> Term {
    if depth == 0 || rng.chance(1, 3) {
        if !vars.is_empty() && rng.chance(1, 2) {
            return Term::Var(rng.pick(vars).cloned().unwrap_or_default());
        }
        return Term::App(
            rng.pick(&CONSTANTS).copied().unwrap_or("a").to_string(),
            Vec::new(),
        );
    }
    let arity = 1usize.saturating_add(rng.below(3));
    let args = (0..arity)
        .map(|_| random_term(rng, depth.saturating_sub(1), vars))
        .collect();
    Term::App(symbol(rng, arity), args)
}

fn positions(t: &Term, pos: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if let Term::App(_, args) = t
        && !args.is_empty()
    {
        out.push(pos.clone());
        for (i, a) in args.iter().enumerate() {
            pos.push(i);
            positions(a, pos, out);
            pos.pop();
        }
    }
}

fn get<'t>(t: &'t Term, pos: &[usize]) -> Option<&'t Term> {
    let mut cur = t;
    for &i in pos {
        match cur {
            Term::App(_, args) => cur = args.get(i)?,
            Term::Var(_) => return None,
        }
    }
    Some(cur)
}

fn replace(t: &Term, pos: &[usize], with: &Term) -> Term {
    match (pos.split_first(), t) {
        (None, _) => with.clone(),
        (Some((&i, rest)), Term::App(f, args)) => Term::App(
            f.clone(),
            args.iter()
                .enumerate()
                .map(|(k, a)| {
                    if k == i {
                        replace(a, rest, with)
                    } else {
                        a.clone()
                    }
                })
                .collect(),
        ),
        (Some(_), Term::Var(_)) => t.clone(),
    }
}

fn subst(t: &Term, theta: &[(String, Term)]) -> Term {
    match t {
        Term::Var(v) => theta
            .iter()
            .find(|(w, _)| w == v)
            .map_or_else(|| t.clone(), |(_, s)| s.clone()),
        Term::App(f, args) => Term::App(f.clone(), args.iter().map(|a| subst(a, theta)).collect()),
    }
}

/// Generalizes a redex into a left-hand side: some argument subterms become variables.
fn generalize(rng: &mut Rng, u: &Term, next_var: &mut usize) -> (Term, Vec<(String, Term)>) {
    let mut theta = Vec::new();
    let Term::App(f, args) = u else {
        return (u.clone(), theta);
    };
    let args = args
        .iter()
        .map(|a| {
            if rng.chance(1, 2) {
                *next_var = next_var.saturating_add(1);
                let v = format!("V{next_var}");
                theta.push((v.clone(), a.clone()));
                Term::Var(v)
            } else {
                a.clone()
            }
        })
        .collect();
    (Term::App(f.clone(), args), theta)
}

fn disjoint(p: &[usize], q: &[usize]) -> bool {
    !p.starts_with(q) && !q.starts_with(p)
}

/// A correct proof and its corruptions.
pub(super) fn cases(rng: &mut Rng) -> Vec<GenCase> {
    let mut ids: Vec<Identity> = Vec::new();
    let mut next_var = 0usize;
    let start = random_term(rng, 3, &[]);
    let mut terms = vec![start.clone()];
    let mut cites: Vec<Vec<String>> = Vec::new();
    let n_steps = 3usize.saturating_add(rng.below(5));
    for _ in 0..n_steps {
        let Some(cur) = terms.last().cloned() else {
            break;
        };
        let mut ps = Vec::new();
        positions(&cur, &mut Vec::new(), &mut ps);
        let k = if rng.chance(1, 3) { 2 } else { 1 };
        let mut chosen: Vec<Vec<usize>> = Vec::new();
        for _ in 0..k {
            let options: Vec<&Vec<usize>> = ps
                .iter()
                .filter(|p| chosen.iter().all(|c| disjoint(c, p)))
                .collect();
            if let Some(p) = rng.pick(&options) {
                chosen.push((*p).clone());
            }
        }
        let mut next = cur.clone();
        let mut names = Vec::new();
        for p in &chosen {
            let Some(u) = get(&cur, p) else { continue };
            let (lhs, theta) = generalize(rng, u, &mut next_var);
            let vars: Vec<String> = theta.iter().map(|(v, _)| v.clone()).collect();
            let rhs = random_term(rng, 2, &vars);
            let contractum = subst(&rhs, &theta);
            if contractum == *u {
                continue;
            }
            let name = format!("E{}", ids.len().saturating_add(1));
            ids.push(Identity {
                name: name.clone(),
                lhs,
                rhs,
            });
            next = replace(&next, p, &contractum);
            names.push(name);
        }
        if names.is_empty() || next == cur {
            continue;
        }
        let refs: Vec<&Identity> = names
            .iter()
            .filter_map(|n| ids.iter().find(|e| e.name == *n))
            .collect();
        if check_rewrite(&cur, &next, &refs).is_err() {
            return Vec::new();
        }
        terms.push(next);
        cites.push(names);
    }
    if cites.len() < 2 {
        return Vec::new();
    }
    let Some(end) = terms.last().cloned() else {
        return Vec::new();
    };
    let mut problem = String::from("Equations:\n");
    for e in &ids {
        if rng.chance(1, 3) {
            problem.push_str(&format!(
                "{}: forall {}: {} = {}\n",
                e.name, "X", e.lhs, e.rhs
            ));
        } else {
            problem.push_str(&format!("{}: {} = {}\n", e.name, e.lhs, e.rhs));
        }
    }
    let goal_line = format!("Goal: {start} = {end}\n");
    let with_goal = format!("{problem}{goal_line}");
    let lead = rng.chance(1, 2);
    let render = |terms: &[Term], cites: &[Vec<String>]| -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(s) = terms.first() {
            lines.push(format!("s = {s}    # step 0"));
        }
        for (i, (t, c)) in terms.iter().skip(1).zip(cites).enumerate() {
            let eq = if lead { "  = " } else { "    " };
            lines.push(format!(
                "{eq}{t}    by {}    # step {}",
                c.join(", "),
                i.saturating_add(1)
            ));
        }
        lines
    };
    let text = render(&terms, &cites);
    let mut out = vec![GenCase {
        language: Language::Equational,
        origin: "correct".into(),
        problem: with_goal.clone(),
        proof: text.join("\n"),
        expected: Expected::Pass,
    }];
    let fail = |origin: &str,
                kind: ErrorKind,
                step: Option<usize>,
                line: usize,
                lines: &[String],
                problem: &str| GenCase {
        language: Language::Equational,
        origin: origin.into(),
        problem: problem.to_string(),
        proof: lines.join("\n"),
        expected: Expected::Fail { kind, step, line },
    };
    let n = cites.len();
    let still_valid = |prev: &Term, next: &Term, names: &[String]| -> bool {
        let refs: Vec<&Identity> = names
            .iter()
            .filter_map(|n| ids.iter().find(|e| e.name == *n))
            .collect();
        refs.len() == names.len() && check_rewrite(prev, next, &refs).is_ok()
    };
    // wrong identity
    let i = rng.below(n);
    if let (Some(prev), Some(next), Some(names)) =
        (terms.get(i), terms.get(i.saturating_add(1)), cites.get(i))
    {
        let other = format!("E{}", rng.below(ids.len()).saturating_add(1));
        let mut names2 = names.clone();
        if let Some(first) = names2.first_mut() {
            *first = other;
        }
        if !still_valid(prev, next, &names2) {
            let mut c2 = cites.clone();
            if let Some(slot) = c2.get_mut(i) {
                *slot = names2;
            }
            out.push(fail(
                "wrong identity",
                ErrorKind::Logic,
                Some(i.saturating_add(1)),
                i.saturating_add(2),
                &render(&terms, &c2),
                &with_goal,
            ));
        }
        // extra identity
        let mut names3 = names.clone();
        names3.push(format!("E{}", rng.below(ids.len()).saturating_add(1)));
        if !still_valid(prev, next, &names3) {
            let mut c3 = cites.clone();
            if let Some(slot) = c3.get_mut(i) {
                *slot = names3;
            }
            out.push(fail(
                "extra identity",
                ErrorKind::Logic,
                Some(i.saturating_add(1)),
                i.saturating_add(2),
                &render(&terms, &c3),
                &with_goal,
            ));
        }
        // wrong rewrite: change one constant of the new term
        let mut ps = Vec::new();
        let mut leaves = Vec::new();
        positions(next, &mut Vec::new(), &mut ps);
        for p in &ps {
            if let Some(Term::App(_, args)) = get(next, p) {
                for (k, a) in args.iter().enumerate() {
                    if matches!(a, Term::App(_, x) if x.is_empty()) {
                        let mut q = p.clone();
                        q.push(k);
                        leaves.push(q);
                    }
                }
            }
        }
        if let Some(q) = rng.pick(&leaves) {
            let old = get(next, q).cloned();
            let options: Vec<&str> = CONSTANTS
                .iter()
                .copied()
                .filter(|c| old.as_ref().is_none_or(|o| o.to_string() != *c))
                .collect();
            let c = rng.pick(&options).copied().unwrap_or("a");
            let bad = replace(next, q, &Term::App(c.to_string(), Vec::new()));
            if !still_valid(prev, &bad, names) {
                let mut t2 = terms.clone();
                if let Some(slot) = t2.get_mut(i.saturating_add(1)) {
                    *slot = bad;
                }
                out.push(fail(
                    "wrong rewrite",
                    ErrorKind::Logic,
                    Some(i.saturating_add(1)),
                    i.saturating_add(2),
                    &render(&t2, &cites),
                    &with_goal,
                ));
            }
        }
    }
    // removed step (not the last)
    let i = rng.below(n.saturating_sub(1));
    if let (Some(prev), Some(after), Some(names)) = (
        terms.get(i),
        terms.get(i.saturating_add(2)),
        cites.get(i.saturating_add(1)),
    ) && !still_valid(prev, after, names)
    {
        let mut t2 = terms.clone();
        t2.remove(i.saturating_add(1));
        let mut c2 = cites.clone();
        c2.remove(i);
        out.push(fail(
            "removed step",
            ErrorKind::Logic,
            Some(i.saturating_add(1)),
            i.saturating_add(2),
            &render(&t2, &c2),
            &with_goal,
        ));
    }
    // broken term
    let i = rng.below(n);
    let mut lines = text.clone();
    if let Some(l) = lines.get_mut(i.saturating_add(1))
        && let Some(pos) = l.find(')')
    {
        l.remove(pos);
        out.push(fail(
            "broken syntax",
            ErrorKind::Syntax,
            None,
            i.saturating_add(2),
            &lines,
            &with_goal,
        ));
    }
    // wrong goal
    if let Some(other) = terms.get(n.saturating_sub(1))
        && *other != end
    {
        let wrong_goal = format!("{problem}Goal: {start} = {other}\n");
        out.push(fail(
            "wrong goal",
            ErrorKind::Logic,
            None,
            0,
            &text,
            &wrong_goal,
        ));
    }
    out
}
