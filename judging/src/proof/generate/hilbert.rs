//! Hilbert-style problems with proofs built from proof templates (identity, weakening,
//! hypothetical syllogism chains, modus ponens chains), and their corruptions.

use super::{Expected, GenCase, Rng, random_formula};
use crate::proof::{
    formula::Formula,
    report::{ErrorKind, Language},
};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Just {
    Premise(usize),
    Axiom(u8, Vec<(&'static str, Formula)>),
    Mp(Vec<usize>),
}

#[derive(Debug, Clone)]
struct Line {
    f: Formula,
    just: Just,
}

fn imp(p: &Formula, q: &Formula) -> Formula {
    Formula::implies(p.clone(), q.clone())
}

struct Builder {
    lines: Vec<Line>,
}

impl Builder {
    fn push(&mut self, f: Formula, just: Just) -> usize {
        self.lines.push(Line { f, just });
        self.lines.len().saturating_sub(1)
    }

    /// From lines `i: (x ==> y)` and `j: (y ==> z)`, derive `(x ==> z)`.
    fn syllogism(&mut self, i: usize, j: usize, x: &Formula, y: &Formula, z: &Formula) -> usize {
        let yz = imp(y, z);
        let a = self.push(
            imp(&yz, &imp(x, &yz)),
            Just::Axiom(1, vec![("p", yz.clone()), ("q", x.clone())]),
        );
        let b = self.push(imp(x, &yz), Just::Mp(vec![a, j]));
        let c = self.push(
            imp(&imp(x, &yz), &imp(&imp(x, y), &imp(x, z))),
            Just::Axiom(
                2,
                vec![("p", x.clone()), ("q", y.clone()), ("r", z.clone())],
            ),
        );
        let d = self.push(imp(&imp(x, y), &imp(x, z)), Just::Mp(vec![c, b]));
        self.push(imp(x, z), Just::Mp(vec![d, i]))
    }

    fn identity(&mut self, x: &Formula) {
        let xx = imp(x, x);
        let a = self.push(
            imp(x, &imp(&xx, x)),
            Just::Axiom(1, vec![("p", x.clone()), ("q", xx.clone())]),
        );
        let b = self.push(
            imp(&imp(x, &imp(&xx, x)), &imp(&imp(x, &xx), &xx)),
            Just::Axiom(
                2,
                vec![("p", x.clone()), ("q", xx.clone()), ("r", x.clone())],
            ),
        );
        let c = self.push(imp(&imp(x, &xx), &xx), Just::Mp(vec![b, a]));
        let d = self.push(
            imp(x, &xx),
            Just::Axiom(1, vec![("p", x.clone()), ("q", x.clone())]),
        );
        self.push(xx, Just::Mp(vec![c, d]));
    }
}

fn distinct_formulas(rng: &mut Rng, n: usize) -> Vec<Formula> {
    let atoms = ["A", "B", "C", "D", "E", "F", "G"];
    let mut out: Vec<Formula> = Vec::new();
    let mut tries = 0usize;
    while out.len() < n && tries < 1000 {
        tries = tries.saturating_add(1);
        let f = random_formula(rng, &atoms, 1, true);
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

fn render(lines: &[Line], start: usize, premises: &[Formula]) -> Vec<String> {
    let _ = premises;
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let n = i.saturating_add(start);
            let just = match &l.just {
                Just::Premise(k) => format!("Premise{}", k.saturating_add(1)),
                Just::Axiom(a, subst) => {
                    let s: Vec<String> = subst.iter().map(|(v, f)| format!("{v} := {f}")).collect();
                    format!("Axiom{a}, {}", s.join(", "))
                }
                Just::Mp(c) => {
                    let s: Vec<String> = c
                        .iter()
                        .map(|k| k.saturating_add(start).to_string())
                        .collect();
                    format!("mp, {}", s.join(", "))
                }
            };
            format!("{n}. {}, {just};", l.f)
        })
        .collect()
}

fn problem_text(premises: &[Formula], goal: &Formula) -> String {
    let mut s = String::from("Write a Hilbert-style proof.\nPremises:\n");
    for (i, p) in premises.iter().enumerate() {
        s.push_str(&format!("Premise{} := {p}\n", i.saturating_add(1)));
    }
    s.push_str(&format!("Goal: {goal}\n"));
    s
}

/// A correct proof and its corruptions.
pub(super) fn cases(rng: &mut Rng) -> Vec<GenCase> {
    let mut b = Builder { lines: Vec::new() };
    let mut premises = Vec::new();
    match rng.below(4) {
        0 => {
            let xs = distinct_formulas(rng, 1);
            let x = xs.first().cloned().unwrap_or_else(|| Formula::atom("A"));
            b.identity(&x);
        }
        1 => {
            let xs = distinct_formulas(rng, 2);
            let (Some(p), Some(q)) = (xs.first(), xs.get(1)) else {
                return Vec::new();
            };
            premises.push(p.clone());
            let i = b.push(p.clone(), Just::Premise(0));
            let a = b.push(
                imp(p, &imp(q, p)),
                Just::Axiom(1, vec![("p", p.clone()), ("q", q.clone())]),
            );
            b.push(imp(q, p), Just::Mp(vec![a, i]));
        }
        2 => {
            let k = 2usize.saturating_add(rng.below(5));
            let xs = distinct_formulas(rng, k.saturating_add(1));
            if xs.len() <= k {
                return Vec::new();
            }
            let lines: Vec<usize> = (0..k)
                .filter_map(|t| {
                    let f = imp(xs.get(t)?, xs.get(t.saturating_add(1))?);
                    premises.push(f.clone());
                    Some(b.push(f, Just::Premise(t)))
                })
                .collect();
            let (Some(&first), Some(x1)) = (lines.first(), xs.first()) else {
                return Vec::new();
            };
            let mut acc = first;
            for t in 1..k {
                let (Some(y), Some(z), Some(&j)) =
                    (xs.get(t), xs.get(t.saturating_add(1)), lines.get(t))
                else {
                    return Vec::new();
                };
                acc = b.syllogism(acc, j, x1, y, z);
            }
        }
        _ => {
            let k = 2usize.saturating_add(rng.below(4));
            let xs = distinct_formulas(rng, k.saturating_add(1));
            if xs.len() <= k {
                return Vec::new();
            }
            let Some(x0) = xs.first() else {
                return Vec::new();
            };
            premises.push(x0.clone());
            let mut acc = b.push(x0.clone(), Just::Premise(0));
            for t in 0..k {
                let (Some(x), Some(y)) = (xs.get(t), xs.get(t.saturating_add(1))) else {
                    return Vec::new();
                };
                premises.push(imp(x, y));
                let pl = b.push(imp(x, y), Just::Premise(t.saturating_add(1)));
                acc = b.push(y.clone(), Just::Mp(vec![pl, acc]));
            }
        }
    }
    let Some(goal) = b.lines.last().map(|l| l.f.clone()) else {
        return Vec::new();
    };
    if premises.contains(&goal) {
        return Vec::new();
    }
    let problem = problem_text(&premises, &goal);
    let start = rng.below(2);
    let mut out = Vec::new();
    let text = render(&b.lines, start, &premises);
    let json = rng.chance(1, 5);
    let show = |lines: &[String]| -> String {
        if json {
            format!("{{\"proof\": \"{}\"}}", lines.join("\\n"))
        } else {
            lines.join("\n")
        }
    };
    out.push(GenCase {
        language: Language::Hilbert,
        origin: "correct".into(),
        problem: problem.clone(),
        proof: show(&text),
        expected: Expected::Pass,
    });
    let fail =
        |origin: &str, kind: ErrorKind, step: Option<usize>, line: usize, lines: &[String]| {
            GenCase {
                language: Language::Hilbert,
                origin: origin.into(),
                problem: problem.clone(),
                proof: show(lines),
                expected: Expected::Fail { kind, step, line },
            }
        };
    let n = b.lines.len();
    // wrong substitution
    let axioms: Vec<usize> = (0..n)
        .filter(|i| matches!(b.lines.get(*i).map(|l| &l.just), Some(Just::Axiom(..))))
        .collect();
    if let Some(&i) = rng.pick(&axioms) {
        let mut lines = b.lines.clone();
        if let Some(Line {
            just: Just::Axiom(_, subst),
            ..
        }) = lines.get_mut(i)
            && let Some((_, v)) = subst.first_mut()
        {
            *v = Formula::negate(v.clone());
            out.push(fail(
                "wrong substitution",
                ErrorKind::Logic,
                Some(i),
                i.saturating_add(1),
                &render(&lines, start, &premises),
            ));
        }
    }
    // wrong mp line
    let mps: Vec<usize> = (0..n)
        .filter(|i| matches!(b.lines.get(*i).map(|l| &l.just), Some(Just::Mp(_))))
        .collect();
    if let Some(&i) = rng.pick(&mps)
        && let Some(Just::Mp(c)) = b.lines.get(i).map(|l| l.just.clone())
        && let [j, k] = c.as_slice()
    {
        let candidates: Vec<usize> = (0..i).filter(|x| x != j).collect();
        if let Some(&j2) = rng.pick(&candidates) {
            let (Some(fj), Some(fk), Some(fi)) = (
                b.lines.get(j2).map(|l| &l.f),
                b.lines.get(*k).map(|l| &l.f),
                b.lines.get(i).map(|l| &l.f),
            ) else {
                return out;
            };
            let kind = match fj {
                Formula::Implies(p, q) if **p == *fk && **q == *fi => None,
                Formula::Implies(p, _) if **p == *fk => Some(ErrorKind::Logic),
                _ => Some(ErrorKind::Type),
            };
            if let Some(kind) = kind {
                let mut lines = b.lines.clone();
                if let Some(l) = lines.get_mut(i) {
                    l.just = Just::Mp(vec![j2, *k]);
                }
                out.push(fail(
                    "wrong mp line",
                    kind,
                    Some(i),
                    i.saturating_add(1),
                    &render(&lines, start, &premises),
                ));
            }
        }
        // wrong count
        let mut lines = b.lines.clone();
        if let Some(l) = lines.get_mut(i) {
            l.just = Just::Mp(vec![*j]);
        }
        out.push(fail(
            "wrong argument count",
            ErrorKind::Type,
            Some(i),
            i.saturating_add(1),
            &render(&lines, start, &premises),
        ));
    }
    // wrong premise
    let prem_lines: Vec<usize> = (0..n)
        .filter(|i| matches!(b.lines.get(*i).map(|l| &l.just), Some(Just::Premise(_))))
        .collect();
    if premises.len() >= 2
        && let Some(&i) = rng.pick(&prem_lines)
        && let Some(Just::Premise(k)) = b.lines.get(i).map(|l| l.just.clone())
    {
        let other = if k == 0 { 1 } else { 0 };
        if premises.get(other) != premises.get(k) {
            let mut lines = b.lines.clone();
            if let Some(l) = lines.get_mut(i) {
                l.just = Just::Premise(other);
            }
            out.push(fail(
                "wrong premise",
                ErrorKind::Logic,
                Some(i),
                i.saturating_add(1),
                &render(&lines, start, &premises),
            ));
        }
    }
    // removed line: the numbering breaks at the next line
    if n >= 3 {
        let i = 1usize.saturating_add(rng.below(n.saturating_sub(2)));
        let mut text2 = text.clone();
        text2.remove(i);
        out.push(fail(
            "removed step",
            ErrorKind::Syntax,
            Some(i),
            i.saturating_add(1),
            &text2,
        ));
    }
    // removed last line: the proof ends short of its goal
    if n >= 2 {
        let mut text2 = text.clone();
        text2.pop();
        out.push(fail(
            "missing conclusion",
            ErrorKind::Logic,
            None,
            0,
            &text2,
        ));
    }
    // broken formula
    let i = rng.below(n);
    let mut text2 = text.clone();
    if let Some(l) = text2.get_mut(i)
        && let Some(pos) = l.find(')')
    {
        l.remove(pos);
        out.push(fail(
            "broken syntax",
            ErrorKind::Syntax,
            None,
            i.saturating_add(1),
            &text2,
        ));
    }
    out
}
