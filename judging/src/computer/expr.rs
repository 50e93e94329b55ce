//! Arithmetic expressions: a small parser and two exact evaluators.
//!
//! - [`Expr::eval_exact`] evaluates over exact rationals (`i128` numerator and
//!   denominator, checked: an overflow is "cannot decide", never a wrong answer).
//! - [`Expr::eval_mod`] evaluates modulo the prime 2^61 − 1, for polynomial identity
//!   testing at random points (Schwartz–Zippel): two different rational functions of low
//!   degree agree at a random point with probability at most degree / p.
//!
//! Accepted syntax: numbers (`14`, `0.96`, `0.694444...`, `20%`), names (`x`, `D`, `t1`),
//! `+ - * / ^`, the Unicode `− × ÷ ·`, parentheses, and implicit multiplication (`3x`,
//! `0.96D`, `2(x + 1)`, `(a)(b)`).

use std::collections::BTreeMap;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    /// A number as a rational, with how it was written.
    Num(Rational, Written),
    /// A variable.
    Var(String),
    /// `-e`.
    Neg(Box<Expr>),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a - b`.
    Sub(Box<Expr>, Box<Expr>),
    /// `a * b`.
    Mul(Box<Expr>, Box<Expr>),
    /// `a / b`.
    Div(Box<Expr>, Box<Expr>),
    /// `a ^ n` with a small non-negative integer `n`.
    Pow(Box<Expr>, u32),
}

/// How a number literal was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// The literal as it appears (without a trailing ellipsis).
    pub(crate) text: String,
    /// Digits after the decimal point.
    pub(crate) decimals: u32,
    /// Marked as an approximation: a trailing `...`, or five or more decimals.
    pub(crate) approx: bool,
}

/// An exact rational `num / den` in lowest terms, `den > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rational {
    num: i128,
    den: i128,
}

/// The greatest common divisor of `|a|` and `|b|` (saturating at `i128::MAX`).
pub(crate) fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.saturating_abs();
    b = b.saturating_abs();
    while b != 0 {
        let t = a.checked_rem(b).unwrap_or(0);
        a = b;
        b = t;
    }
    a
}

impl Rational {
    pub(crate) const ZERO: Rational = Rational { num: 0, den: 1 };

    pub(crate) fn new(num: i128, den: i128) -> Option<Rational> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let (mut n, mut d) = (num.checked_div(g)?, den.checked_div(g)?);
        if d < 0 {
            n = n.checked_neg()?;
            d = d.checked_neg()?;
        }
        Some(Rational { num: n, den: d })
    }

    pub(crate) fn int(n: i128) -> Rational {
        Rational { num: n, den: 1 }
    }

    pub(crate) fn add(self, o: Rational) -> Option<Rational> {
        Rational::new(
            self.num
                .checked_mul(o.den)?
                .checked_add(o.num.checked_mul(self.den)?)?,
            self.den.checked_mul(o.den)?,
        )
    }

    pub(crate) fn sub(self, o: Rational) -> Option<Rational> {
        self.add(o.neg()?)
    }

    pub(crate) fn neg(self) -> Option<Rational> {
        Some(Rational {
            num: self.num.checked_neg()?,
            den: self.den,
        })
    }

    pub(crate) fn mul(self, o: Rational) -> Option<Rational> {
        Rational::new(self.num.checked_mul(o.num)?, self.den.checked_mul(o.den)?)
    }

    pub(crate) fn div(self, o: Rational) -> Option<Rational> {
        Rational::new(self.num.checked_mul(o.den)?, self.den.checked_mul(o.num)?)
    }

    pub(crate) fn pow(self, n: u32) -> Option<Rational> {
        Rational::new(self.num.checked_pow(n)?, self.den.checked_pow(n)?)
    }

    /// The value when it is a whole number.
    pub(crate) fn as_int(self) -> Option<i128> {
        (self.den == 1).then_some(self.num)
    }

    pub(crate) fn is_zero(self) -> bool {
        self.num == 0
    }

    /// The value as a float.
    pub(crate) fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// This value truncated and rounded (half away from zero) to `d` decimals.
    pub(crate) fn to_decimals(self, d: u32) -> Option<(Rational, Rational)> {
        let scale = 10i128.checked_pow(d)?;
        let scaled = self.num.checked_mul(scale)?;
        let trunc = scaled.checked_div(self.den)?;
        let rem2 = scaled
            .checked_rem(self.den)?
            .checked_abs()?
            .checked_mul(2)?;
        let round = if rem2 >= self.den {
            trunc.checked_add(scaled.signum())?
        } else {
            trunc
        };
        Some((Rational::new(trunc, scale)?, Rational::new(round, scale)?))
    }

    /// The value modulo [`P`].
    pub(crate) fn to_mod(self) -> Option<u64> {
        let n = modp_i128(self.num);
        let d = modp_i128(self.den);
        Some(mul_mod(n, inv_mod(d)?))
    }
}

