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
    /// Print the account id and the sealing public key (never the secrets); with
    /// `--api-token`, print the operator token instead (the secret that opens sessions
    /// through the API and logs a person in to the audit form).
    Show(ShowArgs),
    /// Replace the operator token with a fresh one (0600). A running node takes the new
    /// one at once: the old one is refused from then on, and audit-form logins made with
    /// it are closed.
    RotateApiToken(HomeArgs),
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    #[command(flatten)]
    home: HomeArgs,
    /// Print the operator token (and nothing else).
    #[arg(long)]
    api_token: bool,
}

/// The operator token's path for the home at `home`.
fn token_path(home: &std::path::Path) -> Result<PathBuf, CliError> {
    let cfg = crate::config::load_config(home).map_err(|e| CliError::usage(e.to_string()))?;
    Ok(cfg.operator_token_path(home))
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

/// The node home `path` names (`~/` expanded), which must be one: a directory without a
/// `config.toml` is refused as [`crate::config::HomeError::NoHome`] says, before anything
/// is read from it.
pub(crate) fn node_home(path: &str) -> Result<PathBuf, CliError> {
    let home = expand_home(path);
    crate::config::require_home(&home).map_err(|e| CliError::usage(e.to_string()))?;
    Ok(home)
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
        KeysCommand::Show(ShowArgs {
            home: a,
            api_token: true,
        }) => {
            let home = expand_home(&a.home);
            let path = token_path(&home)?;
            let t = keys::load_operator_token(&path).map_err(|e| {
                CliError::usage(format!(
                    "{e}; a node home gets one from trust-node init (or rotate-api-token)"
                ))
            })?;
            if a.json {
                outln!("{}", json!({"api_token": t.expose()}));
            } else {
                outln!("{}", t.expose());
            }
            Ok(())
        }
        KeysCommand::RotateApiToken(a) => {
            let home = expand_home(&a.home);
            let path = token_path(&home)?;
            keys::rotate_operator_token(&path).map_err(|e| CliError::failed(e.to_string()))?;
            tracing::info!(path = %path.display(), "operator token replaced");
            outln!(
                "operator token replaced in {} (trust-node keys show --api-token prints it); a running node refuses the old one from now on",
                path.display()
            );
            Ok(())
        }
        KeysCommand::Show(ShowArgs { home: a, .. }) => {
            let home = expand_home(&a.home);
            let k = keys::load(&home).map_err(|e| match e {
                keys::KeyError::Io { ref source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    // Neither keys nor a config: a mistyped --home as likely as a
                    // directory whose keys were never made; both are said.
                    if let Err(no_home) = crate::config::require_home(&home) {
                        return CliError::usage(format!(
                            "{no_home}; to make keys there for a node, trust-node keys generate --home {}",
                            home.display()
                        ));
                    }
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
