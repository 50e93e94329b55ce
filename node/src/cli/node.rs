//! `run`, `status`, `query` and `submit`: running a node and talking to one through its
//! HTTP API (`auditor` is in [`super::auditor`]).

use std::time::Duration;

use clap::Args;
use serde_json::json;
use trust_contracts::{CastVote, Outcome, Phase, SegmentVerdict};
use trust_protocol::{
    Hash, Vote,
    hdag::MAX_HDAG_JSON_BYTES,
    trace::{MAX_TRACE_BYTES, Trace},
};

use super::{CliError, CliResult, keys::expand_home};
use crate::{
    api::{
        client::{self, Client},
        views::{OpenSessionBody, SessionStatus, SessionView},
    },
    audit::preview::summary_line,
    config, daemon,
};

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
    /// An external IPFS node's RPC API (e.g. http://127.0.0.1:5001), overriding
    /// `ipfs_api`: provided ciphertexts are stored there too and seats read from it first.
    #[arg(long)]
    pub ipfs_api: Option<String>,
    /// Base URL of an OpenAI-compatible chat endpoint for this node's LLM seats (e.g.
    /// http://127.0.0.1:8080/v1), overriding `llm_url`.
    #[arg(long)]
    pub llm_url: Option<String>,
    /// The model name sent to the LLM endpoint, overriding `llm_model`.
    #[arg(long)]
    pub llm_model: Option<String>,
    /// The name of the environment variable that holds the LLM endpoint's API key,
    /// overriding `llm_api_key_env` (the key itself is never passed as a flag).
    #[arg(long)]
    pub llm_api_key_env: Option<String>,
    /// Human seats: this node's Human-tier seats wait for a person at the audit form
    /// (`/audit` on the API address; log in with the operator token), as `human = true`
    /// in config.toml does. Register the node with `auditor register --tier human`.
    #[arg(long)]
    pub human: bool,
    /// Join from a recent state instead of replaying every block: when the ledger holds
    /// no block (a new node, or a genesis validator that never ran), fetch the newest
    /// contract snapshot from these nodes' APIs (`HOST:PORT`, comma-separated, tried in
    /// turn), check it against its block's state root and the next block's commit
    /// certificate (more than 2/3 of the genesis validators' power), start the ledger
    /// there and sync the blocks after it. Ignored when the ledger holds blocks.
    #[arg(long, value_name = "HOST:PORT[,...]", value_delimiter = ',')]
    pub state_sync: Vec<String>,
    /// With `--state-sync`: take the snapshot at this block, whose hash you read from a
    /// node you trust (`GET /v1/blocks/HEIGHT` there; a snapshot height a peer holds is in
    /// its `GET /v1/snapshot` answer), instead of checking the next block's certificate
    /// against the genesis validators: for a network whose validator powers moved since
    /// genesis, which that check refuses.
    #[arg(long, value_name = "HEIGHT:HASH", requires = "state_sync")]
    pub state_sync_trust: Option<crate::proof::TrustedBlock>,
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
        ipfs_api: args.ipfs_api,
        llm_url: args.llm_url,
        llm_model: args.llm_model,
        llm_api_key_env: args.llm_api_key_env,
        human: args.human,
        state_sync: args.state_sync,
        state_sync_trust: args.state_sync_trust,
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
    pub(super) fn resolve(&self) -> Result<String, CliError> {
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

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(failed)
}

/// A reply as `--json` prints it: as JSON with every object's keys sorted (the order a
/// `serde_json::Value` keeps), which is how these commands have always shown the node's
/// answer.
pub(super) fn reply_json(reply: &impl serde::Serialize) -> Result<serde_json::Value, CliError> {
    serde_json::to_value(reply).map_err(failed)
}

/// `value`, or `null` where the node sent none (as these lines have always shown it).
fn or_null(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "null".to_string(), |v| v.to_string())
}

