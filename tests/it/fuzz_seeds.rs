//! The fuzz targets' checks (`fuzz/checks/`, the bodies the `fuzz/` targets hand to
//! libFuzzer) replayed on every committed seed (`fuzz/corpus/<target>/`) in the ordinary
//! test build: a seed that panics or breaks a round trip fails here, without the
//! instrumented build `scripts/fuzz.sh` needs. Coverage-guided fuzzing itself is
//! `scripts/fuzz.sh` (fuzz/README.md).

use std::{panic, path::PathBuf};

#[path = "../../fuzz/checks/config_toml.rs"]
mod config_toml;
#[path = "../../fuzz/checks/consensus_msgs.rs"]
mod consensus_msgs;
#[path = "../../fuzz/checks/expr.rs"]
mod expr;
#[path = "../../fuzz/checks/segment_docs.rs"]
mod segment_docs;
#[path = "../../fuzz/checks/trace_hdag.rs"]
mod trace_hdag;
#[path = "../../fuzz/checks/wire_tx_block.rs"]
mod wire_tx_block;

/// Runs `check` on every seed of `target`; fails naming each seed that panicked.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    let failed: Vec<String> = seeds
        .iter()
        .filter(|seed| {
            let data = std::fs::read(seed).expect("a seed reads");
            panic::catch_unwind(|| check(&data)).is_err()
        })
        .map(|seed| seed.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} {target} seeds failed its check: {failed:?}",
        failed.len(),
        seeds.len()
    );
}

#[test]
fn wire_tx_block_seeds_hold() {
    replay("wire_tx_block", wire_tx_block::check);
}

#[test]
fn consensus_msgs_seeds_hold() {
    replay("consensus_msgs", consensus_msgs::check);
}

#[test]
fn segment_docs_seeds_hold() {
    replay("segment_docs", segment_docs::check);
}

#[test]
fn trace_hdag_seeds_hold() {
    replay("trace_hdag", trace_hdag::check);
}

#[test]
fn expr_seeds_hold() {
    replay("expr", expr::check);
}

#[test]
fn config_toml_seeds_hold() {
    replay("config_toml", config_toml::check);
}
