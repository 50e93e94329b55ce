//! Integration tests of the judging core: the Computer checkers on labelled and shaped
//! corpora (`computer_*`), agent transcripts re-run in the sandbox (`agent_corpus`), and
//! of `trust_judging::proof`: labelled corpora (the prompts' own examples, hand-written
//! proofs, generated proofs), step-by-step agreement, structure checks and bad-input
//! safety.

mod agent_corpus;
mod cases;
mod computer_labelled;
mod computer_shapes;
mod corpus;
mod grounding;
mod honeypot_shape;
mod safety;
mod samples;
mod spans;
mod structure;
