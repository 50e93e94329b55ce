//! Reading a problem statement in ProofGrid style: premises, the goal, equational
//! identities, Hilbert axioms, and whether the text names its proof language.
//!
//! Accepted lines (Markdown bullets, bold and back-ticks around them are ignored):
//! `assert premise-1 := φ` or `premise-1 := φ` (NDL / NDL_f), `Premise1 := φ` (Hilbert),
//! `Derive: φ` / `Goal: φ` / `Prove: φ`, `E1: L = R` with an optional `forall X, Y:` or
//! `forall X, Y .` prefix, and `Axiom1: schema` (schema letters p, q, r). Any other line is
//! prose and ignored.

use serde::{Deserialize, Serialize};

use super::{
    formula::{Formula, parse_formula},
    limits::MAX_PROBLEM_BYTES,
    report::{Claim, Language},
    term::{Term, parse_term},
};

/// A named premise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Premise {
    /// The name the problem gives it (`premise-1`, `Premise1`).
    pub name: String,
    /// The formula.
    pub formula: Formula,
}

/// A named equational identity `forall vars: lhs = rhs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Its name (`E1`).
    pub name: String,
    /// Left-hand side.
    pub lhs: Term,
    /// Right-hand side.
    pub rhs: Term,
}

/// A Hilbert axiom schema; its atoms `p`, `q`, `r` are the schema letters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axiom {
    /// Its name as a justification writes it (`Axiom1`).
    pub name: String,
    /// The schema.
    pub schema: Formula,
}

/// How the premises were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum PremiseStyle {
    /// No premise lines.
    None,
    /// `assert name := φ` or `name := φ` with an NDL-style name.
    Ndl,
    /// `PremiseN := φ`.
    Hilbert,
}

/// A problem statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The premises, in order.
    pub premises: Vec<Premise>,
    /// The goal: a formula, or an equation `s = t` for equational problems.
    pub goal: Option<Claim>,
    /// Equational identities.
    pub identities: Vec<Identity>,
    /// Hilbert axioms (the three standard ones when the problem states none).
    pub axioms: Vec<Axiom>,
    /// The language the text names, if it names one.
    pub named_language: Option<Language>,
    pub(crate) style: PremiseStyle,
}

