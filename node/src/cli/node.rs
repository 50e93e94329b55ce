//! `run`, `status`, `query` and `auditor register`: running a node and talking to one
//! through its HTTP API.

use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::json;
use trust_protocol::{
    Signed, encoding,
    tx::{Call, Tier, Tx},
};

use super::{CliError, CliResult, keys::expand_home};
use crate::{client, config, daemon, keys};

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::failed(e.to_string())
}

/// `run`: start the node daemon.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The node's home directory (config.toml, genesis.json, keys, data).
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
    /// HTTP API address, overriding `api_listen` (e.g. 127.0.0.1:8480).
    #[arg(long)]
    pub api_listen: Option<String>,
    /// libp2p address of the node's swarm, overriding `p2p_listen`.
    #[arg(long)]
    pub p2p_listen: Option<String>,
    /// libp2p address of the consensus engine, overriding `consensus_listen`.
    #[arg(long)]
    pub consensus_listen: Option<String>,
    /// Least time between blocks in milliseconds, overriding `block_time_ms`.
    #[arg(long)]
    pub block_time_ms: Option<u64>,
}

/// Runs the daemon on a multi-threaded runtime until SIGINT/SIGTERM.
pub fn run_node(args: RunArgs) -> CliResult {
    let home = expand_home(&args.home);
    if !home.join(config::CONFIG_FILE).exists() {
        return Err(CliError::usage(format!(
            "{} has no config.toml: run `trust-node init --home {}` or `trust-node testnet init` first",
            home.display(),
            home.display()
        )));
    }
    let overrides = daemon::Overrides {
        api_listen: args.api_listen,
        p2p_listen: args.p2p_listen,
        consensus_listen: args.consensus_listen,
        block_time: args.block_time_ms.map(Duration::from_millis),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    rt.block_on(daemon::run(&home, overrides))
        .map_err(|e| match e {
            daemon::DaemonError::Home(m) => CliError::usage(m),
            other => failed(other),
        })
}

/// Where to find a node's API.
#[derive(Debug, Args)]
pub struct NodeAddr {
    /// Read the API address from this node home's config.toml.
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
    /// The API address (host:port), overriding the home's config.
    #[arg(long, env = "TRUST_API")]
    pub api: Option<String>,
}

impl NodeAddr {
    fn resolve(&self) -> Result<String, CliError> {
        if let Some(a) = &self.api {
            return Ok(a.clone());
        }
        let home = expand_home(&self.home);
        let cfg = config::load_config(&home).map_err(|e| {
            CliError::usage(format!(
                "{e} (pass --api HOST:PORT to reach a node directly)"
            ))
        })?;
        Ok(cfg.api_listen)
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(failed)
}

fn api_error(e: client::ClientError) -> CliError {
    match e {
        client::ClientError::Api { status, .. } if (400..500).contains(&status) => {
            CliError::usage(e.to_string())
        }
        other => failed(other),
    }
}

/// `status`: the node's height, state root and peers.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    addr: NodeAddr,
    /// Print the API's JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `status`.
pub fn run_status(args: StatusArgs) -> CliResult {
    let addr = args.addr.resolve()?;
    let s = runtime()?
        .block_on(client::get(&addr, "/v1/status"))
        .map_err(api_error)?;
    if args.json {
        outln!("{s}");
        return Ok(());
    }
    outln!("node        {}", s["node_id"].as_str().unwrap_or("?"));
    outln!("validator   {}", s["validator"]);
    outln!("height      {}", s["height"]);
    outln!("tip         {}", s["tip_hash"].as_str().unwrap_or("?"));
    outln!("state root  {}", s["state_root"].as_str().unwrap_or("?"));
    outln!("peers       {}", s["peers"]);
    if let Some(ph) = s["peer_heights"].as_array() {
        for p in ph {
            outln!(
                "  {}  height {}",
                p["peer"].as_str().unwrap_or("?"),
                p["height"]
            );
        }
    }
    outln!("mempool     {}", s["mempool"]);
    Ok(())
}

/// `query`: a session's outcome.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The session id (64 hex characters).
    pub session: String,
    #[command(flatten)]
    addr: NodeAddr,
    /// Print the API's JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `query`.
pub fn run_query(args: QueryArgs) -> CliResult {
    if args.session.len() != 64 || !args.session.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CliError::usage(format!(
            "session id must be 64 hex characters, got {:?}",
            args.session
        )));
    }
    let addr = args.addr.resolve()?;
    let s = runtime()?
        .block_on(client::get(
            &addr,
            &format!("/v1/sessions/{}", args.session),
        ))
        .map_err(api_error)?;
    if args.json {
        outln!("{s}");
        return Ok(());
    }
    outln!("session     {}", args.session);
    outln!("status      {}", s["status"].as_str().unwrap_or("?"));
    match s["status"].as_str() {
        Some("decided") => {
            let o = &s["outcome"];
            outln!("trace       {}", o["trace"]);
            outln!(
                "weight      {} passing of {}",
                o["passing_weight"],
                o["total_weight"]
            );
            if let Some(segs) = o["segments"].as_array() {
                for (i, seg) in segs.iter().enumerate() {
                    outln!("segment {i:<3} {}", seg["verdict"]);
                }
            }
            outln!(
                "block       {} {}",
                s["block_height"],
                s["block_hash"].as_str().unwrap_or("?")
            );
        }
        Some("live") => outln!("phase       {}", s["phase"]),
        Some("failed") => outln!("failure     {}", s["failure"]),
        _ => {}
    }
    Ok(())
}

