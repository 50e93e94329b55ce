//! `trust-node quorum`.

use crate::cli::{CliError, CliResult};

/// Arguments of `trust-node quorum`.
#[derive(Debug, clap::Args)]
pub struct QuorumArgs {}

/// Runs the command.
pub fn run(_args: QuorumArgs) -> CliResult {
    Err(CliError::failed("not built yet"))
}
