//! Fuzz target `trace_hdag`: what it feeds and what must hold is in `../checks/trace_hdag.rs`, which
//! the workspace's tests also replay on the committed seeds (`tests/it/fuzz_seeds.rs`).
#![no_main]

#[path = "../checks/trace_hdag.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
