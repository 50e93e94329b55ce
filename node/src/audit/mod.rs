//! Auditing on a running node: the I/O around the judging core.
//!
//! What to decide is `trust_judging`'s (the decomposer, the Computer checkers, ARES and the
//! LLM's question, the provider's session planning, the duties planner, the preview).
//! This module carries it out: the seat's vote book (votes and salts persisted before
//! committing), the seat pipeline (fetch, decrypt, judge, commit, reveal), the duties task
//! that runs the planner's plan on each decided block ([`duties`]), the provider's records,
//! key delivery and submission ([`provider`]), and the outbox both sign their transactions
//! through. The LLM tier ([`llm`]) asks an OpenAI-compatible endpoint; the Human tier
//! ([`human`]) waits for a person at the node's audit form. What happens to the node's
//! own auditor account afterwards (slashes, missed seats) is watched by
//! [`crate::alerts`], which reads only the chain.

pub mod computer;
pub mod duties;
pub mod human;
pub mod llm;
#[cfg(feature = "misbehave")]
pub mod misbehave;
pub mod outbox;
pub mod provider;
pub mod seat;
mod seat_metrics;
mod sending;
#[cfg(test)]
mod testkit;
pub mod votes;
