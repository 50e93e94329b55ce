//! Fuzz target `wire_tx_block`: what it feeds and what must hold is in `../checks/wire_tx_block.rs`, which
//! the workspace's tests also replay on the committed seeds (`tests/it/fuzz_seeds.rs`).
#![no_main]

#[path = "../checks/wire_tx_block.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
