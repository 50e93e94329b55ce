//! The LLM tier's judging, pure: ARES scoring ([`ares`], seed 001) over an entailment
//! model the caller supplies, the question as the model sees it and the strict reading of
//! its reply ([`prompt`]), the calibration a model must pass before its votes count
//! ([`calibrate`]) and the consistency probes a vote must survive ([`probe`]).
//!
//! The model is behind [`ares::Entailment`], an async trait: the node implements it with
//! its HTTP client, tests with scripted answers. Nothing here waits on a clock or a socket.

pub mod ares;
pub mod calibrate;
mod entailment;
pub mod probe;
pub mod prompt;
