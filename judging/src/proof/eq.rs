//! Equational logic: the rewriting relation over [`Term`]s (`term.rs`) that justifies one
//! step of an equational proof.
//!
//! Variables start with an upper-case letter; function symbols and constants with a
//! lower-case one. A step `s = t by E1, ..., Ek` is valid when `s ==>_E t` or `t ==>_E s`
//! (the symmetric closure the gap-filling prompt defines): `s` has k redexes at pairwise
//! disjoint positions, one per cited identity occurrence, each an instance of that
//! identity's left-hand side, and `t` is `s` with every redex replaced by the matching
//! instance of the right-hand side. The search is bounded.

use std::collections::BTreeMap;

use super::{
    limits::MAX_REWRITE_SEARCH,
    problem::Identity,
    report::{Fault, Stop},
    term::Term,
};

/// Arity of a symbol in the alphabet the equational prompts fix.
fn standard_arity(name: &str) -> Option<usize> {
    let (head, tail) = name.split_at(1.min(name.len()));
    let digits_ok =
        tail.is_empty() || (tail.len() == 1 && matches!(tail, "1" | "2" | "3" | "4" | "5"));
    match head {
        "a" | "b" | "c" | "d" | "e" if tail.is_empty() => Some(0),
        "f" if digits_ok => Some(1),
        "g" if digits_ok => Some(2),
        "h" if digits_ok => Some(3),
        "r" if digits_ok => Some(4),
        _ => None,
    }
}

/// The arities of function symbols: the standard alphabet, then first use.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signature {
    arity: BTreeMap<String, usize>,
}

impl Signature {
    /// Records or checks every symbol of `t`; a mismatch is a type error.
    pub(crate) fn check(&mut self, t: &Term) -> Result<(), Fault> {
        let mut stack = vec![t];
        while let Some(t) = stack.pop() {
            if let Term::App(name, args) = t {
                let expected = standard_arity(name).or_else(|| self.arity.get(name).copied());
                match expected {
                    Some(n) if n != args.len() => {
                        return Err(Fault::typ(
                            "a function symbol is applied to the wrong number of arguments",
                            format!("{name} takes {n} arguments but is given {}", args.len()),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        self.arity.insert(name.clone(), args.len());
                    }
                }
                stack.extend(args.iter());
            }
        }
        Ok(())
    }

    /// The signature fixed by the problem's identities.
    pub(crate) fn of_identities(ids: &[Identity]) -> Result<Signature, Fault> {
        let mut sig = Signature::default();
        for id in ids {
            sig.check(&id.lhs)?;
            sig.check(&id.rhs)?;
        }
        Ok(sig)
    }
}

fn subterm<'t>(t: &'t Term, pos: &[usize]) -> Option<&'t Term> {
    let mut cur = t;
    for &i in pos {
        match cur {
            Term::App(_, args) => cur = args.get(i)?,
            Term::Var(_) => return None,
        }
    }
    Some(cur)
}

fn matches(pattern: &Term, t: &Term, theta: &mut BTreeMap<String, Term>) -> bool {
    match pattern {
        Term::Var(v) => match theta.get(v) {
            Some(bound) => bound == t,
            None => {
                theta.insert(v.clone(), t.clone());
                true
            }
        },
        Term::App(f, pargs) => match t {
            Term::App(g, targs) if f == g && pargs.len() == targs.len() => {
                pargs.iter().zip(targs).all(|(p, a)| matches(p, a, theta))
            }
            _ => false,
        },
    }
}

fn substitute(t: &Term, theta: &BTreeMap<String, Term>) -> Term {
    match t {
        Term::Var(v) => theta.get(v).cloned().unwrap_or_else(|| t.clone()),
        Term::App(f, args) => Term::App(
            f.clone(),
            args.iter().map(|a| substitute(a, theta)).collect(),
        ),
    }
}

/// Positions (0-based child indexes) where `s` and `t` first differ.
fn differences(s: &Term, t: &Term, pos: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match (s, t) {
        (Term::App(f, a), Term::App(g, b)) if f == g && a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                pos.push(i);
                differences(x, y, pos, out);
                pos.pop();
            }
        }
        _ if s == t => {}
        _ => out.push(pos.clone()),
    }
}

