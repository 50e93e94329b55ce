//! How a command reaches a node's HTTP API and shows what it answers: where the node is
//! ([`NodeAddr`]), the operator token to send ([`api_token`]), the runtime its requests
//! run on, its errors as the command's ([`api_error`]), a reply as `--json` prints it, and
//! a session's terms as one line ([`terms_line`]).

use clap::Args;

use super::{CliError, keys::expand_home};
use crate::api::addr::ApiAddr;
use crate::{
    api::{client, views::TermsView},
    config,
};

/// Where to find a node's API.
#[derive(Debug, Args)]
pub struct NodeAddr {
    /// Read the API address from this node home's config.toml.
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
    /// The node's API address, overriding the home's config: HOST:PORT, or
    /// http://HOST:PORT as `testnet init` prints it (a trailing / is fine).
    #[arg(long, env = "TRUST_API", value_name = "HOST:PORT")]
    pub api: Option<ApiAddr>,
}

impl NodeAddr {
    pub(super) fn resolve(&self) -> Result<String, CliError> {
        if let Some(a) = &self.api {
            return Ok(a.to_string());
        }
        let home = expand_home(&self.home);
        let cfg = config::load_config(&home).map_err(|e| match e {
            config::HomeError::NoHome(_) => CliError::usage(format!("{e}, or --api HOST:PORT")),
            e => CliError::usage(format!(
                "{e} (pass --api HOST:PORT to reach a node directly)"
            )),
        })?;
        Ok(cfg.api.listen)
    }
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(e.to_string()))
}

/// A reply as `--json` prints it: as JSON with every object's keys sorted (the order a
/// `serde_json::Value` keeps), which is how these commands have always shown the node's
/// answer.
pub(super) fn reply_json(reply: &impl serde::Serialize) -> Result<serde_json::Value, CliError> {
    serde_json::to_value(reply).map_err(|e| CliError::failed(e.to_string()))
}

pub(super) fn api_error(e: client::ClientError) -> CliError {
    match e {
        // A trace or HDAG the node cannot read is the sender's input, though the node
        // answers it 422 as it does a refusal (its reason says which part).
        client::ClientError::Api {
            status: 422,
            ref message,
            ..
        } if ["trace: ", "hdag: ", "decomposition: "]
            .iter()
            .any(|p| message.starts_with(p)) =>
        {
            CliError::usage(e.to_string())
        }
        // Well formed, and refused by the node or what it checked it against.
        client::ClientError::Api {
            status: 403 | 422, ..
        } => CliError::refused(e.to_string()),
        client::ClientError::Api { status, .. } if (400..500).contains(&status) => {
            CliError::usage(e.to_string())
        }
        other => CliError::failed(other.to_string()),
    }
}

/// The operator token to send: the flag (or `TRUST_API_TOKEN`), else the home's token
/// file if there is one. `None`: send none, and let the node say what it needs.
pub(super) fn api_token(flag: Option<&str>, addr: &NodeAddr) -> Result<Option<String>, CliError> {
    if let Some(t) = flag {
        return Ok(Some(t.trim().to_string()));
    }
    let home = expand_home(&addr.home);
    let path = config::load_config(&home)
        .unwrap_or_default()
        .operator_token_path(&home);
    if !path.exists() {
        return Ok(None);
    }
    crate::keys::load_operator_token(&path)
        .map(|t| Some(t.expose().to_string()))
        .map_err(|e| CliError::usage(format!("the operator token: {e}")))
}

/// The one-line summary of a session's terms (`submit --plan`, `query`).
pub fn terms_line(t: &TermsView) -> String {
    let [c, l, h] = t.seats;
    let [wc, wl, wh] = t.tier_weights;
    format!(
        "assurance   k = {c}/{l}/{h} (Computer/LLM/Human), racing {}, tau {}, beta {}, weights {wc}/{wl}/{wh}, tiers {}, domain {}{}, windows {}+{} blocks, max exposure {}",
        t.racing_seats,
        t.tau,
        t.beta,
        t.tiers
            .iter()
            .map(|w| match w.as_str() {
                "computer" => "Computer",
                "llm" => "LLM",
                "human" => "Human",
                other => other,
            })
            .collect::<Vec<_>>()
            .join(","),
        if t.domain.is_empty() {
            "any"
        } else {
            t.domain.as_str()
        },
        if t.domain_required {
            " (required)"
        } else {
            " (preferred)"
        },
        t.commit_window,
        t.reveal_window,
        t.max_exposure
    )
}
