//! Rational functions of one variable with exact rational coefficients, for deciding
//! whether one equation follows from another (e.g. `x/(3x − 7) = 2/5 ⇒ 5x = 6x − 14`).

use super::expr::{Expr, Rational};

/// Highest degree handled; beyond it the checker abstains.
const MAX_DEGREE: usize = 12;

/// A polynomial as coefficients, lowest degree first, without trailing zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Poly(Vec<Rational>);

impl Poly {
    fn trim(mut v: Vec<Rational>) -> Poly {
        while v.last().is_some_and(|c| c.is_zero()) {
            v.pop();
        }
        Poly(v)
    }

    fn constant(c: Rational) -> Poly {
        Poly::trim(vec![c])
    }

    fn x() -> Poly {
        Poly(vec![Rational::ZERO, Rational::int(1)])
    }

    /// Degree; `None` for the zero polynomial.
    pub(crate) fn degree(&self) -> Option<usize> {
        self.0.len().checked_sub(1)
    }

    pub(crate) fn coeffs(&self) -> &[Rational] {
        &self.0
    }

    fn add(&self, o: &Poly) -> Option<Poly> {
        let n = self.0.len().max(o.0.len());
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            let a = self.0.get(i).copied().unwrap_or(Rational::ZERO);
            let b = o.0.get(i).copied().unwrap_or(Rational::ZERO);
            v.push(a.add(b)?);
        }
        Some(Poly::trim(v))
    }

    fn neg(&self) -> Option<Poly> {
        Some(Poly(self.0.iter().map(|c| c.neg()).collect::<Option<_>>()?))
    }

    fn mul(&self, o: &Poly) -> Option<Poly> {
        if self.0.is_empty() || o.0.is_empty() {
            return Some(Poly(Vec::new()));
        }
        let n = self.0.len().saturating_add(o.0.len()).saturating_sub(1);
        if n > MAX_DEGREE + 1 {
            return None;
        }
        let mut v = vec![Rational::ZERO; n];
        for (i, a) in self.0.iter().enumerate() {
            for (j, b) in o.0.iter().enumerate() {
                let slot = v.get_mut(i.saturating_add(j))?;
                *slot = slot.add(a.mul(*b)?)?;
            }
        }
        Some(Poly::trim(v))
    }

    /// Exact value at `x`.
    pub(crate) fn eval(&self, x: Rational) -> Option<Rational> {
        let mut acc = Rational::ZERO;
        for c in self.0.iter().rev() {
            acc = acc.mul(x)?.add(*c)?;
        }
        Some(acc)
    }
}

/// `num / den`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RatFn {
    pub(crate) num: Poly,
    pub(crate) den: Poly,
}

impl RatFn {
    /// Converts an expression in the single variable `var` (any other name: `None`).
    pub(crate) fn from_expr(e: &Expr, var: &str) -> Option<RatFn> {
        let one = Poly::constant(Rational::int(1));
        Some(match e {
            Expr::Num(r, _) => RatFn {
                num: Poly::constant(*r),
                den: one,
            },
            Expr::Var(v) if v == var => RatFn {
                num: Poly::x(),
                den: one,
            },
            Expr::Var(_) => return None,
            Expr::Neg(a) => {
                let a = RatFn::from_expr(a, var)?;
                RatFn {
                    num: a.num.neg()?,
                    den: a.den,
                }
            }
            Expr::Add(a, b) | Expr::Sub(a, b) => {
                let a = RatFn::from_expr(a, var)?;
                let mut b = RatFn::from_expr(b, var)?;
                if matches!(e, Expr::Sub(..)) {
                    b.num = b.num.neg()?;
                }
                RatFn {
                    num: a.num.mul(&b.den)?.add(&b.num.mul(&a.den)?)?,
                    den: a.den.mul(&b.den)?,
                }
            }
            Expr::Mul(a, b) => {
                let a = RatFn::from_expr(a, var)?;
                let b = RatFn::from_expr(b, var)?;
                RatFn {
                    num: a.num.mul(&b.num)?,
                    den: a.den.mul(&b.den)?,
                }
            }
            Expr::Div(a, b) => {
                let a = RatFn::from_expr(a, var)?;
                let b = RatFn::from_expr(b, var)?;
                // Dividing by the zero polynomial is undefined.
                b.num.degree()?;
                RatFn {
                    num: a.num.mul(&b.den)?,
                    den: a.den.mul(&b.num)?,
                }
            }
            Expr::Pow(a, n) => {
                let a = RatFn::from_expr(a, var)?;
                let mut num = one.clone();
                let mut den = one;
                for _ in 0..*n {
                    num = num.mul(&a.num)?;
                    den = den.mul(&a.den)?;
                }
                RatFn { num, den }
            }
        })
    }

    /// `lhs − rhs` as one rational function: the equation `lhs = rhs` holds where its
    /// numerator vanishes and its denominator does not.
    pub(crate) fn equation(lhs: &Expr, rhs: &Expr, var: &str) -> Option<RatFn> {
        RatFn::from_expr(
            &Expr::Sub(Box::new(lhs.clone()), Box::new(rhs.clone())),
            var,
        )
    }

    /// The unique root of a linear numerator that does not zero the denominator.
    pub(crate) fn linear_root(&self) -> Option<Rational> {
        if self.num.degree() != Some(1) {
            return None;
        }
        let b = *self.num.coeffs().first()?;
        let a = *self.num.coeffs().get(1)?;
        let r = b.neg()?.div(a)?;
        let d = self.den.eval(r)?;
        (!d.is_zero()).then_some(r)
    }

    /// Whether the equation holds at `x` (numerator zero, denominator non-zero).
    pub(crate) fn holds_at(&self, x: Rational) -> Option<bool> {
        let d = self.den.eval(x)?;
        if d.is_zero() {
            return Some(false);
        }
        Some(self.num.eval(x)?.is_zero())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(l: &str, r: &str) -> RatFn {
        RatFn::equation(
            &Expr::parse(l).expect("l"),
            &Expr::parse(r).expect("r"),
            "x",
        )
        .expect("ratfn")
    }

    #[test]
    fn fraction_equation_root() {
        assert_eq!(
            eq("x / (3x − 7)", "2/5").linear_root(),
            Some(Rational::int(14))
        );
        assert_eq!(eq("5x", "9x − 20").linear_root(), Some(Rational::int(5)));
        assert_eq!(eq("5x", "6x − 14").holds_at(Rational::int(14)), Some(true));
        assert_eq!(eq("5x", "9x − 20").holds_at(Rational::int(14)), Some(false));
    }

    #[test]
    fn quadratic_has_no_linear_root() {
        assert_eq!(eq("x^2", "4").linear_root(), None);
        assert_eq!(eq("x^2", "4").holds_at(Rational::int(-2)), Some(true));
    }

    #[test]
    fn other_names_are_refused() {
        assert!(
            RatFn::equation(
                &Expr::parse("x + y").expect("p"),
                &Expr::parse("1").expect("p"),
                "x"
            )
            .is_none()
        );
    }
}
