//! The TRUST audit contract as a deterministic state machine (not built yet).
//!
//! This crate will hold `Contract::apply` / `end_block` / `state_root` over the
//! transaction set in `trust_protocol::tx`, and the seeded simulator behind the `sim`
//! feature. Like `trust-protocol` it stays pure: no async runtime, no clock, no OS
//! randomness, no floats in state.
#![forbid(unsafe_code)]