fn clean_line(line: &str) -> String {
    let mut s = line.replace("**", "").replace('`', "");
    loop {
        let t = s.trim_start();
        let stripped = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .or_else(|| t.strip_prefix('#'))
            .or_else(|| t.strip_prefix('>'));
        match stripped {
            Some(rest) => s = rest.to_string(),
            None => return t.trim_end().to_string(),
        }
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

fn is_ident(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '\'')
}

fn is_hilbert_premise_name(word: &str) -> bool {
    word.strip_prefix("Premise")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A lone `=` (not part of `==>`, `<==>` or `:=`).
fn split_equation(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut found = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'=' {
            continue;
        }
        let prev = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
        let next = bytes.get(i.saturating_add(1)).copied();
        if matches!(prev, Some(b'=' | b'<' | b':')) || matches!(next, Some(b'=' | b'>')) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(i);
    }
    let i = found?;
    Some((text.get(..i)?, text.get(i.saturating_add(1)..)?))
}

fn strip_forall(text: &str) -> &str {
    let t = text.trim_start();
    let Some(rest) = strip_prefix_ci(t, "forall") else {
        return t;
    };
    // `forall X, Y: L = R` or `forall X, Y . L = R`
    match rest.find([':', '.']) {
        Some(i) => rest.get(i.saturating_add(1)..).unwrap_or(rest),
        None => rest,
    }
}

fn parse_goal(text: &str) -> Option<Claim> {
    let t = text.trim().trim_end_matches(['.', ':']).trim();
    if t.is_empty() {
        return None;
    }
    if let Some((l, r)) = split_equation(t) {
        let lhs = parse_term(l.trim()).ok()?;
        let rhs = parse_term(r.trim()).ok()?;
        return Some(Claim::Equation(lhs, rhs));
    }
    parse_formula(t).ok().map(Claim::Formula)
}

/// The three axiom schemas of the Hilbert prompt.
pub(crate) fn standard_axioms() -> Vec<Axiom> {
    let p = || Formula::atom("p");
    let q = || Formula::atom("q");
    let r = || Formula::atom("r");
    vec![
        Axiom {
            name: "Axiom1".into(),
            schema: Formula::implies(p(), Formula::implies(q(), p())),
        },
        Axiom {
            name: "Axiom2".into(),
            schema: Formula::implies(
                Formula::implies(p(), Formula::implies(q(), r())),
                Formula::implies(Formula::implies(p(), q()), Formula::implies(p(), r())),
            ),
        },
        Axiom {
            name: "Axiom3".into(),
            schema: Formula::implies(
                Formula::implies(Formula::negate(p()), Formula::negate(q())),
                Formula::implies(Formula::implies(Formula::negate(p()), q()), p()),
            ),
        },
    ]
}

fn named_language(text: &str) -> Option<Language> {
    let lower = text.to_ascii_lowercase();
    if ["ndl_f", "ndlf", "ndl-f", "ndl_{f}"]
        .iter()
        .any(|k| lower.contains(k))
    {
        return Some(Language::NdlF);
    }
    if lower.contains("hilbert") {
        return Some(Language::Hilbert);
    }
    if lower.contains("equational") {
        return Some(Language::Equational);
    }
    if lower.contains("ndl") {
        return Some(Language::Ndl);
    }
    None
}

impl Problem {
    /// Reads a problem statement. Lines that are not premises, goals, identities or axioms
    /// are ignored; an over-long text reads as an empty problem.
    pub fn parse(text: &str) -> Problem {
        let mut problem = Problem {
            premises: Vec::new(),
            goal: None,
            identities: Vec::new(),
            axioms: Vec::new(),
            named_language: None,
            style: PremiseStyle::None,
        };
        if text.len() > MAX_PROBLEM_BYTES {
            return problem;
        }
        problem.named_language = named_language(text);
        let mut stated_axioms = Vec::new();
        for raw in text.lines() {
            let line = clean_line(raw);
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = strip_prefix_ci(&line, "assert ") {
                if let Some((name, f)) = rest.split_once(":=")
                    && let Ok(formula) = parse_formula(f.trim())
                {
                    problem.premises.push(Premise {
                        name: name.trim().to_string(),
                        formula,
                    });
                    problem.style = PremiseStyle::Ndl;
                }
                continue;
            }
            let goal_text = ["derive:", "goal:", "prove:", "derive ", "prove "]
                .iter()
                .find_map(|k| strip_prefix_ci(&line, k));
            if let Some(g) = goal_text {
                if let Some(goal) = parse_goal(g) {
                    problem.goal = Some(goal);
                }
                continue;
            }
            if let Some((name, f)) = line.split_once(":=") {
                let name = name.trim();
                if is_ident(name)
                    && let Ok(formula) = parse_formula(f.trim())
                {
                    let hilbert = is_hilbert_premise_name(name);
                    problem.premises.push(Premise {
                        name: name.to_string(),
                        formula,
                    });
                    problem.style = if hilbert {
                        PremiseStyle::Hilbert
                    } else {
                        PremiseStyle::Ndl
                    };
                }
                continue;
            }
            let Some((head, body)) = line.split_once(':') else {
                continue;
            };
            let head = head.trim();
            if let Some(n) = strip_prefix_ci(head, "axiom") {
                let n = n.trim();
                if !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && let Ok(schema) = parse_formula(body.trim())
                {
                    stated_axioms.push(Axiom {
                        name: format!("Axiom{n}"),
                        schema,
                    });
                }
                continue;
            }
            let looks_like_name = is_ident(head) && head.bytes().any(|b| b.is_ascii_digit());
            if looks_like_name
                && let Some((l, r)) = split_equation(strip_forall(body))
                && let (Ok(lhs), Ok(rhs)) = (parse_term(l.trim()), parse_term(r.trim()))
            {
                problem.identities.push(Identity {
                    name: head.to_string(),
                    lhs,
                    rhs,
                });
            }
        }
        problem.axioms = if stated_axioms.is_empty() {
            standard_axioms()
        } else {
            stated_axioms
        };
        problem
    }

    /// The premise with this name.
    pub(crate) fn premise_named(&self, name: &str) -> Option<(usize, &Premise)> {
        self.premises
            .iter()
            .enumerate()
            .find(|(_, p)| p.name == name)
    }

    /// The goal formula, if the goal is one.
    pub(crate) fn goal_formula(&self) -> Option<&Formula> {
        match &self.goal {
            Some(Claim::Formula(f)) => Some(f),
            _ => None,
        }
    }

    /// The atoms of the premises and the goal.
    pub(crate) fn declared_atoms(&self) -> std::collections::HashSet<String> {
        let mut atoms = std::collections::HashSet::new();
        let mut stack: Vec<&Formula> = self.premises.iter().map(|p| &p.formula).collect();
        stack.extend(self.goal_formula());
        while let Some(f) = stack.pop() {
            match f {
                Formula::Atom(a) => {
                    if !atoms.contains(a) {
                        atoms.insert(a.clone());
                    }
                }
                Formula::True | Formula::False => {}
                Formula::Not(p) => stack.push(p),
                Formula::And(p, q)
                | Formula::Or(p, q)
                | Formula::Implies(p, q)
                | Formula::Iff(p, q) => {
                    stack.push(p);
                    stack.push(q);
                }
            }
        }
        atoms
    }

    /// Whether `word` is an atom of the premises or the goal.
    pub(crate) fn declares_atom(&self, word: &str) -> bool {
        let mut stack: Vec<&Formula> = self.premises.iter().map(|p| &p.formula).collect();
        stack.extend(self.goal_formula());
        while let Some(f) = stack.pop() {
            match f {
                Formula::Atom(a) if a == word => return true,
                Formula::Not(p) => stack.push(p),
                Formula::And(p, q)
                | Formula::Or(p, q)
                | Formula::Implies(p, q)
                | Formula::Iff(p, q) => {
                    stack.push(p);
                    stack.push(q);
                }
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ndl_problems() {
        let p = Problem::parse(
            "assert premise-1 := (A ==> B)\nassert premise-2 :=  (~ A ==> C)\n\nDerive: (B | D):\n",
        );
        assert_eq!(p.premises.len(), 2);
        assert_eq!(p.premises[1].name, "premise-2");
        assert_eq!(p.premises[1].formula.to_string(), "((~ A) ==> C)");
        assert_eq!(
            p.goal,
            Some(Claim::Formula(parse_formula("(B | D)").unwrap()))
        );
        assert_eq!(p.style, PremiseStyle::Ndl);
    }

    #[test]
    fn reads_hilbert_problems() {
        let p = Problem::parse("Premises:\nPremise1 := C \nPremise2 := (A ==> C)\nGoal: (A ==> B)");
        assert_eq!(p.style, PremiseStyle::Hilbert);
        assert_eq!(p.premises.len(), 2);
        assert_eq!(p.axioms.len(), 3);
    }

    #[test]
    fn reads_identities() {
        let p = Problem::parse(
            "- Equations:\nE1: h(c,V1170,c) = h(V1170,a,f4(f1(c)))\nE2: forall X, Y: g(X,Y) = g(Y,X)\nGoal: g(a,b) = g(b,a)",
        );
        assert_eq!(p.identities.len(), 2);
        assert_eq!(p.identities[1].lhs.to_string(), "g(X,Y)");
        assert!(matches!(p.goal, Some(Claim::Equation(_, _))));
    }
}