fn all_positions(t: &Term, pos: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(pos.clone());
    if let Term::App(_, args) = t {
        for (i, a) in args.iter().enumerate() {
            pos.push(i);
            all_positions(a, pos, out);
            pos.pop();
        }
    }
}

fn is_prefix(p: &[usize], q: &[usize]) -> bool {
    q.starts_with(p)
}

fn disjoint(p: &[usize], q: &[usize]) -> bool {
    !is_prefix(p, q) && !is_prefix(q, p)
}

/// Whether identity `e` rewrites `s` at `pos` into exactly what `t` holds there.
fn rewrites_at(e: &Identity, s: &Term, t: &Term, pos: &[usize]) -> bool {
    let (Some(redex), Some(target)) = (subterm(s, pos), subterm(t, pos)) else {
        return false;
    };
    let mut theta = BTreeMap::new();
    matches(&e.lhs, redex, &mut theta) && substitute(&e.rhs, &theta) == *target
}

struct Search<'a> {
    s: &'a Term,
    t: &'a Term,
    diffs: Vec<Vec<usize>>,
    all: Vec<Vec<usize>>,
    budget: usize,
}

impl Search<'_> {
    fn spend(&mut self) -> Result<(), Stop> {
        self.budget = self.budget.saturating_sub(1);
        if self.budget == 0 {
            return Err(Stop::Undecided(
                "the rewriting search exceeded its budget".into(),
            ));
        }
        Ok(())
    }

    /// Places the unused identities: first covering every difference, then (for identities
    /// left over) at positions where they rewrite a subterm to itself.
    fn place(
        &mut self,
        ids: &[&Identity],
        used: &mut Vec<bool>,
        chosen: &mut Vec<Vec<usize>>,
    ) -> Result<bool, Stop> {
        self.spend()?;
        let uncovered = self
            .diffs
            .iter()
            .find(|d| !chosen.iter().any(|c| is_prefix(c, d)))
            .cloned();
        match uncovered {
            Some(d) => {
                for len in 0..=d.len() {
                    let Some(p) = d.get(..len) else { continue };
                    if !chosen.iter().all(|c| disjoint(c, p)) {
                        continue;
                    }
                    for i in 0..ids.len() {
                        if used.get(i).copied().unwrap_or(true) {
                            continue;
                        }
                        let Some(e) = ids.get(i) else { continue };
                        // identical identities are interchangeable: try the first unused one
                        if ids
                            .iter()
                            .take(i)
                            .enumerate()
                            .any(|(j, x)| x.name == e.name && !used.get(j).copied().unwrap_or(true))
                        {
                            continue;
                        }
                        self.spend()?;
                        if !rewrites_at(e, self.s, self.t, p) {
                            continue;
                        }
                        if let Some(u) = used.get_mut(i) {
                            *u = true;
                        }
                        chosen.push(p.to_vec());
                        if self.place(ids, used, chosen)? {
                            return Ok(true);
                        }
                        chosen.pop();
                        if let Some(u) = used.get_mut(i) {
                            *u = false;
                        }
                    }
                }
                Ok(false)
            }
            None => {
                let Some(i) = used.iter().position(|u| !u) else {
                    return Ok(true);
                };
                let Some(e) = ids.get(i) else {
                    return Ok(false);
                };
                let candidates: Vec<Vec<usize>> = self.all.clone();
                for p in candidates {
                    if !chosen.iter().all(|c| disjoint(c, &p)) {
                        continue;
                    }
                    self.spend()?;
                    if !rewrites_at(e, self.s, self.t, &p) {
                        continue;
                    }
                    if let Some(u) = used.get_mut(i) {
                        *u = true;
                    }
                    chosen.push(p);
                    if self.place(ids, used, chosen)? {
                        return Ok(true);
                    }
                    chosen.pop();
                    if let Some(u) = used.get_mut(i) {
                        *u = false;
                    }
                }
                Ok(false)
            }
        }
    }
}

/// Whether `s ==>_E t` for the cited identities `ids` (a multiset).
fn one_way(s: &Term, t: &Term, ids: &[&Identity]) -> Result<bool, Stop> {
    let mut diffs = Vec::new();
    differences(s, t, &mut Vec::new(), &mut diffs);
    let mut all = Vec::new();
    all_positions(s, &mut Vec::new(), &mut all);
    let mut search = Search {
        s,
        t,
        diffs,
        all,
        budget: MAX_REWRITE_SEARCH,
    };
    let mut used = vec![false; ids.len()];
    search.place(ids, &mut used, &mut Vec::new())
}