/// The Mersenne prime 2^61 − 1.
pub(crate) const P: u64 = (1 << 61) - 1;

fn modp_i128(v: i128) -> u64 {
    let p = i128::from(P);
    let r = v.rem_euclid(p);
    u64::try_from(r).unwrap_or(0)
}

pub(crate) fn add_mod(a: u64, b: u64) -> u64 {
    let s = u128::from(a)
        .saturating_add(u128::from(b))
        .rem_euclid(u128::from(P));
    s as u64
}

pub(crate) fn sub_mod(a: u64, b: u64) -> u64 {
    add_mod(a, P.saturating_sub(b % P))
}

pub(crate) fn mul_mod(a: u64, b: u64) -> u64 {
    u128::from(a)
        .saturating_mul(u128::from(b))
        .rem_euclid(u128::from(P)) as u64
}

fn pow_mod(mut b: u64, mut e: u64) -> u64 {
    let mut r = 1u64;
    b %= P;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, b);
        }
        b = mul_mod(b, b);
        e >>= 1;
    }
    r
}

pub(crate) fn inv_mod(a: u64) -> Option<u64> {
    if a.is_multiple_of(P) {
        None
    } else {
        Some(pow_mod(a, P - 2))
    }
}

/// Why an expression did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError(pub(crate) String);

impl Expr {
    /// Parses a whole expression (nothing may follow it).
    pub(crate) fn parse(src: &str) -> Result<Expr, ParseError> {
        let tokens = lex(src)?;
        // Every node of the tree is at least one token, so the tree's depth (which the
        // evaluators recurse over) is bounded by the token count.
        if tokens.len() > MAX_TOKENS {
            return Err(ParseError(format!(
                "more than {MAX_TOKENS} tokens: too long to check"
            )));
        }
        let mut p = Parser {
            t: &tokens,
            i: 0,
            nesting: 0,
        };
        let e = p.expr()?;
        if p.i != tokens.len() {
            return Err(ParseError(format!("unexpected {:?}", tokens.get(p.i))));
        }
        Ok(e)
    }

