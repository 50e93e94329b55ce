//! Integration tests of `trust_judging::proof`: labelled corpora (the prompts' own
//! examples, hand-written proofs, generated proofs), step-by-step agreement, structure
//! checks and bad-input safety.

mod cases;
mod corpus;
mod safety;
mod samples;
mod structure;
