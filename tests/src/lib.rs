//! Cross-crate integration scenarios live in this crate's one test binary, `it/`
//! (`cargo nextest run -p trust-tests`): multi-node networks of real `trust-node run`
//! processes, the libp2p swarm and Bitswap on loopback, the Kubo RPC client, and LLM seats
//! against real and stand-in endpoints. Per-crate tests live with each crate.
