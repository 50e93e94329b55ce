//! The trust-node crate's integration tests, one binary with a module per scenario: the
//! CLI (`cli_*`, `llm_testnet`), `bench quality` (`quality`), and decomposition by a model (`llm_decompose`).

mod cli_home;
mod cli_keys;
mod cli_local;
mod cli_math;
mod cli_simulate;
mod llm_decompose;
mod llm_testnet;
mod quality;