/// `auditor`: auditor account actions.
#[derive(Debug, Args)]
pub struct AuditorArgs {
    #[command(subcommand)]
    command: AuditorCommand,
}

#[derive(Debug, Subcommand)]
enum AuditorCommand {
    /// Register this node's account as an auditor of a tier and bond stake, in two
    /// transactions signed with the home's account key and sent to its node.
    Register(RegisterArgs),
}

#[derive(Debug, Args)]
struct RegisterArgs {
    /// computer, llm or human.
    #[arg(long)]
    tier: String,
    /// Stake to bond (at least the tier's minimum in the genesis parameters).
    #[arg(long)]
    stake: u64,
    /// Expertise domains (repeatable), e.g. --expertise math.
    #[arg(long)]
    expertise: Vec<String>,
    #[command(flatten)]
    addr: NodeAddr,
}

fn parse_tier(s: &str) -> Result<Tier, CliError> {
    match s.to_ascii_lowercase().as_str() {
        "computer" => Ok(Tier::Computer),
        "llm" => Ok(Tier::Llm),
        "human" => Ok(Tier::Human),
        other => Err(CliError::usage(format!(
            "unknown tier {other:?}: use computer, llm or human"
        ))),
    }
}

/// Runs `auditor`.
pub fn run_auditor(args: AuditorArgs) -> CliResult {
    let AuditorCommand::Register(a) = args.command;
    let tier = parse_tier(&a.tier)?;
    if a.stake == 0 {
        return Err(CliError::usage("--stake must be positive"));
    }
    let home = expand_home(&a.addr.home);
    let k = keys::load(&home).map_err(|e| CliError::usage(e.to_string()))?;
    let addr = a.addr.resolve()?;
    let me = k.account_id();
    let rt = runtime()?;
    let acct = rt
        .block_on(client::get(&addr, &format!("/v1/accounts/{me}")))
        .map_err(api_error)?;
    let nonce = acct["next_nonce"]
        .as_u64()
        .ok_or_else(|| CliError::failed("account answer has no next_nonce"))?;
    let registered = match rt.block_on(client::get(&addr, &format!("/v1/auditors/{me}"))) {
        Ok(a) => Some(a),
        Err(client::ClientError::Api { status: 404, .. }) => None,
        Err(e) => return Err(api_error(e)),
    };
    let mut calls = Vec::new();
    match &registered {
        Some(existing)
            if existing["tier"].as_str().map(str::to_ascii_lowercase)
                != Some(format!("{tier:?}").to_ascii_lowercase()) =>
        {
            return Err(CliError::usage(format!(
                "{me} is already an auditor of tier {}; only bonding more stake is possible",
                existing["tier"]
            )));
        }
        Some(_) => outln!("{me} is already registered; bonding {} more", a.stake),
        None => calls.push(Call::RegisterAuditor {
            tier,
            expertise: a.expertise,
            sealing_key: k.sealing_public(),
        }),
    }
    calls.push(Call::Bond { amount: a.stake });
    let txs = calls
        .into_iter()
        .zip(nonce..)
        .map(|(call, nonce)| Tx { nonce, call });
    for tx in txs {
        let signed = Signed::sign(&k.account, tx);
        let body = json!({"tx": hex::encode(encoding::encode(&signed))});
        let r = rt
            .block_on(client::post(&addr, "/v1/tx", &body))
            .map_err(api_error)?;
        outln!("submitted {}", r["id"].as_str().unwrap_or("?"));
    }
    outln!(
        "auditor {me}: registration and bond of {} sent; `trust-node status` shows the height they land at",
        a.stake
    );
    Ok(())
}
