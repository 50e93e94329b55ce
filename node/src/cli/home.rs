//! `init`, `testnet init` and `ledger verify`: setting up node homes and checking a
//! ledger on disk.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use trust_contracts::{Contract, Genesis, GenesisAccount, GenesisAuditor, Params};
use trust_protocol::{Hash, block::Block, tx::Tier};

use super::{
    CliError, CliResult,
    keys::{expand_home, node_home},
};
use crate::{
    chain::{ExecError, Tip, execute_block},
    config::{self, GenesisDoc, NodeConfig},
    keys,
    ledger::Ledger,
};

/// The comment above each table and setting of the `config.toml` that `init` and `testnet
/// init` write, so that the file says what it holds (the key as written, without its
/// table for the top level).
const CONFIG_COMMENTS: &[(&str, &str)] = &[
    ("moniker", "A name for logs and status."),
    (
        "[network]",
        "The node's own libp2p swarm: transaction gossip, block queries, peer discovery.",
    ),
    (
        "network.listen",
        "Its listen address (a multiaddress); `run --p2p-listen` overrides it.",
    ),
    (
        "network.bootstrap",
        "Peers dialled at start: \"/ip4/HOST/tcp/PORT/p2p/<peer id>\".",
    ),
    (
        "network.max_peers_per_ip",
        "Peers from one IP address kept connected (validators and bootstrap peers not counted).",
    ),
    (
        "[consensus]",
        "The consensus engine (Malachite BFT), on a swarm of its own.",
    ),
    (
        "consensus.listen",
        "Its listen address (a multiaddress); `run --consensus-listen` overrides it.",
    ),
    ("consensus.bootstrap", "Consensus peers dialled at start."),
    (
        "consensus.block_time",
        "Least time between blocks; `run --block-time-ms` overrides it.",
    ),
    (
        "consensus.sync_interval",
        "How often a node behind its peers asks them for blocks.",
    ),
    ("[mempool]", "Transactions waiting for a block."),
    ("mempool.max_txs", "Most transactions held."),
    ("mempool.max_bytes", "Most bytes held."),
    (
        "[api]",
        "The HTTP API and the pages (loopback by default: the operator token guards spending).",
    ),
    ("api.listen", "HOST:PORT; `run --api-listen` overrides it."),
    (
        "api.header_timeout",
        "A request's head must arrive within this.",
    ),
    (
        "api.body_timeout",
        "A request's body must arrive within this.",
    ),
    ("api.max_connections", "Connections served at once."),
    (
        "api.operator_token_file",
        "The operator token (owner-only), relative to the home: opening sessions, the audit form.",
    ),
    (
        "[llm]",
        "The OpenAI-compatible endpoint this node's LLM seats judge through.",
    ),
    (
        "llm.url",
        "Base URL, e.g. \"http://127.0.0.1:8080/v1\"; `run --llm-url` overrides it.",
    ),
    ("llm.model", "The model name sent to it."),
    ("[auditor]", "This node's seats."),
    (
        "auditor.human",
        "Human-tier seats wait for a person at the audit form (/audit).",
    ),
    (
        "[computer]",
        "Re-runs of a provider's tool calls in a sandbox (agent transcripts).",
    ),
    (
        "computer.execute",
        "false: this node's seats abstain on tool calls and run no one's code.",
    ),
    (
        "computer.python",
        "The interpreter the sandbox runs (default: python3 on PATH).",
    ),
    ("computer.cpu_seconds", "CPU seconds one re-run may use."),
    ("computer.memory_mib", "Memory one re-run may map, in MiB."),
    (
        "computer.wall",
        "Wall-clock time after which a re-run is killed.",
    ),
    (
        "[provider]",
        "Sessions this node opens (`trust-node submit`).",
    ),
    (
        "provider.seats_per_segment",
        "Seats per segment (k), at least the network's floor.",
    ),
    (
        "provider.honeypots_per_session",
        "Known-error segments planted per session (0 to 8).",
    ),
    (
        "provider.human_seats_per_segment",
        "Human seats per segment, when the network has Human auditors.",
    ),
    ("[ledger]", "Blocks and state snapshots on disk."),
    ("ledger.snapshot_every", "Blocks between state snapshots."),
    (
        "ledger.keep_blocks",
        "Set it to prune: keep at least this many recent blocks (unset: keep every block).",
    ),
];

