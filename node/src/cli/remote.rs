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

/// Prints a typed reply as the pretty JSON of `--json`.
pub(super) fn print_reply(reply: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(&reply_json(reply)?)
        .map_err(|e| CliError::failed(e.to_string()))?;
    outln!("{text}");
    Ok(())
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

/// The least of an id a command takes for the whole (as the explorer's search does).
const MIN_ID_PREFIX: usize = 8;

/// A session id as a command takes it: 64 hex characters, or from [`MIN_ID_PREFIX`] on the
/// start of exactly one id the node at `addr` knows, which the node's `/search` resolves
/// (the short ids the pages and the docs show).
pub(super) fn resolve_session(addr: &str, given: &str) -> Result<trust_protocol::Hash, CliError> {
    let given = given.trim();
    let hex = given.bytes().all(|b| b.is_ascii_hexdigit());
    if given.len() == 64 && hex {
        return trust_protocol::Hash::from_hex(given)
            .map_err(|_| CliError::usage("session id must be 64 hex characters"));
    }
    if !hex || given.len() < MIN_ID_PREFIX || given.len() > 64 {
        return Err(CliError::usage(format!(
            "session id: 64 hex characters, or its first {MIN_ID_PREFIX} or more, got {given:?}"
        )));
    }
    let (status, location) = search(addr, given)?;
    match (status, location.as_deref()) {
        (303, Some(to)) => match to.strip_prefix("/sessions/") {
            Some(id) => trust_protocol::Hash::from_hex(id)
                .map_err(|_| CliError::failed(format!("the node's search answered {to:?}"))),
            None => Err(CliError::usage(format!(
                "{given} is the start of {to}, not of a session id"
            ))),
        },
        (200, _) => Err(CliError::usage(format!(
            "several ids start with {given}: give more of it (or the whole 64 characters)"
        ))),
        (404, _) => Err(CliError::usage(format!(
            "no session whose id starts with {given} on the node at {addr}"
        ))),
        (s, _) => Err(CliError::failed(format!(
            "the node's search for {given} answered HTTP {s}"
        ))),
    }
}

/// `GET /search?q=PREFIX` at `addr`: the status and the `Location` it redirects to. The
/// page itself is not read past its head.
fn search(addr: &str, prefix: &str) -> Result<(u16, Option<String>), CliError> {
    use std::io::{Read, Write};
    let unreachable = |e: std::io::Error| CliError::failed(format!("cannot reach {addr}: {e}"));
    let sock = addr
        .parse::<std::net::SocketAddr>()
        .ok()
        .or_else(|| std::net::ToSocketAddrs::to_socket_addrs(addr).ok()?.next())
        .ok_or_else(|| CliError::usage(format!("{addr} is no address")))?;
    let timeout = std::time::Duration::from_secs(10);
    let mut s = std::net::TcpStream::connect_timeout(&sock, timeout).map_err(unreachable)?;
    s.set_read_timeout(Some(timeout)).map_err(unreachable)?;
    write!(
        s,
        "GET /search?q={prefix} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(unreachable)?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // The head only, at most 16 KiB.
    while head.len() < 16 * 1024 && !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).map_err(unreachable)? {
            0 => break,
            _ => head.extend_from_slice(&byte),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| CliError::failed(format!("{addr} answered no HTTP status")))?;
    let location = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    Ok((status, location))
}