pub(super) fn api_error(e: client::ClientError) -> CliError {
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
        .block_on(Client::new(addr).status())
        .map_err(api_error)?;
    if args.json {
        outln!("{}", reply_json(&s)?);
        return Ok(());
    }
    outln!("node        {}", s.node_id);
    outln!("validator   {}", s.validator);
    outln!("height      {}", s.height);
    outln!("tip         {}", s.tip_hash);
    outln!("state root  {}", s.state_root);
    outln!("peers       {}", s.peers);
    for p in &s.peer_heights {
        outln!("  {}  height {}", p.peer, p.height);
    }
    outln!("mempool     {}", s.mempool);
    let st = &s.storage;
    outln!(
        "blocks      {} to {} held",
        s.oldest_block.map_or("none".to_string(), |o| o.to_string()),
        s.height
    );
    outln!(
        "state       {} accounts, {} auditors, {} live sessions, {} outcomes, {} failed, {} tree nodes",
        st.accounts,
        st.auditors,
        st.live_sessions,
        st.outcomes,
        st.failed,
        st.tree_nodes
    );
    outln!(
        "disk        {:.1} MiB",
        st.disk_bytes as f64 / (1024.0 * 1024.0)
    );
    if let Some(llm) = &s.llm {
        outln!(
            "llm         {} model {}: {}",
            llm.url,
            llm.model,
            match &llm.error {
                _ if llm.answers => "answers".to_string(),
                Some(e) => format!("does not answer ({e})"),
                None => "does not answer".to_string(),
            }
        );
    }
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
    /// Fetch the outcome's proof and check it against this home's genesis.json (chain id,
    /// validator keys and stakes, with every change of the validator powers walked from
    /// genesis), trusting nothing the node says; exits 1 if any part fails.
    #[arg(long)]
    verify: bool,
    /// Under each segment, list its revealed votes: the seat (short id), the vote, and the
    /// reason the seat bound into its commitment.
    #[arg(long)]
    segments: bool,
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
    if args.verify {
        return verify_query(&args, &addr);
    }
    let sid = Hash::from_hex(&args.session)
        .map_err(|_| CliError::usage("session id must be 64 hex characters"))?;
    let s = runtime()?
        .block_on(Client::new(addr).session(&sid))
        .map_err(api_error)?;
    if args.json {
        outln!("{}", reply_json(&s)?);
        return Ok(());
    }
    print_session(&args.session, &s, &[], args.segments);
    Ok(())
}

/// `query --verify`: fetches `/v1/sessions/{id}/proof` and checks it locally.
fn verify_query(args: &QueryArgs, addr: &str) -> CliResult {
    let sid = trust_protocol::Hash::from_hex(&args.session)
        .map_err(|_| CliError::usage("session id must be 64 hex characters"))?;
    let home = expand_home(&args.addr.home);
    let doc = config::load_genesis(&home).map_err(|e| {
        CliError::usage(format!(
            "{e} (--verify checks against the home's genesis.json)"
        ))
    })?;
    let proof = super::proof::fetch_proof(addr, &sid, None)?;
    let trust = crate::proof::Trust {
        chain: doc.chain_id(),
        validators: &doc.validators,
        genesis: &doc.genesis,
        block: None,
    };
    let v = crate::proof::verify(&proof, &sid, &trust)
        .map_err(|e| CliError::failed(format!("proof REJECTED: {e}")))?;
    if args.json {
        let outcome = serde_json::to_value(&v.outcome).map_err(failed)?;
        outln!(
            "{}",
            json!({
                "session": sid,
                "verified": true,
                "final": matches!(v.outcome.finality(), trust_contracts::Finality::Final { .. }),
                "height": v.header.height,
                "block_hash": v.header.hash(),
                "certified_time_ms": v.header.time_ms,
                "certified_time": crate::chain::format_time(v.header.time_ms),
                "state_root": v.header.state_root,
                "signed_power": v.power.0.to_string(),
                "total_power": v.power.1.to_string(),
                "power_changes_walked": v.hops,
                "outcome": outcome,
            })
        );
        return Ok(());
    }
    outln!("session     {sid}");
    outln!("verdict     {:?}", v.outcome.trace);
    outln!(
        "finality    {}",
        super::proof::finality_text(v.outcome.finality().into())
    );
    outln!(
        "decided     at block {}, by {} (the certified block's time)",
        v.outcome.decided_at,
        crate::chain::format_time(v.header.time_ms)
    );
    outln!(
        "verified    outcome under state root {} of block {} ({}),",
        v.header.state_root,
        v.header.height,
        v.header.hash()
    );
    outln!(
        "            certified by validators holding {} of {} voting power (genesis chain {})",
        v.power.0,
        v.power.1,
        doc.chain_id()
    );
    outln!(
        "            (powers walked from genesis through {} change(s))",
        v.hops.len()
    );
    Ok(())
}

