//! Cross-crate integration scenarios (multi-node networks, end-to-end audits) go in this
//! crate's `it/` test binary once the network node exists; per-crate tests live with
//! each crate.
