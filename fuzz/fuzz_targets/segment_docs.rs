//! Fuzz target `segment_docs`: what it feeds and what must hold is in `../checks/segment_docs.rs`, which
//! the workspace's tests also replay on the committed seeds (`tests/it/fuzz_seeds.rs`).
#![no_main]

#[path = "../checks/segment_docs.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