/// A session phase as one line: `Commit { round: 0, until: 12 }` reads
/// `commit (round 0, open until block 12)`.
fn phase_text(p: &Phase) -> String {
    match *p {
        Phase::Assigning => "assigning".into(),
        Phase::Commit { round, until } => {
            format!("commit (round {round}, open until block {until})")
        }
        Phase::Reveal { round, until } => {
            format!("reveal (round {round}, open until block {until})")
        }
        Phase::Disclose { until } => format!("disclose (open until block {until})"),
    }
}

/// The name the API gives a unit variant (`Invalid`, `Computer`): its Rust name, as a
/// string that `{:<10}` pads.
fn word(v: impl std::fmt::Debug) -> String {
    format!("{v:?}")
}

/// Why a segment verdict is an error, in the ARES terms the paper uses.
fn error_kind(verdict: &str) -> &'static str {
    match verdict {
        "Invalid" => "invalid: the step does not follow from its premises",
        "Ungrounded" => "ungrounded: rests on a claim nothing established",
        "Propagated" => "propagated: depends on a step that failed",
        "Undecided" => "undecided: no quorum (its seats abstained or split)",
        _ => "",
    }
}

/// `why` with each `#i` the node wrote replaced by the provider's name for segment `i`,
/// where it knows one.
fn with_names(why: &str, names: &[String]) -> String {
    let mut out = String::with_capacity(why.len());
    let mut rest = why;
    while let Some(at) = rest.find('#') {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let digits = after
            .get(1..)
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        let number = after.get(1..=digits).unwrap_or("");
        match number.parse::<usize>().ok().and_then(|i| names.get(i)) {
            Some(name) if digits > 0 => out.push_str(name),
            _ => out.push_str(after.get(..=digits).unwrap_or(after)),
        }
        rest = after.get(digits.saturating_add(1)..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// Prints a session as `query` and `submit --wait` show it; `names` are the provider's
/// labels for the segments (HDAG node id and tier), known only to the provider's node.
/// A decided session in lines a person reads; with `votes`, each segment's revealed votes
/// and their reasons under it.
fn print_session(id: &str, s: &SessionView, names: &[String], votes: bool) {
    outln!("session     {id}");
    if let Some(t) = &s.terms {
        outln!("{}", terms_line(t));
    }
    match (s.status, &s.outcome) {
        (SessionStatus::Decided, Some(o)) => {
            outln!(
                "status      decided at block {} ({})",
                or_null(s.block_height),
                s.block_hash.map_or_else(|| "?".to_string(), |h| h.to_hex())
            );
            if let Some(t) = &s.decided_time {
                outln!("decided     {t}");
            }
            if let Some(f) = &s.finality {
                outln!("{}", super::appeal::finality_line(f, &s.session));
            }
            print_outcome(o, s.explanation.as_deref(), names, votes);
            for line in super::appeal::appeal_lines(s) {
                outln!("{line}");
            }
        }
        (SessionStatus::Live, _) => {
            outln!(
                "status      live, {}",
                s.phase.as_ref().map_or_else(|| "null".into(), phase_text)
            );
            outln!(
                "seats       {} drawn, {} committed, {} revealed",
                or_null(s.seats.map(|c| c.assigned)),
                or_null(s.seats.map(|c| c.committed)),
                or_null(s.seats.map(|c| c.revealed))
            );
        }
        (SessionStatus::Failed, _) => {
            outln!("status      failed");
            outln!(
                "failure     {}",
                s.failure.as_ref().map_or("?", |f| f.reason.as_str())
            );
        }
        (other, None) => outln!("status      {}", other.as_str()),
    }
}

/// The lines of a decided session's outcome under its status line.
fn print_outcome(o: &Outcome, explanation: Option<&str>, names: &[String], votes: bool) {
    let beta = f64::from(o.beta.0) / 10_000.0;
    let segs = &o.segments;
    let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
    // Honeypots, and the calculations planted beside them, are not part of the trace.
    let failed: Vec<(String, SegmentVerdict)> = segs
        .iter()
        .enumerate()
        .filter(|(i, _)| !crate::query::planted(o, *i))
        .filter_map(|(i, seg)| match seg.verdict {
            v @ (SegmentVerdict::Invalid | SegmentVerdict::Ungrounded) => Some((name(i), v)),
            _ => None,
        })
        .collect();
    let cov = &o.coverage;
    outln!(
        "verdict     {}",
        summary_line(
            o.trace,
            usize::from(cov.judged),
            usize::from(cov.segments),
            &failed
        )
    );
    if let Some(why) = explanation {
        outln!("why         {}", with_names(why, names));
    }
    outln!(
        "weights     {} passing, {} undecided, of {} (the trace passes at {beta:.0}%){}",
        o.passing_weight,
        o.undecided_weight,
        o.total_weight,
        if o.error_at_conclusion {
            "; an error reaches the conclusion"
        } else {
            ""
        }
    );
    let parts: Vec<String> = ["Computer", "LLM", "Human"]
        .iter()
        .zip(cov.left_out)
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| format!("{n} {t}"))
        .collect();
    if !parts.is_empty() {
        outln!(
            "left out    {} (no such auditors on the network; counted as undecided)",
            parts.join(", ")
        );
    }
    match o.bound.hoeffding_neg_ln_milli {
        m if m > 0 => outln!(
            "bound       Pr[wrong trace verdict] <= e^-{:.3} (Hoeffding, over the {} judged segments, from the seats' error rates)",
            m as f64 / 1000.0,
            cov.judged
        ),
        _ => outln!("bound       none (too few counted votes to bound the verdict)"),
    }
    if !segs.is_empty() {
        outln!(
            "segments    #   {:<10} {:<9} {:<11} votes v/i/u/abstain (missing)",
            "node",
            "tier",
            "verdict"
        );
        for (i, seg) in segs.iter().enumerate() {
            let verdict = word(seg.verdict);
            let v = &seg.votes;
            let kind = match (seg.honeypot, seg.supports) {
                (Some(truth), _) => {
                    format!("honeypot (known {truth:?}): not part of the trace")
                }
                (None, Some(step)) if crate::query::planted(o, i) => {
                    format!(
                        "calculation of honeypot {}: not part of the trace",
                        name(usize::from(step))
                    )
                }
                (None, Some(step)) => {
                    let of = name(usize::from(step));
                    match error_kind(&verdict) {
                        "" => format!("calculation of {of}"),
                        k => format!("calculation of {of}; {k}"),
                    }
                }
                (None, None) => error_kind(&verdict).to_string(),
            };
            outln!(
                "            {i:<3} {:<10} {:<9} {verdict:<11} {}/{}/{}/{} ({}){}{}",
                name(i),
                word(seg.tier),
                v.valid,
                v.invalid,
                v.ungrounded,
                v.abstained,
                v.missing,
                if kind.is_empty() { "" } else { "  " },
                kind
            );
            if votes {
                for line in vote_lines(&seg.votes_cast) {
                    outln!("{line}");
                }
            }
        }
    }
    // Left-out segments are wrong only through a calculation of their own or a
    // step they rest on.
    let left_name = |j: usize| name(segs.len().saturating_add(j));
    let with = |v: SegmentVerdict| -> Vec<String> {
        o.left_out
            .iter()
            .enumerate()
            .filter(|(_, l)| l.verdict == v)
            .map(|(j, _)| left_name(j))
            .collect()
    };
    for (v, why) in [
        (SegmentVerdict::Invalid, "a calculation in it is wrong"),
        (
            SegmentVerdict::Ungrounded,
            "a calculation in it uses a number nothing gives",
        ),
        (SegmentVerdict::Propagated, "rests on a step that failed"),
    ] {
        let names = with(v);
        if !names.is_empty() {
            outln!("left out    {} {v:?}: {why}", names.join(", "));
        }
    }
}

/// One line per revealed vote of a segment's `votes_cast`: the seat's short id, the vote,
/// a mark for a late or second-round vote, and the reason on one line (newlines and tabs
/// as spaces; any other control character, which the contract refuses anyway, as `?`).
fn vote_lines(cast: &[CastVote]) -> Vec<String> {
    cast.iter()
        .map(|v| {
            let seat = v.seat.to_hex();
            let vote = word(v.vote);
            let mut marks = Vec::new();
            if v.round > 0 {
                marks.push(format!("round {}", v.round));
            }
            if !v.counted && v.vote != Vote::Abstain {
                marks.push("late".to_string());
            }
            let reason: String = v
                .reason
                .chars()
                .map(|c| match c {
                    '\n' | '\t' => ' ',
                    c if c.is_control() || trust_protocol::commit::is_format_char(c) => '?',
                    c => c,
                })
                .collect();
            format!(
                "                vote {}… {vote:<10}{}{}",
                seat.get(..12).unwrap_or(&seat),
                if marks.is_empty() {
                    String::new()
                } else {
                    format!("({}) ", marks.join(", "))
                },
                if reason.is_empty() {
                    "(no reason given)"
                } else {
                    &reason
                }
            )
        })
        .collect()
}

/// `submit`: open an audit session for a trace on this node (as provider).
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The trace: JSON `{problem, thinking, output}` or text with the paper's headings.
    pub trace: std::path::PathBuf,
    /// The provider's own HDAG (the paper's JSON) instead of the built-in decomposition.
    #[arg(long)]
    pub hdag: Option<std::path::PathBuf>,
    /// Who decomposes the trace: `heuristic`, the node's built-in builder, or `llm`, the
    /// paper's five steps asked here of the endpoint at --llm-url (default: the home's
    /// `llm_url`), the result sent as the provider's HDAG. When the model's output cannot
    /// be used, the node's heuristic builder is used, with a warning naming the step.
    #[arg(long, value_enum, default_value_t = DecomposeMode::Heuristic, conflicts_with = "hdag")]
    pub decompose: DecomposeMode,
    #[command(flatten)]
    pub endpoint: super::local::LlmEndpointArgs,
    #[command(flatten)]
    pub assurance: AssuranceArgs,
    /// Print what the session would be (each segment's tier and seats or why it is left
    /// out, the fee, the most of the trace one auditor could see) and submit nothing.
    #[arg(long, conflicts_with = "wait")]
    pub plan: bool,
    /// Wait for the outcome, showing the session's phase as it moves.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_secs: u64,
    /// The node's operator token (opening a session spends the node's funds, so the node
    /// asks for it). Default: read from the home's token file (`operator.token`, see
    /// `trust-node keys show --api-token`).
    #[arg(long, env = "TRUST_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    #[command(flatten)]
    addr: NodeAddr,
}

/// The session's assurance, over the node's `[session]` defaults (`config.toml`).
#[derive(Debug, Clone, Default, Args)]
#[command(
    next_help_heading = "Assurance (defaults: the node's [session] table, else k = 3, no racing, tau = beta = 0.6)"
)]
pub struct AssuranceArgs {
    /// Seats whose votes count per segment: one number for every tier, or per tier as
    /// `computer=5,llm=3,human=1`.
    #[arg(long, value_name = "K|TIER=K,...")]
    pub seats: Option<String>,
    /// Racing seats drawn beyond k per segment (the first k reveals count).
    #[arg(long, value_name = "N")]
    pub racing: Option<u8>,
    /// Seat quorum tau: a segment is decided by ceil(tau k) agreeing votes (0.5..=1).
    #[arg(long)]
    pub tau: Option<f64>,
    /// Trace quorum beta: the share of the trace's weight that must pass (0..=1).
    #[arg(long)]
    pub beta: Option<f64>,
    /// Segment weight per tier, e.g. `computer=1,llm=2,human=3`.
    #[arg(long, value_name = "TIER=W,...")]
    pub tier_weights: Option<String>,
    /// The tiers that may judge, e.g. `computer,llm`: segments routed to others are left
    /// out, and nothing escalates to them.
    #[arg(long, value_name = "TIER,...")]
    pub tiers: Option<String>,
    /// Expertise domain of the seats, e.g. `medicine`: only auditors declaring it are
    /// drawn (add --prefer-domain to only favour them).
    #[arg(long)]
    pub domain: Option<String>,
    /// With --domain: favour auditors declaring the domain instead of requiring it.
    #[arg(long, requires = "domain")]
    pub prefer_domain: bool,
    /// The fee to escrow (default and least: one reward per counted seat).
    #[arg(long)]
    pub fee: Option<u64>,
    /// Blocks each commit window stays open (default: the network's).
    #[arg(long, value_name = "BLOCKS")]
    pub commit_window: Option<u16>,
    /// Blocks each reveal window stays open (default: the network's).
    #[arg(long, value_name = "BLOCKS")]
    pub reveal_window: Option<u16>,
    /// The exposure budget: the largest share of the trace's segments one auditor account
    /// may receive keys or text of, e.g. 0.5; segments the draw could not staff within it
    /// are left out. It counts per account: an operator running several auditor accounts
    /// may pool what they see.
    #[arg(long, value_name = "SHARE")]
    pub max_exposure: Option<f64>,
}

