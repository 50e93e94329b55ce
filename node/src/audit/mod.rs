//! Auditing segments. For now the Computer tier's deterministic checkers; the seat
//! pipeline (watch events, fetch, decrypt, judge, commit, reveal) and the LLM and Human
//! tiers come with the network node.

pub mod computer;
