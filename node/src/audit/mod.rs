//! Auditing segments: one judging interface for every tier ([`judge`]), the Computer
//! tier's deterministic checkers ([`computer`]: pure; `decompose` asks them only what
//! they can read, through [`computer::readable`]), a local preview of a network audit
//! ([`preview`]), the seat's vote book (votes and salts persisted before committing), the
//! seat pipeline on a running node (fetch, decrypt, judge, commit, reveal), the duties a
//! decided block gives the node ([`duties`]: a pure planner and the task that carries it out),
//! the provider's duties (submit, deliver keys, open the mapping), and the outbox both
//! sign their transactions through. The LLM tier ([`llm`]) judges by ARES over an
//! OpenAI-compatible endpoint; the Human tier ([`human`]) waits for a person at the
//! node's audit form.

pub mod computer;
pub mod duties;
#[cfg(test)]
mod formal_tests;
pub mod human;
pub mod judge;
pub mod llm;
#[cfg(feature = "misbehave")]
pub mod misbehave;
pub mod outbox;
pub mod preview;
pub mod provider;
pub mod quality;
pub mod seat;
mod sending;
#[cfg(test)]
mod testkit;
pub mod votes;