/// `text` (a `config.toml` as written) with a heading and a comment above each table and
/// setting [`CONFIG_COMMENTS`] knows.
fn commented_config(text: &str) -> String {
    let mut out = String::from(
        "# trust-node config.toml: every setting is optional (a missing one takes its default)\n\
         # and an unknown one is refused. Durations are strings such as \"300ms\" or \"2s\".\n\
         # docs/operators.md (\"config.toml\") describes each table; `trust-node run --help` the\n\
         # flags that override them.\n\n",
    );
    let mut table = String::new();
    for line in text.lines() {
        let t = line.trim();
        let key = if t.starts_with('[') {
            table = t.trim_matches(|c| c == '[' || c == ']').to_string();
            t.to_string()
        } else {
            let name = t.split('=').next().unwrap_or("").trim();
            if table.is_empty() {
                name.to_string()
            } else {
                format!("{table}.{name}")
            }
        };
        if let Some((_, c)) = CONFIG_COMMENTS.iter().find(|(k, _)| *k == key) {
            out.push_str(&format!("# {c}\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Rewrites the `config.toml` at `path` with [`commented_config`].
fn comment_config(path: &Path) -> CliResult {
    let text = std::fs::read_to_string(path).map_err(failed)?;
    std::fs::write(path, commented_config(&text)).map_err(failed)
}

/// Most nodes `testnet init` creates.
const MAX_TESTNET_NODES: u16 = 64;

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::failed(e.to_string())
}

/// `init`: create a node home.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The node's home directory (keys, config.toml, data).
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
    /// A name for logs and status.
    #[arg(long, default_value = "trust-node")]
    pub moniker: String,
    /// The network's genesis.json to copy into the home (checked first: it must be a
    /// genesis document the contract accepts). Without it, put the file there by hand.
    #[arg(long, value_name = "FILE")]
    pub genesis: Option<PathBuf>,
    /// First port, as `testnet init` numbers them: p2p P, consensus P + 1, HTTP API P + 2,
    /// all on 127.0.0.1 (for a second node on the same machine). Without it: the
    /// defaults in config.toml.
    #[arg(long, value_name = "P")]
    pub base_port: Option<u16>,
    /// A peer of the network's swarm to dial at start (repeatable):
    /// `/ip4/HOST/tcp/PORT/p2p/<peer id>`, as `testnet init` prints it.
    #[arg(long, value_name = "MULTIADDR")]
    pub bootstrap: Vec<String>,
    /// A peer of the consensus engine's swarm to dial at start (repeatable), as `testnet
    /// init` prints it.
    #[arg(long, value_name = "MULTIADDR")]
    pub consensus_bootstrap: Vec<String>,
}

/// Runs `init`: fresh keys and a default `config.toml`; never overwrites either.
pub fn run_init(args: InitArgs) -> CliResult {
    let home = expand_home(&args.home);
    let d = NodeConfig::default();
    let mut cfg = NodeConfig {
        moniker: args.moniker,
        ..d.clone()
    };
    if let Some(p) = args.base_port {
        if p > u16::MAX - 2 {
            return Err(CliError::usage(format!(
                "--base-port {p} leaves no room for three ports"
            )));
        }
        cfg.network.listen = format!("/ip4/127.0.0.1/tcp/{p}");
        cfg.consensus.listen = format!("/ip4/127.0.0.1/tcp/{}", p + 1);
        cfg.api.listen = format!("127.0.0.1:{}", p + 2);
    }
    cfg.network.bootstrap = args.bootstrap;
    cfg.consensus.bootstrap = args.consensus_bootstrap;
    // The genesis is checked before anything is written: a refused init leaves nothing.
    let genesis = match &args.genesis {
        Some(path) => {
            let doc = config::load_genesis_file(path)
                .map_err(|e| CliError::usage(format!("--genesis: {e}")))?;
            Contract::new(&doc.genesis)
                .map_err(|e| CliError::usage(format!("--genesis {}: {e}", path.display())))?;
            Some(doc)
        }
        None => None,
    };
    if home.join(config::CONFIG_FILE).exists() {
        return Err(CliError::failed(format!(
            "{} already exists: refusing to overwrite it",
            home.join(config::CONFIG_FILE).display()
        )));
    }
    if genesis.is_some() && home.join(config::GENESIS_FILE).exists() {
        return Err(CliError::failed(format!(
            "{} already exists: refusing to overwrite it",
            home.join(config::GENESIS_FILE).display()
        )));
    }
    let k = keys::generate(&home).map_err(failed)?;
    let token = cfg.operator_token_path(&home);
    keys::generate_operator_token(&token).map_err(failed)?;
    let path = config::write_config(&home, &cfg).map_err(failed)?;
    comment_config(&path)?;
    tracing::info!(home = %home.display(), "initialised node home");
    outln!("account   {}", k.account_id());
    outln!("sealing   {}", k.sealing_public());
    outln!("config    {}", path.display());
    outln!(
        "token     {} (the operator token, owner-only)",
        token.display()
    );
    match &genesis {
        Some(doc) => {
            let path = config::write_genesis(&home, doc).map_err(failed)?;
            outln!("genesis   {} (chain id {})", path.display(), doc.chain_id());
            outln!(
                "next: trust-node run --home {} --state-sync HOST:PORT   (a running node's API)",
                home.display()
            );
        }
        None => outln!(
            "next: put the network's genesis.json in {} (or init again with --genesis FILE)",
            home.display()
        ),
    }
    Ok(())
}

/// `config`: the node's `config.toml`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ConfigCommand,
}

/// Subcommands of `config`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Rewrite a flat (deprecated) config.toml in the nested layout.
    ///
    /// The flat layout of earlier releases has every setting as a top-level key
    /// (`block_time_ms = 1000`, `api_listen = ...`); the nested one has a table per
    /// subsystem, with durations such as "300ms". The rewritten file holds the same
    /// settings; the flat one is kept as config.toml.bak (refused if that exists), and its
    /// comments are not carried over. A nested file is left as it is.
    Migrate(MigrateArgs),
}

/// `config migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The node's home directory.
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
    /// Print the file in the nested layout and change nothing.
    #[arg(long)]
    pub print: bool,
}

/// Runs `config`.
pub fn run_config(args: ConfigArgs) -> CliResult {
    match args.command {
        ConfigCommand::Migrate(m) => migrate(&m),
    }
}

fn migrate(m: &MigrateArgs) -> CliResult {
    let home = expand_home(&m.home);
    let usage = |e: config::HomeError| CliError::usage(e.to_string());
    if m.print {
        let (text, _) = config::migrated_text(&home).map_err(usage)?;
        outln!("{}", text.trim_end());
        return Ok(());
    }
    match config::migrate_config(&home) {
        Ok(config::Migrated::AlreadyNested(path)) => {
            outln!(
                "{} is already in the nested layout: nothing changed",
                path.display()
            );
        }
        Ok(config::Migrated::Rewritten { path, backup }) => {
            outln!(
                "{} rewritten in the nested layout; the flat file is kept as {}",
                path.display(),
                backup.display()
            );
        }
        Err(e @ config::HomeError::Exists(_)) => {
            return Err(CliError::failed(format!(
                "{e}: move the backup of an earlier migration away first"
            )));
        }
        Err(e) => return Err(usage(e)),
    }
    Ok(())
}

/// `testnet`: local multi-node networks.
#[derive(Debug, Args)]
pub struct TestnetArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TestnetCommand,
}

