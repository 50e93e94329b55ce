//! `sessions`: the sessions this node opened as provider, newest first, with their labels,
//! status and verdict (`GET /v1/sessions?provider=me`, with the operator token).

use clap::Args;

use super::{
    CliError, CliResult,
    remote::{NodeAddr, api_error, api_token, reply_json, runtime},
};
use crate::api::client::Client;

/// `sessions`: list the sessions this node opened.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Only sessions with this label: NAME, or NAME=VALUE (repeat: all must hold).
    #[arg(long = "label", value_name = "NAME[=VALUE]")]
    labels: Vec<String>,
    /// At most this many (1 to 1000).
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Only sessions opened before this time (Unix milliseconds: the `opened_ms` of the
    /// last one a page showed).
    #[arg(long, value_name = "MS")]
    before: Option<u64>,
    /// Print the node's JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// The node's operator token (the list holds the provider's labels). Default: the
    /// home's token file.
    #[arg(long, env = "TRUST_API_TOKEN", hide_env_values = true)]
    api_token: Option<String>,
    #[command(flatten)]
    addr: NodeAddr,
}

/// Runs `sessions`.
pub fn run(args: SessionsArgs) -> CliResult {
    if !(1..=1000).contains(&args.limit) {
        return Err(CliError::usage("--limit must be 1 to 1000"));
    }
    let addr = args.addr.resolve()?;
    let token = api_token(args.api_token.as_deref(), &args.addr)?;
    let listed = runtime()?
        .block_on(Client::new(addr).listed_sessions(
            token.as_deref(),
            &args.labels,
            args.before,
            Some(args.limit),
        ))
        .map_err(api_error)?;
    if args.json {
        outln!("{}", reply_json(&listed)?);
        return Ok(());
    }
    if listed.is_empty() {
        outln!("no session opened by this node matches");
        return Ok(());
    }
    outln!(
        "{:<64}  {:<24}  {:<8}  {:<12}  {:>6}  labels",
        "session",
        "opened (UTC)",
        "status",
        "verdict",
        "fee"
    );
    for s in &listed {
        let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        outln!(
            "{:<64}  {:<24}  {:<8}  {:<12}  {:>6}  {}",
            s.session.to_hex(),
            s.opened,
            s.status,
            s.verdict.as_deref().unwrap_or("-"),
            s.fee,
            labels.join(" ")
        );
    }
    Ok(())
}
