//! Fuzz target `consensus_msgs`: what it feeds and what must hold is in `../checks/consensus_msgs.rs`, which
//! the workspace's tests also replay on the committed seeds (`tests/it/fuzz_seeds.rs`).
#![no_main]

#[path = "../checks/consensus_msgs.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
