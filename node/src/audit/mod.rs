//! Auditing segments: the Computer tier's deterministic checkers and the seat's vote book
//! (votes and salts persisted before committing). The seat pipeline (watch events, fetch,
//! decrypt, judge, commit, reveal) and the LLM and Human tiers come with the network node.

pub mod computer;
pub mod votes;