/// Subcommands of `testnet`.
#[derive(Debug, Subcommand)]
pub enum TestnetCommand {
    /// Create homes `node0..nodeN-1` under --home: keys, configs on 127.0.0.1 ports that
    /// do not collide, and one genesis.json in which every node is a funded validator and
    /// a registered Computer-tier auditor. With `--llm-nodes M`, M more homes
    /// (`nodeN..`) are funded LLM-tier auditors that follow the chain without voting in
    /// consensus, judging through `--llm-url`; with `--human-nodes H`, H more after those
    /// are Human-tier auditors whose seats wait for a person at their audit form; with
    /// `--provider-nodes P`, P more after those are funded accounts only, to submit
    /// traces from. Last, `--auditor-nodes A` more homes (2 by default) are Computer-tier
    /// auditors that are not validators, so that the network still staffs a session's
    /// seats with one auditor paused (the provider sits on none of its own). Every home
    /// gets its own operator token. With `--hosts`, each node runs on a host of its own
    /// (a container): it listens on 0.0.0.0 and is dialled by name.
    Init(TestnetInitArgs),
}

/// `testnet init`.
#[derive(Debug, Args)]
pub struct TestnetInitArgs {
    /// Number of validator nodes.
    #[arg(long, default_value_t = 4)]
    pub nodes: u16,
    /// Directory that receives one home per node.
    #[arg(long)]
    pub home: PathBuf,
    /// First port; node i uses base + 10 i (p2p), + 1 (consensus), + 2 (HTTP API).
    #[arg(long, default_value_t = 26_600)]
    pub base_port: u16,
    /// Network name, part of the chain id.
    #[arg(long, default_value = "trust-local")]
    pub chain_name: String,
    /// LLM-tier auditor nodes added after the validators (3 staff the default k = 3).
    #[arg(long, default_value_t = 0)]
    pub llm_nodes: u16,
    /// The OpenAI-compatible endpoint the LLM nodes judge through (e.g.
    /// http://127.0.0.1:8089/v1); required with --llm-nodes.
    #[arg(long)]
    pub llm_url: Option<String>,
    /// The model name the LLM nodes ask for.
    #[arg(long, default_value = "default")]
    pub llm_model: String,
    /// Human-tier auditor nodes added after the LLM nodes (`human = true`): their seats
    /// wait for a person at the node's audit form (`/audit`). Sessions ask for as many
    /// Human seats per segment as there are such nodes (at most --seats-per-segment), and
    /// the commit window grows to give a person time (see --commit-window).
    #[arg(long, default_value_t = 0)]
    pub human_nodes: u16,
    /// Blocks a round's commit window stays open (genesis parameter; default 10, or
    /// 120 with LLM nodes and 180 with Human nodes).
    #[arg(long)]
    pub commit_window: Option<u64>,
    /// Provider nodes added after the Human nodes: funded accounts that follow the
    /// chain, neither validators nor auditors, from which traces are submitted (a
    /// provider is never seated on its own sessions, so it takes no auditor away from
    /// them).
    #[arg(long, default_value_t = 0)]
    pub provider_nodes: u16,
    /// Computer-tier auditor nodes added last, that follow the chain without voting in
    /// consensus. Default 2 (0 with --hosts, where every node is named): with them the
    /// default network staffs k = 3 Computer seats with the provider's node left out and
    /// one auditor paused (an upgrade). Start them like the others.
    #[arg(long, value_name = "A")]
    pub auditor_nodes: Option<u16>,
    /// One host name per node, in order (validators, LLM, Human, provider, auditor nodes), comma
    /// separated: for nodes that each run on a host of their own, such as docker compose
    /// services. Node i is then dialled at /dns4/<its name>/tcp/..., and every node
    /// listens on 0.0.0.0 (API included) on the same three ports: base, base + 1,
    /// base + 2. Unset: every node on 127.0.0.1, on ports of its own.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub hosts: Vec<String>,
    /// When every home under --home is already complete (keys, config.toml,
    /// genesis.json), say so and exit 0 without touching them, instead of refusing: for
    /// an init step that runs on every `docker compose up`. A partly made home is still
    /// an error.
    #[arg(long)]
    pub keep_existing: bool,
    /// Known-error honeypots a seat must have judged before the rubber-stamp rule may
    /// flag it (genesis parameter; default 20). A small network sees few honeypots per
    /// seat: lower it to watch the rule act within a few sessions.
    #[arg(long)]
    pub rubber_stamp_min_samples: Option<u32>,
    /// Fees a provider must have paid to seats before its honeypots count towards another
    /// auditor's rubber-stamp record (genesis parameter; default 180, so a fresh key
    /// names nobody). A small network's providers pay little: lower it to watch the rule
    /// act within a few sessions.
    #[arg(long)]
    pub rubber_stamp_min_provider_fees: Option<u64>,
    /// Honeypots each node plants per session it opens as a provider (`[provider]
    /// honeypots_per_session` in config.toml; default 2, at most 8, and at most the
    /// genesis `max_honeypots`; 0 plants none). A trace with too few steps the Computer
    /// checker can refute once altered gets fewer.
    #[arg(long)]
    pub honeypots_per_session: Option<usize>,
    /// Seats per segment in sessions the nodes open (`[provider] seats_per_segment` in
    /// config.toml; default 3). Each tier needs this many auditors besides the provider.
    #[arg(long)]
    pub seats_per_segment: Option<u8>,
    /// Blocks between an `Unbond` (or `Exit`) and the stake becoming withdrawable
    /// (genesis parameter; default 20). A short delay lets a test or a demo follow an
    /// auditor from unbonding to withdrawal.
    #[arg(long)]
    pub unbond_delay: Option<u64>,
    /// Every wrong vote and every no-show is slashed (genesis `p_min = p_max = 1`) instead
    /// of by the reputation-weighted draw: to watch a slash happen on a small network.
    #[arg(long)]
    pub slash_always: bool,
    /// Blocks after a session is decided (or an appeal round of it is) during which any
    /// account may appeal its verdicts (genesis parameter; default 20). A short window lets
    /// a test or a demo see a session become final.
    #[arg(long)]
    pub appeal_window: Option<u64>,
    /// Blocks a final outcome stays in the contract state before it leaves it for the
    /// node's ledger (genesis `outcome_retention`; default 1,000; at least 1). A short one
    /// lets a demo see an outcome read and proven after it left the state.
    #[arg(long, value_name = "B")]
    pub outcome_retention: Option<u64>,
    /// Seats the largest auditor of each tier is expected to judge at once: the admission
    /// limit of draws (genesis `seat_capacity`; default 256 Computer, 8 LLM, 4 Human).
    /// One number sets the Computer tier's; three (`C,L,H`) set each tier's. Past the
    /// limit sessions wait for their draw instead of overloading the seats.
    #[arg(long, value_name = "N|C,L,H", value_delimiter = ',', num_args = 1..=3)]
    pub seat_capacity: Vec<u32>,
    /// Expertise domains of node I's auditor instead of `math`, e.g. `--expertise
    /// 1=medicine --expertise 2=medicine+math` (repeatable): sessions that require a
    /// domain draw only its auditors (once the domain's declaring stake meets the floor).
    #[arg(long, value_name = "I=DOMAIN[+DOMAIN]")]
    pub expertise: Vec<String>,
    /// Lower the network's floors under session terms to a test network's: k >= 1 in
    /// every tier, commit windows >= 4 and reveal windows >= 2 blocks, any beta, any
    /// required domain. Never for a network others rely on: the default floors (k >= 3,
    /// windows an honest seat of each tier can meet, beta >= 0.5, 20,000 of declaring
    /// stake behind a required domain) are what keeps a provider from choosing its verdict.
    /// Needed for a single Human node, or seats per segment below 3.
    #[arg(long)]
    pub dev_floors: bool,
}

