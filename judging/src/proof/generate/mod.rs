//! Seeded generation of labelled data: problems in all four languages, proofs from small
//! provers of our own, and corrupted proofs, each labelled with the verdict and the first
//! error (step, kind, line) the corruption was built to cause.
//!
//! Problems follow ProofGrid's appendix B.1 for propositional logic: random formula trees
//! over a few atoms; the goal follows from the premises; all formulas distinct; every
//! premise necessary; the goal's atoms occur in the premises; the premises are consistent,
//! and so is the goal's negation (checked by SAT). Corruptions are the paper's: wrong
//! argument form, wrong argument count, a removed step, a swapped rule, an out-of-scope
//! citation, plus a broken formula (syntax); for equational proofs a wrong identity or a
//! wrong rewrite; for Hilbert proofs a wrong substitution, a wrong premise or mp line.
//!
//! Randomness comes only from the caller's seed (SplitMix64), so a seed names a corpus.

mod eq;
mod hilbert;
mod ndl;

use serde::{Deserialize, Serialize};

use super::{
    formula::Formula,
    report::{ErrorKind, Language},
};

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ z.wrapping_shr(30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ z.wrapping_shr(27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ z.wrapping_shr(31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let n64 = u64::try_from(n).unwrap_or(u64::MAX);
        usize::try_from(self.next_u64().checked_rem(n64).unwrap_or(0)).unwrap_or(0)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    /// A random element.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        let i = self.below(items.len());
        items.get(i)
    }
}

/// The label of a generated case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expected {
    /// A correct proof.
    Pass,
    /// The first error, as built.
    Fail {
        /// Its kind.
        kind: ErrorKind,
        /// The plan step it is at (`None` for a syntax error between steps).
        step: Option<usize>,
        /// Its 1-based line in the proof.
        line: usize,
    },
}

/// One generated, labelled case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenCase {
    /// The language.
    pub language: Language,
    /// How it was made (`correct`, or the corruption's name).
    pub origin: String,
    /// The problem statement.
    pub problem: String,
    /// The proof text.
    pub proof: String,
    /// The label.
    pub expected: Expected,
}

/// About `per_language` cases per language (a correct proof and its corruptions come in
/// groups, so the count is approximate), deterministic in `seed`.
pub fn corpus(seed: u64, per_language: usize) -> Vec<GenCase> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for language in [
        Language::Ndl,
        Language::NdlF,
        Language::Hilbert,
        Language::Equational,
    ] {
        let mut made = 0usize;
        let mut attempts = 0usize;
        while made < per_language && attempts < per_language.saturating_mul(50) {
            attempts = attempts.saturating_add(1);
            let batch = match language {
                Language::Ndl => ndl::cases(&mut rng, false),
                Language::NdlF => ndl::cases(&mut rng, true),
                Language::Hilbert => hilbert::cases(&mut rng),
                Language::Equational => eq::cases(&mut rng),
            };
            made = made.saturating_add(batch.len());
            out.extend(batch);
        }
    }
    out
}

/// A random formula over `atoms` of depth at most `depth` (`implicational`: only `~` and
/// `==>`).
pub(crate) fn random_formula(
    rng: &mut Rng,
    atoms: &[&str],
    depth: usize,
    implicational: bool,
) -> Formula {
    let atom = |rng: &mut Rng| Formula::atom(rng.pick(atoms).copied().unwrap_or("A"));
    if depth == 0 || rng.chance(1, 3) {
        return atom(rng);
    }
    let sub = depth.saturating_sub(1);
    let choice = if implicational {
        rng.below(3).saturating_mul(2)
    } else {
        rng.below(6)
    };
    match choice {
        0 | 1 => Formula::negate(random_formula(rng, atoms, sub, implicational)),
        2 if !implicational => Formula::and(
            random_formula(rng, atoms, sub, implicational),
            random_formula(rng, atoms, sub, implicational),
        ),
        3 => Formula::or(
            random_formula(rng, atoms, sub, implicational),
            random_formula(rng, atoms, sub, implicational),
        ),
        5 => Formula::iff(
            random_formula(rng, atoms, sub, implicational),
            random_formula(rng, atoms, sub, implicational),
        ),
        _ => Formula::implies(
            random_formula(rng, atoms, sub, implicational),
            random_formula(rng, atoms, sub, implicational),
        ),
    }
}

fn precedence(f: &Formula) -> u8 {
    match f {
        Formula::Iff(..) => 1,
        Formula::Implies(..) => 2,
        Formula::Or(..) => 3,
        Formula::And(..) => 4,
        Formula::Not(_) => 5,
        _ => 6,
    }
}

/// Prints with the fewest parentheses the grammar allows inside an outer pair, as models
/// often write: `(~A & B ==> C | D)`.
pub(crate) fn pretty(f: &Formula) -> String {
    fn inner(f: &Formula, out: &mut String) {
        let bin = |out: &mut String, p: &Formula, op: &str, q: &Formula, prec: u8| {
            // right-associative: the left operand needs parentheses at equal precedence
            wrap(p, precedence(p) <= prec, out);
            out.push(' ');
            out.push_str(op);
            out.push(' ');
            wrap(q, precedence(q) < prec, out);
        };
        match f {
            Formula::True => out.push_str("true"),
            Formula::False => out.push_str("false"),
            Formula::Atom(a) => out.push_str(a),
            Formula::Not(p) => {
                out.push('~');
                wrap(p, precedence(p) < 5, out);
            }
            Formula::And(p, q) => bin(out, p, "&", q, 4),
            Formula::Or(p, q) => bin(out, p, "|", q, 3),
            Formula::Implies(p, q) => bin(out, p, "==>", q, 2),
            Formula::Iff(p, q) => bin(out, p, "<==>", q, 1),
        }
    }
    fn wrap(f: &Formula, parens: bool, out: &mut String) {
        if parens {
            out.push('(');
            inner(f, out);
            out.push(')');
        } else {
            inner(f, out);
        }
    }
    let mut out = String::new();
    match f {
        Formula::True | Formula::False | Formula::Atom(_) => inner(f, &mut out),
        _ => wrap(f, true, &mut out),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{super::formula::parse_formula, *};

    #[test]
    fn pretty_printing_reads_back() {
        let mut rng = Rng::new(7);
        for _ in 0..500 {
            let f = random_formula(&mut rng, &["A", "B", "C"], 4, false);
            let text = pretty(&f);
            assert_eq!(parse_formula(&text).unwrap(), f, "{text}");
        }
        assert_eq!(
            pretty(&parse_formula("(((~ A) & B) ==> (C | D))").unwrap()),
            "(~A & B ==> C | D)"
        );
    }

    #[test]
    fn corpus_is_deterministic() {
        assert_eq!(corpus(11, 6), corpus(11, 6));
        assert_ne!(corpus(11, 6), corpus(12, 6));
    }
}