/// `computer=5,llm=3` (or a bare value for every tier) as per-tier values.
fn per_tier<T: std::str::FromStr>(
    flag: &str,
    s: &str,
) -> Result<(Option<T>, [Option<T>; 3]), CliError> {
    let bad = |why: String| CliError::usage(format!("--{flag} {s}: {why}"));
    if !s.contains('=') {
        let v = s.trim().parse().map_err(|_| bad("not a number".into()))?;
        return Ok((Some(v), [None, None, None]));
    }
    let mut out: [Option<T>; 3] = [None, None, None];
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (tier, v) = part
            .split_once('=')
            .ok_or_else(|| bad(format!("{part:?} is not TIER=VALUE")))?;
        let tier =
            crate::audit::provider::terms::parse_tier(tier).map_err(|e| bad(e.to_string()))?;
        let v = v
            .trim()
            .parse()
            .map_err(|_| bad(format!("{v:?} is not a number")))?;
        let slot = match tier {
            trust_protocol::tx::Tier::Computer => 0,
            trust_protocol::tx::Tier::Llm => 1,
            trust_protocol::tx::Tier::Human => 2,
        };
        if let Some(o) = out.get_mut(slot) {
            *o = Some(v);
        }
    }
    Ok((None, out))
}

impl AssuranceArgs {
    /// The settings given on the command line (`None` when none is).
    pub fn options(
        &self,
    ) -> Result<Option<crate::audit::provider::terms::SessionOptions>, CliError> {
        let mut o = crate::audit::provider::terms::SessionOptions::default();
        if let Some(s) = &self.seats {
            let (all, [c, l, h]) = per_tier::<u8>("seats", s)?;
            o.seats = all;
            o.computer_seats = c;
            o.llm_seats = l;
            o.human_seats = h;
        }
        if let Some(s) = &self.tier_weights {
            let (all, [c, l, h]) = per_tier::<u32>("tier-weights", s)?;
            o.computer_weight = c.or(all);
            o.llm_weight = l.or(all);
            o.human_weight = h.or(all);
        }
        o.racing_seats = self.racing;
        o.tau = self.tau;
        o.beta = self.beta;
        o.tiers = self.tiers.as_ref().map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        });
        o.domain = self.domain.clone();
        o.require_domain = self.prefer_domain.then_some(false);
        o.fee = self.fee;
        o.commit_window = self.commit_window;
        o.reveal_window = self.reveal_window;
        o.max_exposure = self.max_exposure;
        Ok((!o.is_empty()).then_some(o))
    }
}

