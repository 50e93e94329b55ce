//! `trust-node`: one binary for auditors, providers, users and operators of a TRUST network.

use std::process::ExitCode;

fn main() -> ExitCode {
    trust_node::cli::run()
}