    /// Names used.
    pub(crate) fn vars(&self, out: &mut std::collections::BTreeSet<String>) {
        match self {
            Expr::Num(..) => {}
            Expr::Var(v) => {
                out.insert(v.clone());
            }
            Expr::Neg(a) | Expr::Pow(a, _) => a.vars(out),
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) => {
                a.vars(out);
                b.vars(out);
            }
        }
    }

    /// This expression with each literal that `f` maps replaced by the value it gives.
    pub(crate) fn map_literals(&self, f: &dyn Fn(Rational, &Written) -> Option<Rational>) -> Expr {
        let m = |e: &Expr| Box::new(e.map_literals(f));
        match self {
            Expr::Num(r, w) => match f(*r, w) {
                Some(v) => Expr::Num(v, w.clone()),
                None => self.clone(),
            },
            Expr::Var(_) => self.clone(),
            Expr::Neg(a) => Expr::Neg(m(a)),
            Expr::Add(a, b) => Expr::Add(m(a), m(b)),
            Expr::Sub(a, b) => Expr::Sub(m(a), m(b)),
            Expr::Mul(a, b) => Expr::Mul(m(a), m(b)),
            Expr::Div(a, b) => Expr::Div(m(a), m(b)),
            Expr::Pow(a, n) => Expr::Pow(m(a), *n),
        }
    }

    /// Every number literal's value.
    pub(crate) fn literals(&self, out: &mut Vec<Rational>) {
        match self {
            Expr::Num(r, _) => out.push(*r),
            Expr::Var(_) => {}
            Expr::Neg(a) | Expr::Pow(a, _) => a.literals(out),
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) => {
                a.literals(out);
                b.literals(out);
            }
        }
    }

    /// Values it states: each number literal, and a quotient of two literals (`3/5`) as
    /// one value rather than two.
    pub(crate) fn values(&self, out: &mut Vec<Rational>) {
        match self {
            Expr::Num(r, _) => out.push(*r),
            Expr::Var(_) => {}
            Expr::Div(a, b) => {
                if let (Expr::Num(x, _), Expr::Num(y, _)) = (a.as_ref(), b.as_ref()) {
                    out.extend(x.div(*y));
                } else {
                    a.values(out);
                    b.values(out);
                }
            }
            Expr::Neg(a) | Expr::Pow(a, _) => a.values(out),
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) => {
                a.values(out);
                b.values(out);
            }
        }
    }

    /// This expression with every name in `defs` replaced by its definition.
    pub(crate) fn substitute(&self, defs: &BTreeMap<String, Expr>) -> Expr {
        let sub = |e: &Expr| Box::new(e.substitute(defs));
        match self {
            Expr::Num(..) => self.clone(),
            Expr::Var(v) => defs.get(v).cloned().unwrap_or_else(|| self.clone()),
            Expr::Neg(a) => Expr::Neg(sub(a)),
            Expr::Add(a, b) => Expr::Add(sub(a), sub(b)),
            Expr::Sub(a, b) => Expr::Sub(sub(a), sub(b)),
            Expr::Mul(a, b) => Expr::Mul(sub(a), sub(b)),
            Expr::Div(a, b) => Expr::Div(sub(a), sub(b)),
            Expr::Pow(a, n) => Expr::Pow(sub(a), *n),
        }
    }

    /// Decimals of a bare number literal.
    pub(crate) fn decimals(&self) -> Option<u32> {
        match self {
            Expr::Num(_, w) => Some(w.decimals),
            _ => None,
        }
    }

    /// The fewest decimals among approximate numbers, if any number is approximate.
    pub(crate) fn approx_digits(&self) -> Option<u32> {
        match self {
            Expr::Num(_, w) => w.approx.then_some(w.decimals),
            Expr::Var(_) => None,
            Expr::Neg(a) | Expr::Pow(a, _) => a.approx_digits(),
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) => {
                match (a.approx_digits(), b.approx_digits()) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                }
            }
        }
    }

    /// Exact value with variables bound in `env`; `None` on an unbound name, division by
    /// zero or overflow.
    pub(crate) fn eval_exact(&self, env: &BTreeMap<String, Rational>) -> Option<Rational> {
        Some(match self {
            Expr::Num(r, _) => *r,
            Expr::Var(v) => *env.get(v)?,
            Expr::Neg(a) => a.eval_exact(env)?.neg()?,
            Expr::Add(a, b) => a.eval_exact(env)?.add(b.eval_exact(env)?)?,
            Expr::Sub(a, b) => a.eval_exact(env)?.sub(b.eval_exact(env)?)?,
            Expr::Mul(a, b) => a.eval_exact(env)?.mul(b.eval_exact(env)?)?,
            Expr::Div(a, b) => a.eval_exact(env)?.div(b.eval_exact(env)?)?,
            Expr::Pow(a, n) => a.eval_exact(env)?.pow(*n)?,
        })
    }

    /// Value modulo [`P`] with variables bound in `env`; `None` on division by zero mod P.
    pub(crate) fn eval_mod(&self, env: &BTreeMap<String, u64>) -> Option<u64> {
        Some(match self {
            Expr::Num(r, _) => r.to_mod()?,
            Expr::Var(v) => *env.get(v)?,
            Expr::Neg(a) => sub_mod(0, a.eval_mod(env)?),
            Expr::Add(a, b) => add_mod(a.eval_mod(env)?, b.eval_mod(env)?),
            Expr::Sub(a, b) => sub_mod(a.eval_mod(env)?, b.eval_mod(env)?),
            Expr::Mul(a, b) => mul_mod(a.eval_mod(env)?, b.eval_mod(env)?),
            Expr::Div(a, b) => mul_mod(a.eval_mod(env)?, inv_mod(b.eval_mod(env)?)?),
            Expr::Pow(a, n) => pow_mod(a.eval_mod(env)?, u64::from(*n)),
        })
    }

    /// Value as a float (for comparing against rounded decimals).
    pub(crate) fn eval_f64(&self, env: &BTreeMap<String, f64>) -> Option<f64> {
        let v = match self {
            Expr::Num(r, _) => r.to_f64(),
            Expr::Var(v) => *env.get(v)?,
            Expr::Neg(a) => -a.eval_f64(env)?,
            Expr::Add(a, b) => a.eval_f64(env)? + b.eval_f64(env)?,
            Expr::Sub(a, b) => a.eval_f64(env)? - b.eval_f64(env)?,
            Expr::Mul(a, b) => a.eval_f64(env)? * b.eval_f64(env)?,
            Expr::Div(a, b) => a.eval_f64(env)? / b.eval_f64(env)?,
            Expr::Pow(a, n) => a.eval_f64(env)?.powi(i32::try_from(*n).ok()?),
        };
        v.is_finite().then_some(v)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Rational, Written),
    Ident(String),
    Op(char),
    LParen,
    RParen,
}