/// Prints a plan as `submit --plan` shows it.
fn print_plan(p: &crate::api::views::Plan) {
    let t = &p.terms;
    outln!("{}", terms_line(t));
    outln!(
        "auditors    {} Computer, {} LLM, {} Human could be drawn",
        p.auditors[0],
        p.auditors[1],
        p.auditors[2]
    );
    outln!("{:<28} {:<9} seats", "segment", "tier");
    for s in &p.segments {
        outln!("{:<28} {:<9} {}", s.node, tier_label(s.tier), s.seats);
    }
    for (node, tier, why) in &p.left_out {
        outln!("{:<28} {:<9} left out: {why}", node, tier_label(*tier));
    }
    outln!(
        "fee         {} (and a honeypot bond of {}, returned unless its honeypots are disputed)",
        p.fee,
        p.honeypot_bond
    );
    let e = &p.exposure;
    let pct = |n: usize| 100.0 * n as f64 / e.trace_segments.max(1) as f64;
    match e.budget {
        Some(b) => outln!(
            "exposure    no auditor account sees more than {b} of the trace's {} segments ({:.0}%, the budget)",
            e.trace_segments,
            pct(b)
        ),
        None => outln!(
            "exposure    one auditor account could see {} of the trace's {} segments ({:.0}%); --max-exposure bounds it",
            e.most_seen,
            e.trace_segments,
            pct(e.most_seen)
        ),
    }
    outln!(
        "            (the budget is per account, not per operator: one operator running several accounts may pool what they see)"
    );
    outln!("nothing was submitted");
}