/// `--expertise I=DOMAIN[+DOMAIN]` flags as node index -> domains.
fn expertise_of(
    flags: &[String],
) -> Result<std::collections::BTreeMap<usize, Vec<String>>, CliError> {
    let mut out = std::collections::BTreeMap::new();
    for f in flags {
        let bad = || {
            CliError::usage(format!(
                "--expertise {f}: expected I=DOMAIN[+DOMAIN], e.g. 1=medicine"
            ))
        };
        let (i, domains) = f.split_once('=').ok_or_else(bad)?;
        let i: usize = i.trim().parse().map_err(|_| bad())?;
        let list: Vec<String> = domains
            .split('+')
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect();
        if list.is_empty()
            || list.len() > trust_protocol::tx::MAX_EXPERTISE
            || list
                .iter()
                .any(|d| d.len() > trust_protocol::tx::MAX_DOMAIN_BYTES)
        {
            return Err(bad());
        }
        out.insert(i, list);
    }
    Ok(out)
}

/// Commit window of a testnet with LLM seats, in blocks: a small model on a laptop takes
/// seconds per entailment call, and the window closes early once every seat committed.
pub const LLM_TESTNET_COMMIT_WINDOW: u64 = 120;

/// Commit window of a testnet with Human seats, in blocks: a few minutes at a block a
/// second for a person to read a step and answer (the window closes early once every
/// seat committed).
pub const HUMAN_TESTNET_COMMIT_WINDOW: u64 = 180;

/// Runs `testnet`.
pub fn run_testnet(args: TestnetArgs) -> CliResult {
    match args.command {
        TestnetCommand::Init(a) => testnet_init(a),
    }
}

/// What is already in a node home `testnet init` would write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HomeState {
    /// Missing or empty of node files (an empty directory, e.g. a fresh volume mount).
    Empty,
    /// Keys, config.toml and genesis.json all present.
    Complete,
    /// Some of them only.
    Partial,
}

fn home_state(h: &Path) -> HomeState {
    let parts = [
        keys::keys_dir(h).join(keys::ACCOUNT_KEY_FILE),
        keys::keys_dir(h).join(keys::SEALING_KEY_FILE),
        h.join(config::CONFIG_FILE),
        h.join(config::GENESIS_FILE),
    ];
    match parts.iter().filter(|p| p.exists()).count() {
        0 => HomeState::Empty,
        n if n == parts.len() => HomeState::Complete,
        _ => HomeState::Partial,
    }
}

/// Checks `--hosts`: one usable DNS name per node, no name twice.
fn check_hosts(hosts: &[String], total: u16) -> Result<(), CliError> {
    if hosts.len() != usize::from(total) {
        return Err(CliError::usage(format!(
            "--hosts names {} hosts but there are {total} nodes (validators, then LLM, Human and provider nodes)",
            hosts.len()
        )));
    }
    for (i, h) in hosts.iter().enumerate() {
        let ok = !h.is_empty()
            && h.len() <= 253
            && h.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !ok {
            return Err(CliError::usage(format!(
                "--hosts: {h:?} is not a host name (letters, digits, '-', '_' and dots)"
            )));
        }
        if hosts[..i].contains(h) {
            return Err(CliError::usage(format!("--hosts names {h:?} twice")));
        }
    }
    Ok(())
}

/// Auditor-only nodes `testnet init` adds when not told: with the provider's node out of
/// its own sessions and one auditor paused, four validators and these two still staff
/// the default k = 3 Computer seats.
pub const DEFAULT_AUDITOR_NODES: u16 = 2;

