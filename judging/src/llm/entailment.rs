//! The entailment model as every part of the LLM tier asks it: a chain of claims
//! ([`Chain`]), one question about it ([`Query`]), the model's [`Answer`], and the model
//! itself behind the async trait [`Entailment`] (the node implements it with its HTTP
//! client, tests with scripted answers). ARES scoring, the calibration, the consistency
//! probes and the question's wording all stand on it.

use async_trait::async_trait;

/// The claims of one chain: base claims first, then derived claims in order.
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a> {
    /// Base claims (the givens), each with its prior soundness.
    pub base: &'a [(String, f64)],
    /// Derived claims; the last is the one being judged.
    pub derived: &'a [String],
}

impl Chain<'_> {
    /// Number of claims.
    pub fn len(&self) -> usize {
        self.base.len().saturating_add(self.derived.len())
    }

    /// Whether there is no claim at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Claim `i` (base claims first).
    pub fn claim(&self, i: usize) -> Option<&str> {
        match i.checked_sub(self.base.len()) {
            None => self.base.get(i).map(|(c, _)| c.as_str()),
            Some(d) => self.derived.get(d).map(String::as_str),
        }
    }
}

/// One question to the entailment model: do the included claims entail claim `hypothesis`?
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Query {
    /// Index of the hypothesis in the chain (always a derived claim).
    pub hypothesis: usize,
    /// Bit `i` set: claim `i` (which precedes the hypothesis) is in the premise.
    pub included: u64,
}

impl Query {
    /// Whether claim `i` is in the premise.
    pub fn includes(&self, i: usize) -> bool {
        i < 64 && self.included & (1u64 << i) != 0
    }
}

/// The entailment model's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answer {
    /// Probability that the premise entails the hypothesis, in `[0, 1]`.
    pub entails: f64,
    /// Whether the hypothesis contradicts the included base claims (the problem context).
    pub contradicts_context: bool,
}

/// An entailment model `E(premise, hypothesis)`.
#[async_trait]
pub trait Entailment: Send + Sync {
    /// Why a query got no answer (its message goes into the seat's abstention reason).
    type Error: std::fmt::Display + std::fmt::Debug + Send;

    /// Answers one query about `chain`; an error (the model could not be asked, or its
    /// reply was unusable) ends the scoring.
    async fn entail(&self, chain: &Chain<'_>, query: &Query) -> Result<Answer, Self::Error>;
}
