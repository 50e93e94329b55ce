//! `trust-node econ`.

use crate::cli::{CliError, CliResult};

/// Arguments of `trust-node econ`.
#[derive(Debug, clap::Args)]
pub struct EconArgs {}

/// Runs the command.
pub fn run(_args: EconArgs) -> CliResult {
    Err(CliError::failed("not built yet"))
}
