//! `trust-node simulate`.

use crate::cli::{CliError, CliResult};

/// Arguments of `trust-node simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {}

/// Runs the command.
pub fn run(_args: SimulateArgs) -> CliResult {
    Err(CliError::failed("not built yet"))
}