/// Checks one equational step from `prev` to `next` by the cited identities.
pub(crate) fn check_rewrite(prev: &Term, next: &Term, ids: &[&Identity]) -> Result<(), Stop> {
    if ids.is_empty() {
        return Err(Fault::syntax(
            "an equational step must cite at least one identity",
            "the step cites no identity",
        )
        .into());
    }
    if one_way(prev, next, ids)? || one_way(next, prev, ids)? {
        return Ok(());
    }
    let names: Vec<&str> = ids.iter().map(|e| e.name.as_str()).collect();
    let mut diffs = Vec::new();
    differences(prev, next, &mut Vec::new(), &mut diffs);
    let where_ = diffs
        .iter()
        .map(|d| {
            let dewey: Vec<String> = d.iter().map(|i| i.saturating_add(1).to_string()).collect();
            format!("[{}]", dewey.join(","))
        })
        .collect::<Vec<_>>()
        .join(", ");
    Err(Fault::logic(
        "the cited identities do not rewrite the previous term into this step's term",
        format!(
            "{prev} does not rewrite to {next} by {} (one redex per cited identity, disjoint positions, either direction); the terms differ at {}",
            names.join(", "),
            if where_.is_empty() { "no position".to_string() } else { where_ }
        ),
    )
    .into())
}

#[cfg(test)]
mod tests {
    use super::{super::term::parse_term, *};

    fn id(name: &str, l: &str, r: &str) -> Identity {
        Identity {
            name: name.into(),
            lhs: parse_term(l).unwrap(),
            rhs: parse_term(r).unwrap(),
        }
    }

    fn step(prev: &str, next: &str, ids: &[&Identity]) -> Result<(), Stop> {
        check_rewrite(&parse_term(prev).unwrap(), &parse_term(next).unwrap(), ids)
    }

    #[test]
    fn prompt_example_steps() {
        let e1 = id("E1", "f(X)", "f(f(X))");
        let e2 = id("E2", "g(X,Y)", "g(Y,X)");
        assert!(step("g(a,f(b))", "g(f(b),a)", &[&e2]).is_ok());
        assert!(step("g(f(b),a)", "g(f(f(b)),a)", &[&e1]).is_ok());
        assert!(step("h(a,g(b,c),f(d))", "h(a,g(c,b),f(f(d)))", &[&e1, &e2]).is_ok());
        // the reverse direction is the symmetric closure
        assert!(step("g(f(f(b)),a)", "g(f(b),a)", &[&e1]).is_ok());
        // one redex per cited identity
        assert!(step("g(f(a),f(b))", "g(f(f(a)),f(f(b)))", &[&e1]).is_err());
        assert!(step("g(f(a),f(b))", "g(f(f(a)),f(f(b)))", &[&e1, &e1]).is_ok());
        // a redundant citation is wrong
        assert!(step("g(a,f(b))", "g(f(b),a)", &[&e2, &e1]).is_err());
    }

    #[test]
    fn wrong_contractum_is_a_logic_error() {
        let e4 = id("E4", "h1(V1246,e,b)", "g4(V1246,a)");
        let Err(Stop::Fault(f)) = step(
            "r(h(a,c,e),f(g3(b,f2(e))),h1(f4(a),e,b),g(a,a))",
            "r(h(a,c,e),f(g3(b,f2(e))),g4(f4(d),a),g(a,a))",
            &[&e4],
        ) else {
            panic!("accepted")
        };
        assert_eq!(f.kind, super::super::report::ErrorKind::Logic);
    }

    #[test]
    fn arity_is_checked() {
        let mut sig = Signature::default();
        assert!(sig.check(&parse_term("g(a,f(b))").unwrap()).is_ok());
        assert!(sig.check(&parse_term("g(a)").unwrap()).is_err());
        assert!(sig.check(&parse_term("k(a)").unwrap()).is_ok());
        assert!(sig.check(&parse_term("k(a,b)").unwrap()).is_err());
    }

    #[test]
    fn deep_terms_are_refused() {
        let deep = format!("{}a{}", "f(".repeat(10_000), ")".repeat(10_000));
        assert!(parse_term(&deep).unwrap_err().over_limit);
    }
}