fn testnet_init(a: TestnetInitArgs) -> CliResult {
    let auditor_nodes = a.auditor_nodes.unwrap_or(if a.hosts.is_empty() {
        DEFAULT_AUDITOR_NODES
    } else {
        0
    });
    let total = a
        .nodes
        .saturating_add(a.llm_nodes)
        .saturating_add(a.human_nodes)
        .saturating_add(a.provider_nodes)
        .saturating_add(auditor_nodes);
    if a.nodes == 0 || total > MAX_TESTNET_NODES {
        return Err(CliError::usage(format!(
            "--nodes must be at least 1 and --nodes + --llm-nodes + --human-nodes + --provider-nodes + --auditor-nodes at most {MAX_TESTNET_NODES}, got {} + {} + {} + {} + {auditor_nodes}",
            a.nodes, a.llm_nodes, a.human_nodes, a.provider_nodes
        )));
    }
    if a.llm_nodes > 0 && a.llm_url.is_none() {
        return Err(CliError::usage(
            "--llm-nodes needs --llm-url (an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8089/v1)",
        ));
    }
    if let Some(u) = &a.llm_url {
        crate::audit::llm::client::Endpoint::new(u, &a.llm_model, None)
            .map_err(|e| CliError::usage(e.to_string()))?;
    }
    let own_hosts = !a.hosts.is_empty();
    if own_hosts {
        check_hosts(&a.hosts, total)?;
    }
    // On hosts of their own every node uses the same three ports.
    let spread: u16 = if own_hosts { 0 } else { 10 };
    let last = u32::from(a.base_port) + u32::from(spread) * u32::from(total - 1) + 2;
    if last > u32::from(u16::MAX) {
        return Err(CliError::usage(format!(
            "--base-port {} leaves no room for {total} nodes",
            a.base_port
        )));
    }
    // Every setting is checked before anything is written: a refused init leaves nothing.
    let mut params = Params::default();
    if a.llm_nodes > 0 {
        params.commit_window = params.commit_window.max(LLM_TESTNET_COMMIT_WINDOW);
    }
    if a.human_nodes > 0 {
        params.commit_window = params.commit_window.max(HUMAN_TESTNET_COMMIT_WINDOW);
    }
    if let Some(w) = a.commit_window {
        if w <= crate::audit::human::DEFAULT_MARGIN_BLOCKS {
            return Err(CliError::usage(format!(
                "--commit-window {w}: must be more than {} blocks",
                crate::audit::human::DEFAULT_MARGIN_BLOCKS
            )));
        }
        params.commit_window = w;
    }
    // A session may ask for windows as long as the network's own.
    params.max_window = params
        .max_window
        .max(params.commit_window)
        .max(params.reveal_window);
    if let Some(n) = a.rubber_stamp_min_samples {
        params.rubber_stamp.min_samples = n;
    }
    if let Some(fees) = a.rubber_stamp_min_provider_fees {
        params.rubber_stamp.min_provider_fees = fees;
    }
    if let Some(d) = a.unbond_delay {
        params.unbond_delay = d;
    }
    if let Some(w) = a.appeal_window {
        params.appeal_window = w;
    }
    if let Some(r) = a.outcome_retention {
        params.outcome_retention = r;
    }
    match a.seat_capacity.as_slice() {
        [] => {}
        [c] => params.seat_capacity[0] = *c,
        [c, l, h] => params.seat_capacity = [*c, *l, *h],
        other => {
            return Err(CliError::usage(format!(
                "--seat-capacity takes one number (the Computer tier) or three (C,L,H), not {}",
                other.len()
            )));
        }
    }
    if a.slash_always {
        params.p_min = trust_protocol::units::Ppm(1_000_000);
        params.p_max = trust_protocol::units::Ppm(1_000_000);
    }
    if a.dev_floors {
        params.floors = trust_contracts::Floors::dev();
        outln!(
            "genesis floors lowered for a test network (--dev-floors): k >= 1, commit windows >= {} and reveal windows >= {} blocks, any beta, any required domain",
            params.floors.min_commit_window[0],
            params.floors.min_reveal_window[0]
        );
    }
    let seats = a
        .seats_per_segment
        .unwrap_or(NodeConfig::default().provider.seats_per_segment);
    let max_k = params.max_k.into_iter().min().unwrap_or(0);
    if seats == 0 || seats > max_k {
        return Err(CliError::usage(format!(
            "--seats-per-segment {seats}: must be between 1 and {max_k}"
        )));
    }
    // The sessions these nodes open must meet the genesis floors, or every one is refused.
    let floor = params.floors.min_k(Tier::Computer);
    if seats < floor {
        return Err(CliError::usage(format!(
            "--seats-per-segment {seats} is below the network's floor of k at least {floor}: sessions with fewer seats are refused; pass --dev-floors for a test network"
        )));
    }
    let human_k = seats.min(u8::try_from(a.human_nodes).unwrap_or(u8::MAX));
    let human_floor = params.floors.min_k(Tier::Human);
    if a.human_nodes > 0 && human_k < human_floor {
        return Err(CliError::usage(format!(
            "--human-nodes {}: sessions would ask for k = {human_k} Human seats, below the network's floor of k at least {human_floor}; add Human nodes or pass --dev-floors for a test network",
            a.human_nodes
        )));
    }
    let honeypots = a
        .honeypots_per_session
        .unwrap_or(trust_judging::session::honeypot::DEFAULT_PER_SESSION);
    if honeypots > trust_judging::session::honeypot::MAX_PER_SESSION {
        return Err(CliError::usage(format!(
            "--honeypots-per-session {honeypots}: at most {}",
            trust_judging::session::honeypot::MAX_PER_SESSION
        )));
    }
    let expertise = expertise_of(&a.expertise)?;
    let homes: Vec<PathBuf> = (0..total)
        .map(|i| a.home.join(format!("node{i}")))
        .collect();
    let states: Vec<HomeState> = homes.iter().map(|h| home_state(h)).collect();
    if a.keep_existing && states.iter().all(|s| *s == HomeState::Complete) {
        outln!(
            "{total} node homes already complete under {}: nothing changed",
            a.home.display()
        );
        return Ok(());
    }
    if let Some((h, _)) = homes
        .iter()
        .zip(&states)
        .find(|(_, s)| **s != HomeState::Empty)
    {
        return Err(CliError::failed(format!(
            "{} already holds a node home{}: refusing to overwrite a node home",
            h.display(),
            if a.keep_existing {
                " and the others are not all complete"
            } else {
                ""
            }
        )));
    }
    let mut node_keys = Vec::new();
    for h in &homes {
        node_keys.push(keys::generate(h).map_err(failed)?);
        keys::generate_operator_token(&NodeConfig::default().operator_token_path(h))
            .map_err(failed)?;
    }
    let port = |i: u16, off: u16| a.base_port + spread * i + off;
    let host = |i: u16| -> &str {
        a.hosts
            .get(usize::from(i))
            .map_or("127.0.0.1", String::as_str)
    };
    let addr = |i: u16, off: u16, k: &keys::NodeKeys| {
        let pid = config::peer_id(&k.account)
            .map(|p| format!("/p2p/{p}"))
            .unwrap_or_default();
        let proto = if own_hosts { "dns4" } else { "ip4" };
        format!("/{proto}/{}/tcp/{}{pid}", host(i), port(i, off))
    };
    let listen_ip = if own_hosts { "0.0.0.0" } else { "127.0.0.1" };
    let is_llm = |i: usize| i >= usize::from(a.nodes) && i < usize::from(a.nodes + a.llm_nodes);
    let is_human = |i: usize| {
        i >= usize::from(a.nodes + a.llm_nodes)
            && i < usize::from(a.nodes + a.llm_nodes + a.human_nodes)
    };
    let providers_end = usize::from(a.nodes + a.llm_nodes + a.human_nodes + a.provider_nodes);
    let is_provider =
        |i: usize| i >= usize::from(a.nodes + a.llm_nodes + a.human_nodes) && i < providers_end;
    let is_auditor_only = |i: usize| i >= providers_end;
    let doc = GenesisDoc {
        chain_name: a.chain_name.clone(),
        validators: node_keys
            .iter()
            .take(usize::from(a.nodes))
            .map(keys::NodeKeys::account_id)
            .collect(),
        genesis: Genesis {
            params,
            accounts: node_keys
                .iter()
                .map(|k| GenesisAccount {
                    id: k.account_id(),
                    balance: 1_000_000,
                    stake: 10_000,
                })
                .collect(),
            auditors: node_keys
                .iter()
                .enumerate()
                .filter(|(i, _)| !is_provider(*i))
                .map(|(i, k)| GenesisAuditor {
                    id: k.account_id(),
                    tier: if is_llm(i) {
                        Tier::Llm
                    } else if is_human(i) {
                        Tier::Human
                    } else {
                        Tier::Computer
                    },
                    expertise: expertise
                        .get(&i)
                        .cloned()
                        .unwrap_or_else(|| vec!["math".into()]),
                    sealing_key: k.sealing_public(),
                })
                .collect(),
        },
    };
    Contract::new(&doc.genesis).map_err(failed)?;
    for (i, (h, k)) in (0u16..).zip(homes.iter().zip(&node_keys)) {
        let others = |off: u16| -> Vec<String> {
            (0u16..)
                .zip(&node_keys)
                .filter(|(j, _)| *j != i)
                .map(|(j, kj)| addr(j, off, kj))
                .collect()
        };
        let d = NodeConfig::default();
        let cfg = NodeConfig {
            moniker: if own_hosts {
                host(i).to_string()
            } else {
                format!("node{i}")
            },
            network: config::NetworkConfig {
                listen: format!("/ip4/{listen_ip}/tcp/{}", port(i, 0)),
                bootstrap: others(0),
                ..d.network
            },
            consensus: config::ConsensusConfig {
                listen: format!("/ip4/{listen_ip}/tcp/{}", port(i, 1)),
                bootstrap: others(1),
                ..d.consensus
            },
            api: config::ApiConfig {
                listen: format!("{listen_ip}:{}", port(i, 2)),
                ..d.api
            },
            llm: config::LlmConfig {
                url: a.llm_url.clone().filter(|_| is_llm(usize::from(i))),
                model: Some(a.llm_model.clone()).filter(|_| is_llm(usize::from(i))),
                ..d.llm
            },
            auditor: config::AuditorConfig {
                human: is_human(usize::from(i)),
                ..d.auditor
            },
            provider: config::ProviderConfig {
                honeypots_per_session: honeypots,
                seats_per_segment: seats,
                // Sessions staff their Human segments with the people there are.
                human_seats_per_segment: (a.human_nodes > 0)
                    .then(|| seats.min(u8::try_from(a.human_nodes).unwrap_or(u8::MAX))),
                ..d.provider
            },
            ..d
        };
        comment_config(&config::write_config(h, &cfg).map_err(failed)?)?;
        config::write_genesis(h, &doc).map_err(failed)?;
        let api = if own_hosts {
            format!("{}:{}", host(i), port(i, 2))
        } else {
            cfg.api.listen.clone()
        };
        let role = if is_llm(usize::from(i)) {
            "  LLM auditor".to_string()
        } else if is_human(usize::from(i)) {
            format!(
                "  Human auditor  audit form http://{api}/audit  token {}",
                cfg.operator_token_path(h).display()
            )
        } else if is_provider(usize::from(i)) {
            "  provider".to_string()
        } else if is_auditor_only(usize::from(i)) {
            "  Computer auditor (not a validator)".to_string()
        } else {
            String::new()
        };
        outln!(
            "node{i}  account {}  api http://{api}  home {}{role}",
            k.account_id(),
            h.display(),
        );
    }
    outln!("chain id {}", doc.chain_id());
    // The next commands, for a first network on one machine.
    if !own_hosts {
        let root = a.home.display();
        let last = total.saturating_sub(1);
        outln!(
            "next: start every home: for i in $(seq 0 {last}); do trust-node run --home {root}/node$i 2> {root}/node$i.log & done"
        );
        outln!("      then: trust-node status --home {root}/node0");
        if let Some(k0) = node_keys.first() {
            let join_port = u32::from(a.base_port) + u32::from(spread) * u32::from(total);
            if join_port + 2 <= u32::from(u16::MAX) {
                outln!(
                    "join another node: trust-node init --home DIR --genesis {root}/node0/genesis.json --base-port {join_port} --bootstrap {} --consensus-bootstrap {}",
                    addr(0, 0, k0),
                    addr(0, 1, k0)
                );
            }
        }
    }
    Ok(())
}