fn tier_label(t: trust_protocol::tx::Tier) -> &'static str {
    match t {
        trust_protocol::tx::Tier::Computer => "Computer",
        trust_protocol::tx::Tier::Llm => "LLM",
        trust_protocol::tx::Tier::Human => "Human",
    }
}

/// The one-line summary of a session's terms (`submit --plan`, `query`).
pub fn terms_line(t: &crate::api::views::TermsView) -> String {
    let [c, l, h] = t.seats;
    let [wc, wl, wh] = t.tier_weights;
    format!(
        "assurance   k = {c}/{l}/{h} (Computer/LLM/Human), racing {}, tau {}, beta {}, weights {wc}/{wl}/{wh}, tiers {}, domain {}{}, windows {}+{} blocks, max exposure {}",
        t.racing_seats,
        t.tau,
        t.beta,
        t.tiers.join(","),
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

/// Who decomposes a submitted trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DecomposeMode {
    /// The node's heuristic builder.
    Heuristic,
    /// The paper's five-step LLM decomposition, run by this command.
    Llm,
}

/// The `submit --decompose llm` endpoint: the flags (or their variables), else the
/// home's `llm_url`, `llm_model` and `llm_api_key_env`.
fn submit_endpoint(args: &SubmitArgs) -> super::local::LlmEndpointArgs {
    let mut ep = args.endpoint.clone();
    if ep.llm_url.is_none()
        && let Ok(cfg) = config::load_config(&expand_home(&args.addr.home))
    {
        ep.llm_url = cfg.llm_url;
        ep.llm_model = ep.llm_model.or(cfg.llm_model);
        ep.llm_api_key_env = ep.llm_api_key_env.or(cfg.llm_api_key_env);
    }
    ep
}

/// Runs `submit`.
pub fn run_submit(args: SubmitArgs) -> CliResult {
    // The protocol's own limits, which the node's `POST /v1/sessions` accepts.
    let trace = super::read_input_file(&args.trace, MAX_TRACE_BYTES as u64)?;
    let hdag = match (&args.hdag, args.decompose) {
        (Some(p), _) => Some(super::read_input_file(p, MAX_HDAG_JSON_BYTES as u64)?),
        (None, DecomposeMode::Heuristic) => None,
        (None, DecomposeMode::Llm) => {
            let parsed = Trace::parse(&trace)
                .map_err(|e| CliError::usage(format!("{}: {e}", args.trace.display())))?;
            let d = super::local::llm_decompose(
                &parsed,
                &crate::decompose::Options::default(),
                &submit_endpoint(&args),
            )?;
            // After a fallback the node builds the heuristic HDAG itself, as without
            // --decompose.
            match d.fell_back {
                true => None,
                false => Some(serde_json::to_string(&d.hdag).map_err(failed)?),
            }
        }
    };
    let addr = args.addr.resolve()?;
    let token = api_token(args.api_token.as_deref(), &args.addr)?;
    let api = Client::new(addr.as_str());
    let rt = runtime()?;
    // The tip before the session exists: `--wait` follows its events from here.
    let height_before = match args.wait {
        true => rt.block_on(api.status()).map_err(api_error)?.height,
        false => 0,
    };
    let body = OpenSessionBody {
        trace,
        hdag,
        session: args.assurance.options()?,
    };
    if args.plan {
        let p = rt
            .block_on(api.plan_session(&body, token.as_deref()))
            .map_err(api_error)?;
        print_plan(&p);
        return Ok(());
    }
    let r = rt
        .block_on(api.open_session(&body, token.as_deref()))
        .map_err(api_error)?;
    let session = r.session.to_hex();
    outln!("session     {session}");
    outln!("fee         {}", r.fee);
    // Segment i of the outcome is the i-th of these: (HDAG node id, tier).
    let names: Vec<String> = r.segments.iter().map(|(node, _)| node.clone()).collect();
    outln!("segments    {} audited: {}", names.len(), names.join(" "));
    for (node, _, why) in &r.left_out {
        outln!("left out    {node} ({why})");
    }
    if !args.wait {
        outln!("next: trust-node query {session}");
        return Ok(());
    }
    // Entry i of the outcome's explanation: the session's segments, then the left-out.
    let mut names = names;
    names.extend(r.left_out.iter().map(|(node, _, _)| node.clone()));
    let deadline = std::time::Instant::now() + Duration::from_secs(args.timeout_secs);
    // The session's line as the node shows it now (the feed says when to look again);
    // `None` before a block holds it.
    let progress = |s: Option<&SessionView>| match s {
        Some(s) if s.status == SessionStatus::Live => format!(
            "{}: {} seats drawn, {} committed, {} revealed",
            s.phase.as_ref().map_or_else(|| "null".into(), phase_text),
            or_null(s.seats.map(|c| c.assigned)),
            or_null(s.seats.map(|c| c.committed)),
            or_null(s.seats.map(|c| c.revealed))
        ),
        Some(s) => s.status.as_str().to_string(),
        None => "waiting for the session to be ordered into a block".into(),
    };
    let mut last = String::new();
    let mut show = |s: Option<&SessionView>| {
        let now = progress(s);
        if now != last {
            outln!("...         {now}");
            last = now;
        }
    };
    let over = |s: &Option<SessionView>| {
        s.as_ref()
            .is_some_and(|s| matches!(s.status, SessionStatus::Decided | SessionStatus::Failed))
    };
    let waited = rt.block_on(async {
        let run = async {
            let s = session_now(&api, &r.session).await?;
            show(s.as_ref());
            if over(&s) {
                return Ok::<_, CliError>(s);
            }
            // Every event of the session from the block before the submission on (it
            // cannot be in an earlier one); each says when to look again.
            let mut events = super::watch::SessionFollower::new(&addr, &session, height_before);
            loop {
                let e = events.next().await.map_err(api_error)?;
                let s = session_now(&api, &r.session).await?;
                show(s.as_ref());
                if matches!(
                    e.kind,
                    crate::feed::Kind::SessionDecided | crate::feed::Kind::SessionFailed
                ) {
                    return Ok(s);
                }
            }
        };
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        tokio::time::timeout(left, run).await
    });
    match waited {
        Ok(Ok(Some(s))) => {
            print_session(&session, &s, &names, false);
            Ok(())
        }
        Ok(Ok(None)) => {
            outln!("session     {session}");
            outln!("status      pending");
            Ok(())
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(CliError::failed(format!(
            "no outcome within {} s; `trust-node query {session}` shows it later",
            args.timeout_secs
        ))),
    }
}

/// A session as the node shows it now (`None`: pending, before its block).
async fn session_now(api: &Client, session: &Hash) -> Result<Option<SessionView>, CliError> {
    match api.session(session).await {
        Ok(s) => Ok(Some(s)),
        Err(client::ClientError::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(api_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use trust_contracts::CastVote;
    use trust_protocol::{AccountId, Vote};

    use super::vote_lines;

    /// Each vote is marked with its own round (1 after an escalation, 2 and up for appeal
    /// rounds), not one label for every round above the first; a reason that reorders
    /// its own display is shown with the character replaced.
    #[test]
    fn each_vote_shows_its_own_round_and_no_hidden_characters() {
        let seat: AccountId = trust_protocol::Keypair::from_label("seat").public();
        let cast = |round: u8, reason: &str| CastVote {
            seat,
            round,
            vote: Vote::Valid,
            reason: reason.to_string(),
            counted: true,
        };
        let lines = vote_lines(&[
            cast(0, "first"),
            cast(1, "escalated"),
            cast(3, "second appeal"),
            cast(0, "a\u{202E}b"),
        ]);
        assert!(!lines[0].contains("round"), "{}", lines[0]);
        assert!(lines[1].contains("(round 1) escalated"), "{}", lines[1]);
        assert!(lines[2].contains("(round 3) second appeal"), "{}", lines[2]);
        assert!(lines[3].ends_with("a?b"), "{}", lines[3]);
    }
}
