//! `trust-node keys`: create and show the node's account and sealing keys.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use crate::{
    cli::{CliError, CliResult},
    keys::{self, NodeKeys},
};

/// Arguments of `trust-node keys`.
#[derive(Debug, clap::Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    command: KeysCommand,
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Create the account key (ed25519: signs transactions, names the account) and the
    /// sealing key (X25519: opens segment keys sealed to this node's seats) under
    /// HOME/keys/, readable by the owner only. Never overwrites existing keys.
    Generate(HomeArgs),
    /// Print the account id and the sealing public key (never the secrets).
    Show(HomeArgs),
}

#[derive(Debug, clap::Args)]
struct HomeArgs {
    /// The node's home directory.
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    home: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Expands a leading `~/` to `$HOME`.
pub(crate) fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

fn print(keys: &NodeKeys, json_out: bool) {
    if json_out {
        outln!(
            "{}",
            json!({
                "account": keys.account_id().to_hex(),
                "sealing_key": keys.sealing_public().to_hex(),
            })
        );
    } else {
        outln!("account      {}", keys.account_id());
        outln!("sealing key  {}", keys.sealing_public());
    }
}

/// Runs the command.
pub fn run(args: KeysArgs) -> CliResult {
    match args.command {
        KeysCommand::Generate(a) => {
            let home = expand_home(&a.home);
            let k = keys::generate(&home).map_err(|e| CliError::failed(e.to_string()))?;
            tracing::info!(home = %home.display(), account = %k.account_id(), "generated node keys");
            print(&k, a.json);
            Ok(())
        }
        KeysCommand::Show(a) => {
            let home = expand_home(&a.home);
            let k = keys::load(&home).map_err(|e| match e {
                keys::KeyError::Io { ref source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    CliError::usage(format!(
                        "{e}; create keys first with: trust-node keys generate --home {}",
                        home.display()
                    ))
                }
                other => CliError::usage(other.to_string()),
            })?;
            print(&k, a.json);
            Ok(())
        }
    }
}