/// `ledger`: inspect the ledger on disk.
#[derive(Debug, Args)]
pub struct LedgerArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LedgerCommand,
}

/// Subcommands of `ledger`.
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Re-check the whole hash chain and replay every block on the contract from genesis:
    /// every block must link to its parent, index its transactions, and lead to the state
    /// root its header claims. Exits 1 naming the first broken height.
    Verify(VerifyArgs),
}

/// `ledger verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The node's home directory.
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
}

/// Runs `ledger`.
pub fn run_ledger(args: LedgerArgs) -> CliResult {
    match args.command {
        LedgerCommand::Verify(v) => verify(&node_home(&v.home)?),
    }
}

fn verify(home: &Path) -> CliResult {
    let doc = config::load_genesis(home).map_err(|e| CliError::usage(e.to_string()))?;
    let dir = config::ledger_dir(home);
    if !dir.exists() {
        return Err(CliError::usage(format!(
            "no ledger at {} (has this node run?)",
            dir.display()
        )));
    }
    let db = config::open_store(home).map_err(failed)?;
    let ledger = Ledger::from_db(&db).map_err(failed)?;
    let contract = Contract::new(&doc.genesis)
        .map_err(failed)?
        .with_chain(doc.chain_id());
    let chain = doc.chain_id();
    let state = std::cell::RefCell::new((contract, Tip::genesis(chain)));
    // A pruned ledger starts at its base: the snapshot there, checked against the base's
    // header, is the state the later blocks replay on.
    let mut adopt = |block: &Block, bytes: &[u8]| -> Result<Hash, String> {
        let c = Contract::from_snapshot(bytes).map_err(|e| e.to_string())?;
        if c.chain_id() != chain {
            return Err(format!(
                "the snapshot is of chain {}, not {chain}",
                c.chain_id()
            ));
        }
        let root = c.state_root();
        *state.borrow_mut() = (c, Tip::genesis(chain).after(block));
        Ok(root)
    };
    let mut replay = |block: &Block| -> Result<Hash, String> {
        let mut s = state.borrow_mut();
        let done = execute_block(&s.0, &s.1, block).map_err(|e: ExecError| e.to_string())?;
        s.0 = done.contract;
        s.1 = s.1.after(block);
        Ok(s.0.state_root())
    };
    let report = ledger
        .verify_with(Some(&mut adopt), &mut replay)
        .map_err(failed)?;
    let from = if report.oldest > 1 {
        format!(" (pruned: from block {} and its snapshot)", report.oldest)
    } else {
        String::new()
    };
    outln!(
        "ledger ok: {} blocks{from}, {} transactions, tip {}, state root {}",
        report
            .blocks
            .saturating_sub(report.oldest.saturating_sub(1)),
        report.txs,
        report.tip_hash,
        state.borrow().0.state_root()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn args(home: &Path, human: u16) -> TestnetInitArgs {
        TestnetInitArgs {
            nodes: 4,
            home: home.to_path_buf(),
            base_port: 26_600,
            chain_name: "human-test".into(),
            llm_nodes: 0,
            llm_url: None,
            llm_model: "default".into(),
            human_nodes: human,
            commit_window: None,
            provider_nodes: 1,
            hosts: vec![],
            keep_existing: false,
            rubber_stamp_min_samples: None,
            rubber_stamp_min_provider_fees: None,
            honeypots_per_session: None,
            seats_per_segment: None,
            unbond_delay: None,
            slash_always: false,
            appeal_window: None,
            outcome_retention: None,
            seat_capacity: vec![],
            expertise: vec![],
            auditor_nodes: Some(0),
            // One Human node staffs k = 1 Human seats: below the public floors.
            dev_floors: human > 0 && human < 3,
        }
    }

    /// A testnet whose sessions would ask for fewer seats than the genesis floors allow
    /// is refused at init, naming the floor and the way out; `--dev-floors` lowers them
    /// and the genesis says so.
    #[test]
    fn init_refuses_seats_below_the_floors_unless_asked_to_lower_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), 1);
        a.dev_floors = false;
        let e = testnet_init(a).unwrap_err().message;
        assert!(
            e.contains("below the network's floor of k at least 3") && e.contains("--dev-floors"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), 0);
        a.seats_per_segment = Some(1);
        let e = testnet_init(a).unwrap_err().message;
        assert!(e.contains("--seats-per-segment 1"), "{e}");
        let mut a = args(dir.path(), 0);
        a.seats_per_segment = Some(1);
        a.dev_floors = true;
        testnet_init(a).unwrap();
        let doc = config::load_genesis(&dir.path().join("node0")).unwrap();
        assert_eq!(doc.genesis.params.floors, trust_contracts::Floors::dev());
        let dir = tempfile::tempdir().unwrap();
        testnet_init(args(dir.path(), 0)).unwrap();
        let doc = config::load_genesis(&dir.path().join("node0")).unwrap();
        assert_eq!(
            doc.genesis.params.floors,
            trust_contracts::Floors::default(),
            "the default testnet keeps the public floors"
        );
    }

    #[test]
    fn human_nodes_are_human_auditors_staffed_by_the_sessions_and_every_home_has_a_token() {
        let dir = tempfile::tempdir().unwrap();
        testnet_init(args(dir.path(), 1)).unwrap();
        let doc = config::load_genesis(&dir.path().join("node0")).unwrap();
        // Validators 0..4, the Human node 4, the provider 5.
        assert_eq!(doc.validators.len(), 4);
        let human = keys::load(&dir.path().join("node4")).unwrap().account_id();
        let tiers: Vec<(bool, Tier)> = doc
            .genesis
            .auditors
            .iter()
            .map(|a| (a.id == human, a.tier))
            .collect();
        assert_eq!(tiers.len(), 5, "the provider is no auditor");
        assert!(tiers.contains(&(true, Tier::Human)));
        assert_eq!(
            tiers.iter().filter(|(_, t)| *t == Tier::Human).count(),
            1,
            "only the Human node"
        );
        assert!(!doc.validators.contains(&human), "not a validator");
        assert_eq!(
            doc.genesis.params.commit_window,
            HUMAN_TESTNET_COMMIT_WINDOW
        );
        for i in 0..6 {
            let home = dir.path().join(format!("node{i}"));
            let cfg = config::load_config(&home).unwrap();
            assert_eq!(cfg.auditor.human, i == 4, "node{i}");
            // One person staffs a Human segment: k = 1 in the sessions any node opens.
            assert_eq!(cfg.provider.human_seats_per_segment, Some(1), "node{i}");
            let token = cfg.operator_token_path(&home);
            let mode = std::fs::metadata(&token).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", token.display());
            keys::operator_token(&token).unwrap();
        }
        // Without Human nodes: no Human seats asked for, the usual window.
        let plain = tempfile::tempdir().unwrap();
        testnet_init(TestnetInitArgs {
            commit_window: Some(30),
            ..args(plain.path(), 0)
        })
        .unwrap();
        let cfg = config::load_config(&plain.path().join("node0")).unwrap();
        assert_eq!(
            (cfg.auditor.human, cfg.provider.human_seats_per_segment),
            (false, None)
        );
        let doc = config::load_genesis(&plain.path().join("node0")).unwrap();
        assert_eq!(doc.genesis.params.commit_window, 30);
        // A window no person could answer in is refused.
        let bad = tempfile::tempdir().unwrap();
        assert!(
            testnet_init(TestnetInitArgs {
                commit_window: Some(2),
                ..args(bad.path(), 1)
            })
            .is_err()
        );
    }

    /// Left to its default, `testnet init` adds two Computer auditors beside the
    /// validators, neither of them validators, so that the provider's node out of its own
    /// sessions and one auditor paused still leave k = 3 Computer seats to draw; named
    /// hosts (one container per node) get none unless asked.
    #[test]
    fn the_default_testnet_has_auditor_only_homes_beside_the_validators() {
        let dir = tempfile::tempdir().unwrap();
        testnet_init(TestnetInitArgs {
            auditor_nodes: None,
            provider_nodes: 0,
            ..args(dir.path(), 0)
        })
        .unwrap();
        let doc = config::load_genesis(&dir.path().join("node0")).unwrap();
        assert_eq!(doc.validators.len(), 4);
        let computer = doc
            .genesis
            .auditors
            .iter()
            .filter(|a| a.tier == Tier::Computer)
            .count();
        assert_eq!(computer, 4 + usize::from(DEFAULT_AUDITOR_NODES));
        let k = doc.genesis.params.floors.min_k(Tier::Computer);
        // Less the provider and one paused auditor.
        assert!(
            computer - 2 >= usize::from(k),
            "{computer} auditors, k >= {k}"
        );
        for i in 4..6 {
            let me = keys::load(&dir.path().join(format!("node{i}")))
                .unwrap()
                .account_id();
            assert!(!doc.validators.contains(&me), "node{i} is no validator");
            assert!(doc.genesis.auditors.iter().any(|a| a.id == me));
        }
        assert!(!dir.path().join("node6").exists());
    }

    /// `init --genesis` copies a genesis the contract accepts into the new home, with the
    /// ports and bootstrap peers given; a file that is no genesis is refused and nothing
    /// is written.
    #[test]
    fn init_with_a_genesis_makes_a_home_ready_to_join() {
        let net = tempfile::tempdir().unwrap();
        testnet_init(args(net.path(), 0)).unwrap();
        let genesis = net.path().join("node0").join(config::GENESIS_FILE);
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("joiner");
        run_init(InitArgs {
            home: home.display().to_string(),
            moniker: "joiner".into(),
            genesis: Some(genesis.clone()),
            base_port: Some(27_000),
            bootstrap: vec!["/ip4/127.0.0.1/tcp/26600/p2p/x".into()],
            consensus_bootstrap: vec!["/ip4/127.0.0.1/tcp/26601/p2p/x".into()],
        })
        .unwrap();
        assert_eq!(
            config::load_genesis(&home).unwrap(),
            config::load_genesis(&net.path().join("node0")).unwrap()
        );
        let cfg = config::load_config(&home).unwrap();
        assert_eq!(cfg.api.listen, "127.0.0.1:27002");
        assert_eq!(cfg.consensus.listen, "/ip4/127.0.0.1/tcp/27001");
        assert_eq!(cfg.network.bootstrap.len(), 1);
        assert_eq!(cfg.consensus.bootstrap.len(), 1);
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{}").unwrap();
        let other = dir.path().join("other");
        let e = run_init(InitArgs {
            home: other.display().to_string(),
            moniker: "x".into(),
            genesis: Some(bad),
            base_port: None,
            bootstrap: vec![],
            consensus_bootstrap: vec![],
        })
        .unwrap_err();
        assert_eq!(e.code, 2, "{}", e.message);
        assert!(!other.exists(), "a refused init writes nothing");
    }

    /// The config.toml `init` writes says what each table and setting is, and reads back
    /// as the same settings.
    #[test]
    fn init_writes_a_commented_config_that_parses_as_written() {
        let dir = tempfile::tempdir().unwrap();
        testnet_init(args(dir.path(), 0)).unwrap();
        let home = dir.path().join("node0");
        let text = std::fs::read_to_string(home.join(config::CONFIG_FILE)).unwrap();
        for needle in [
            "# trust-node config.toml: every setting is optional",
            "# The node's own libp2p swarm",
            "# Least time between blocks",
            "# Seats per segment (k)",
        ] {
            assert!(text.contains(needle), "{needle:?} not in\n{text}");
        }
        let stripped: String = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let cfg = config::load_config(&home).unwrap();
        assert_eq!(
            toml::from_str::<NodeConfig>(&stripped).unwrap(),
            cfg,
            "the comments change no setting"
        );
    }

    #[test]
    fn init_writes_an_owner_only_operator_token() {
        let dir = tempfile::tempdir().unwrap();
        run_init(InitArgs {
            home: dir.path().display().to_string(),
            moniker: "n".into(),
            genesis: None,
            base_port: None,
            bootstrap: vec![],
            consensus_bootstrap: vec![],
        })
        .unwrap();
        let token = dir.path().join(keys::OPERATOR_TOKEN_FILE);
        let mode = std::fs::metadata(&token).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