/// Longest accepted name; longer words are prose, not mathematics.
const MAX_NAME: usize = 3;
/// Largest exponent accepted.
const MAX_POW: u32 = 16;
/// Most tokens in one expression: the parse tree is never deeper than its tokens, and the
/// evaluators recurse over it, so this bounds their stack too.
const MAX_TOKENS: usize = 512;
/// Deepest nesting of parentheses and signs the parser descends into.
const MAX_NESTING: usize = 256;

fn lex(src: &str) -> Result<Vec<Tok>, ParseError> {
    let cs: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0usize;
    while let Some(&c) = cs.get(i) {
        match c {
            c if c.is_whitespace() => i = i.saturating_add(1),
            '0'..='9' | '.' => {
                let start = i;
                let mut int_part = String::new();
                let mut frac = String::new();
                let mut seen_dot = false;
                while let Some(&d) = cs.get(i) {
                    if d.is_ascii_digit() {
                        if seen_dot {
                            frac.push(d);
                        } else {
                            int_part.push(d);
                        }
                        i = i.saturating_add(1);
                    } else if d == '.'
                        && !seen_dot
                        && cs
                            .get(i.saturating_add(1))
                            .is_some_and(char::is_ascii_digit)
                    {
                        seen_dot = true;
                        i = i.saturating_add(1);
                    } else {
                        break;
                    }
                }
                if i == start {
                    return Err(ParseError(format!("stray '.' at {start}")));
                }
                let mut approx = frac.len() >= 5;
                // A trailing ellipsis marks a truncated decimal.
                while matches!(cs.get(i), Some('.') | Some('…')) {
                    approx = true;
                    i = i.saturating_add(1);
                }
                let digits =
                    u32::try_from(frac.len()).map_err(|_| ParseError("number too long".into()))?;
                let scale = 10i128
                    .checked_pow(digits)
                    .ok_or_else(|| ParseError("number too long".into()))?;
                let whole: i128 = format!("{int_part}{frac}")
                    .parse()
                    .map_err(|_| ParseError("number too long".into()))?;
                let mut r =
                    Rational::new(whole, scale).ok_or_else(|| ParseError("bad number".into()))?;
                // `33.3%` shows 0.333: a percentage carries two more decimals of its value.
                let mut shown = digits;
                if cs.get(i) == Some(&'%') {
                    r = r
                        .div(Rational::int(100))
                        .ok_or_else(|| ParseError("bad number".into()))?;
                    shown = shown.saturating_add(2);
                    i = i.saturating_add(1);
                }
                let text: String = cs
                    .get(start..i)
                    .map(|t| t.iter().collect())
                    .unwrap_or_default();
                out.push(Tok::Num(
                    r,
                    Written {
                        text: text.trim_end_matches(['.', '…', '%']).to_string(),
                        decimals: shown,
                        approx,
                    },
                ));
            }
            c if c.is_alphabetic() => {
                let mut name = String::new();
                while let Some(&d) = cs.get(i) {
                    if d.is_alphanumeric() || d == '_' {
                        name.push(d);
                        i = i.saturating_add(1);
                    } else {
                        break;
                    }
                }
                if name.chars().count() > MAX_NAME
                    || (name.chars().count() > 1
                        && !name.chars().skip(1).any(|c| c.is_ascii_digit() || c == '_'))
                {
                    return Err(ParseError(format!("{name:?} is a word, not a name")));
                }
                out.push(Tok::Ident(name));
            }
            '+' | '*' | '/' | '^' | '-' => {
                out.push(Tok::Op(c));
                i = i.saturating_add(1);
            }
            '−' | '–' => {
                out.push(Tok::Op('-'));
                i = i.saturating_add(1);
            }
            '×' | '·' | '⋅' => {
                out.push(Tok::Op('*'));
                i = i.saturating_add(1);
            }
            '÷' => {
                out.push(Tok::Op('/'));
                i = i.saturating_add(1);
            }
            '(' | '[' => {
                out.push(Tok::LParen);
                i = i.saturating_add(1);
            }
            ')' | ']' => {
                out.push(Tok::RParen);
                i = i.saturating_add(1);
            }
            other => return Err(ParseError(format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    t: &'a [Tok],
    i: usize,
    /// Parentheses and signs entered and not yet left.
    nesting: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }

    /// Runs `f` one level deeper, refusing past [`MAX_NESTING`].
    fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, ParseError>,
    ) -> Result<T, ParseError> {
        if self.nesting >= MAX_NESTING {
            return Err(ParseError(format!(
                "nested more than {MAX_NESTING} deep: too deep to check"
            )));
        }
        self.nesting = self.nesting.saturating_add(1);
        let out = f(self);
        self.nesting = self.nesting.saturating_sub(1);
        out
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.term()?;
        while let Some(Tok::Op(c @ ('+' | '-'))) = self.peek() {
            let c = *c;
            self.i = self.i.saturating_add(1);
            let r = self.term()?;
            e = if c == '+' {
                Expr::Add(Box::new(e), Box::new(r))
            } else {
                Expr::Sub(Box::new(e), Box::new(r))
            };
        }
        Ok(e)
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.unary()?;
        loop {
            match self.peek() {
                Some(Tok::Op(c @ ('*' | '/'))) => {
                    let c = *c;
                    self.i = self.i.saturating_add(1);
                    let r = self.unary()?;
                    e = if c == '*' {
                        Expr::Mul(Box::new(e), Box::new(r))
                    } else {
                        Expr::Div(Box::new(e), Box::new(r))
                    };
                }
                // Implicit multiplication: `3x`, `2(x+1)`, `(a)(b)`, `x y`.
                Some(Tok::Num(..) | Tok::Ident(_) | Tok::LParen) => {
                    let r = self.power()?;
                    e = Expr::Mul(Box::new(e), Box::new(r));
                }
                _ => return Ok(e),
            }
        }
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        match self.peek() {
            Some(Tok::Op('-')) => {
                self.i = self.i.saturating_add(1);
                Ok(Expr::Neg(Box::new(self.nested(Self::unary)?)))
            }
            Some(Tok::Op('+')) => {
                self.i = self.i.saturating_add(1);
                self.nested(Self::unary)
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<Expr, ParseError> {
        let base = self.atom()?;
        if let Some(Tok::Op('^')) = self.peek() {
            self.i = self.i.saturating_add(1);
            match self.peek() {
                Some(Tok::Num(r, w))
                    if r.den == 1
                        && w.decimals == 0
                        && (0..=i128::from(MAX_POW)).contains(&r.num) =>
                {
                    let n = u32::try_from(r.num).map_err(|_| ParseError("bad exponent".into()))?;
                    self.i = self.i.saturating_add(1);
                    return Ok(Expr::Pow(Box::new(base), n));
                }
                _ => {
                    return Err(ParseError(
                        "only small whole-number exponents are supported".into(),
                    ));
                }
            }
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        let tok = self.peek().cloned();
        self.i = self.i.saturating_add(1);
        match tok {
            Some(Tok::Num(r, w)) => Ok(Expr::Num(r, w)),
            Some(Tok::Ident(n)) => Ok(Expr::Var(n)),
            Some(Tok::LParen) => {
                let e = self.nested(Self::expr)?;
                if self.peek() != Some(&Tok::RParen) {
                    return Err(ParseError("missing ')'".into()));
                }
                self.i = self.i.saturating_add(1);
                Ok(e)
            }
            other => Err(ParseError(format!(
                "expected a number, name or '(' but found {other:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(s: &str) -> Rational {
        Expr::parse(s)
            .expect("parses")
            .eval_exact(&BTreeMap::new())
            .expect("evaluates")
    }

    #[test]
    fn exact_arithmetic() {
        assert_eq!(exact("2/(3*0.96)"), Rational::new(25, 36).expect("r"));
        assert_eq!(exact("1/3 + 0.5"), Rational::new(5, 6).expect("r"));
        assert_eq!(exact("(1.2)(0.8)"), Rational::new(24, 25).expect("r"));
        assert_eq!(exact("2^10 − 24"), Rational::int(1000));
        assert_eq!(exact("20%"), Rational::new(1, 5).expect("r"));
        assert_eq!(exact("-3 + 5"), Rational::int(2));
    }

    #[test]
    fn approximations_are_marked() {
        assert_eq!(
            Expr::parse("0.694444...").expect("p").approx_digits(),
            Some(6)
        );
        assert_eq!(Expr::parse("0.69444").expect("p").approx_digits(), Some(5));
        assert_eq!(Expr::parse("0.96").expect("p").approx_digits(), None);
    }

    #[test]
    fn implicit_multiplication_and_names() {
        let e = Expr::parse("3x − 7").expect("p");
        let env = BTreeMap::from([("x".to_string(), Rational::int(14))]);
        assert_eq!(e.eval_exact(&env), Some(Rational::int(35)));
        assert!(Expr::parse("0.96D").is_ok());
        assert!(Expr::parse("t1 + t2").is_ok());
        assert!(Expr::parse("the denominator").is_err());
        assert!(Expr::parse("x^100").is_err());
        assert!(Expr::parse("(x + 1").is_err());
    }

    #[test]
    fn division_by_zero_and_overflow_are_undecided() {
        assert_eq!(
            Expr::parse("1/(2-2)")
                .expect("p")
                .eval_exact(&BTreeMap::new()),
            None
        );
        assert_eq!(
            Expr::parse("99999999999^16")
                .expect("p")
                .eval_exact(&BTreeMap::new()),
            None
        );
        assert!(Expr::parse("123456789012345678901234567890123456789012345").is_err());
    }

    #[test]
    fn nesting_and_length_are_bounded_so_no_input_overflows_the_stack() {
        // Each would recurse once per character, in the parser or in the evaluators.
        for deep in [
            "(".repeat(100_000) + "1" + &")".repeat(100_000),
            "-".repeat(100_000) + "1",
            "+".repeat(100_000) + "1",
            "1".to_string() + &"+1".repeat(100_000),
        ] {
            let e = Expr::parse(&deep).unwrap_err();
            assert!(e.0.contains("too"), "{}", e.0);
        }
        // Within the limits, nesting parses and evaluates.
        let ok = "(".repeat(MAX_NESTING - 1) + "2" + &")".repeat(MAX_NESTING - 1);
        assert_eq!(
            Expr::parse(&ok).unwrap().eval_exact(&BTreeMap::new()),
            Some(Rational::int(2))
        );
        let long = "1".to_string() + &"+1".repeat((MAX_TOKENS - 1) / 2);
        assert!(Expr::parse(&long).is_ok());
    }

    #[test]
    fn modular_evaluation_matches_exact() {
        let e = Expr::parse("(x + 1)^2 − (x^2 + 2x + 1)").expect("p");
        let env = BTreeMap::from([("x".to_string(), 123_456_789u64)]);
        assert_eq!(e.eval_mod(&env), Some(0));
        let r = Rational::new(25, 36).expect("r");
        assert_eq!(mul_mod(r.to_mod().expect("m"), 36), 25);
    }
}
