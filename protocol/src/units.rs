//! Fixed-point and integer units used in consensus state.
//!
//! Consensus state holds no floats: token amounts are whole `u64` units and fractions
//! (tau, beta, reputation, slashing probabilities) are parts per million.

use serde::{Deserialize, Serialize};

/// A token amount in whole units.
pub type Amount = u64;

/// A fraction in parts per million: `Ppm(500_000)` is one half.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Ppm(pub u32);

impl Ppm {
    /// One million parts: the whole.
    pub const ONE: Ppm = Ppm(1_000_000);
    /// Nothing.
    pub const ZERO: Ppm = Ppm(0);

    /// Whether the value lies in `[0, 1]`.
    pub fn is_fraction(self) -> bool {
        self <= Ppm::ONE
    }

    /// `ceil(self * n)` without floats: the quorum `q = ceil(tau k)` (paper §0.0.3.2).
    pub fn ceil_mul(self, n: u64) -> u64 {
        let num = u128::from(self.0).saturating_mul(u128::from(n));
        let q = num.div_ceil(1_000_000);
        u64::try_from(q).unwrap_or(u64::MAX)
    }

    /// `floor(self * amount)`, saturating.
    pub fn mul_floor(self, amount: u64) -> u64 {
        let num = u128::from(self.0).saturating_mul(u128::from(amount));
        u64::try_from(num / 1_000_000).unwrap_or(u64::MAX)
    }

    /// This fraction as a float, for reports and analysis only.
    pub fn to_f64(self) -> f64 {
        f64::from(self.0) / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_is_an_exact_ceiling() {
        assert_eq!(Ppm(500_000).ceil_mul(5), 3);
        assert_eq!(Ppm(600_000).ceil_mul(5), 3);
        assert_eq!(Ppm(500_000).ceil_mul(4), 2);
        assert_eq!(Ppm(1).ceil_mul(1), 1);
        assert_eq!(Ppm::ONE.ceil_mul(7), 7);
        assert_eq!(Ppm::ZERO.ceil_mul(7), 0);
    }

    #[test]
    fn mul_floor_saturates() {
        assert_eq!(Ppm(250_000).mul_floor(10), 2);
        assert_eq!(Ppm(u32::MAX).mul_floor(u64::MAX), u64::MAX);
    }
}
