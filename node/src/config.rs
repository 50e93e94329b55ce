//! The node's home directory: `config.toml` (how this node runs), `genesis.json` (what
//! network it joins), `keys/` and `data/`.
//!
//! ```text
//! <home>/config.toml     NodeConfig, every setting optional with the defaults below
//! <home>/genesis.json    GenesisDoc, identical on every node of a network
//! <home>/keys/           account.key, sealing.key (see crate::keys)
//! <home>/operator.token  the operator token: the provider API and the audit form (0600,
//!                        see crate::keys)
//! <home>/data/ledger/    the sled ledger (see crate::ledger)
//! ```
//!
//! `config.toml` is grouped by subsystem: `moniker` on top, then `[network]`,
//! `[consensus]`, `[mempool]`, `[api]`, `[ipfs]`, `[llm]` (with `[llm.ares]`), `[auditor]`, `[computer]`,
//! `[provider]`, `[session]` and `[ledger]`. Durations are humantime strings (`"300ms"`,
//! `"2s"`). The flat layout of earlier releases (`block_time_ms = 1000`, `api_listen = ...`
//! on top) is still read, with a warning ([`legacy`]); `trust-node config migrate` rewrites
//! such a file.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde::{Deserialize, Serialize};
use trust_contracts::Genesis;
use trust_protocol::{AccountId, Hash, encoding};

pub mod legacy;

/// Config file name under the home directory.
pub const CONFIG_FILE: &str = "config.toml";
/// Genesis file name under the home directory.
pub const GENESIS_FILE: &str = "genesis.json";
/// Largest config or genesis file read.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How this node runs (`config.toml`), one table per subsystem. Flags override some of
/// these values ([`Overrides`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// A name for logs and status.
    pub moniker: String,
    /// The node's own libp2p swarm (`[network]`).
    pub network: NetworkConfig,
    /// The consensus engine (`[consensus]`).
    pub consensus: ConsensusConfig,
    /// The transaction pool (`[mempool]`).
    pub mempool: MempoolConfig,
    /// The HTTP API (`[api]`).
    pub api: ApiConfig,
    /// An external IPFS node (`[ipfs]`).
    #[serde(skip_serializing_if = "IpfsConfig::is_default")]
    pub ipfs: IpfsConfig,
    /// This node's LLM endpoint (`[llm]`, `[llm.ares]`).
    #[serde(skip_serializing_if = "LlmConfig::is_default")]
    pub llm: LlmConfig,
    /// This node as an auditor: how its seats judge (`[auditor]`).
    pub auditor: AuditorConfig,
    /// The Computer tier's re-runs of tool calls, in a sandbox (`[computer]`).
    #[serde(skip_serializing_if = "ComputerConfig::is_default")]
    pub computer: ComputerConfig,
    /// This node as a provider: the sessions it opens and what it may spend (`[provider]`).
    pub provider: ProviderConfig,
    /// Defaults for the sessions this node opens as a provider (`[session]`: seats,
    /// computer_seats, llm_seats, human_seats, racing_seats, tau, beta, computer_weight,
    /// llm_weight, human_weight, tiers, domain, require_domain, fee, commit_window,
    /// reveal_window, max_exposure). A request's own settings win over these.
    #[serde(skip_serializing_if = "trust_judging::session::terms::SessionOptions::is_empty")]
    pub session: trust_judging::session::terms::SessionOptions,
    /// What the ledger keeps (`[ledger]`).
    pub ledger: LedgerConfig,
}

/// `[network]`: the node's own libp2p swarm (gossip, sync, queries, Bitswap).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Listen address of the swarm (a multiaddress). Flag `--p2p-listen`.
    pub listen: String,
    /// Peers dialled at start (`/ip4/.../tcp/.../p2p/<peer id>`).
    pub bootstrap: Vec<String>,
    /// Peers from one IP address this node keeps connected, validators and bootstrap
    /// peers not counted (they always have a slot). Default 8.
    pub max_peers_per_ip: usize,
}

/// `[consensus]`: the consensus engine (Malachite BFT) on its own libp2p swarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsensusConfig {
    /// Listen address of the engine's swarm (a multiaddress). Flag `--consensus-listen`.
    pub listen: String,
    /// Consensus peers dialled at start.
    pub bootstrap: Vec<String>,
    /// Least time between blocks (consensus waits this long after a decision before
    /// starting the next height). Default `"1s"`. Flag `--block-time-ms`.
    #[serde(with = "humantime_serde")]
    pub block_time: Duration,
    /// How long round 0 waits for a proposal (later rounds wait longer). Unset: two block
    /// times, between 400 ms and 3 s.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub propose_timeout: Option<Duration>,
    /// How long a round waits once 2/3 of the prevotes (or precommits) are in but do not
    /// agree. Unset: one block time, between 200 ms and 1 s.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub vote_timeout: Option<Duration>,
    /// How much each round timeout grows per further round of a height. Unset: half a
    /// block time, between 100 ms and 500 ms.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_delta: Option<Duration>,
    /// How often peers exchange their heights for catch-up sync. Default `"2s"`.
    #[serde(with = "humantime_serde")]
    pub sync_interval: Duration,
}

/// `[mempool]`: the pool of transactions waiting for a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MempoolConfig {
    /// Most transactions the pool holds. Default 10 000.
    pub max_txs: usize,
    /// Most bytes of encoded transactions the pool holds; when full it evicts from the
    /// sender ranked lowest (failing senders first, then the largest holder). Default
    /// 64 MiB.
    pub max_bytes: usize,
}

/// `[api]`: the HTTP API, its limits, and the operator token that guards what spends the
/// node's funds and logs a person in to the audit form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// Listen address (`host:port`; loopback by default: expose it deliberately). Flag
    /// `--api-listen`.
    pub listen: String,
    /// How long a client may take to send a request's headers (and how long an idle
    /// connection stays open). Default `"10s"`.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body. Default `"30s"`.
    #[serde(with = "humantime_serde")]
    pub body_timeout: Duration,
    /// Connections the API serves at once; further ones are answered 503 and closed.
    /// Default 256.
    pub max_connections: usize,
    /// The operator token's file (relative to the home unless absolute): the secret of the
    /// provider API and of the audit form's login. Created with mode 0600 by `init`,
    /// `testnet init`, or `run` when missing; `run` refuses one group or others can read.
    pub operator_token_file: String,
}

/// `[ipfs]`: an external IPFS node (Kubo) beside the embedded blob store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IpfsConfig {
    /// The IPFS node's RPC API (e.g. `http://127.0.0.1:5001`): ciphertexts this node
    /// provides are stored there too, and seats read from it before asking peers. Unset:
    /// the embedded blob store and Bitswap only. Flag `--ipfs-api`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
}

/// `[llm]`: the OpenAI-compatible chat endpoint this node's LLM seats judge through (and
/// `submit --decompose llm` decomposes through), and ARES's settings (`[llm.ares]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL of the endpoint (e.g. `http://127.0.0.1:8080/v1`: llama.cpp server, vLLM,
    /// Ollama, a hosted API). Unset: this node has no LLM judge, and LLM seats it holds
    /// abstain. Flag `--llm-url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The model name sent to the endpoint (default `default`). Flag `--llm-model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The name of the environment variable holding the endpoint's API key (the key
    /// itself is never written here or logged). Flag `--llm-api-key-env`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// One request's timeout (default `"20s"`).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// Retries of a failed request, with exponential backoff (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// Requests in flight at once from this node (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<usize>,
    /// Largest reply read, in bytes (default 65 536).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reply_bytes: Option<usize>,
    /// How long one segment's judgement may take before the seat abstains (default: half
    /// the commit window at the block time).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub deadline: Option<Duration>,
    /// ARES settings (`[llm.ares]`: epsilon, delta, given_soundness, valid_at, invalid_at,
    /// calibration_min, consistency_probes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ares: Option<trust_judging::llm::ares::AresParams>,
}

impl LlmConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl IpfsConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// `[auditor]`: this node as an auditor, how the seats drawn for it judge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditorConfig {
    /// Human-tier seats: this node's Human seats wait for a person at the audit form
    /// (`/audit` on the API listener) and abstain when nobody judges them in time. Flag
    /// `--human`.
    pub human: bool,
    /// On SIGTERM or SIGINT, the longest the node keeps running to finish the commits and
    /// reveals its seats owe (it takes no new seats meanwhile), before it stops. `"0s"`
    /// stops at once. Flag `--drain-timeout`.
    #[serde(with = "humantime_serde", skip_serializing_if = "is_default_drain")]
    pub drain_timeout: Duration,
}

fn is_default_drain(t: &Duration) -> bool {
    *t == DEFAULT_DRAIN_TIMEOUT
}

/// How long a stopping node waits at most for the votes its seats owe, by default: longer
/// than a Human seat's commit and reveal windows at the default block time.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for AuditorConfig {
    fn default() -> Self {
        Self {
            human: false,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }
}

/// `[computer]`: the Computer tier's re-runs of a provider's tool calls (agent transcripts).
/// A seat re-runs a transcript's Python code in a sandbox (bubblewrap namespaces, a seccomp
/// filter and resource limits; docs/security.md) and votes on whether the result the
/// transcript reports is what the code prints. A node whose sandbox cannot start says so
/// at start-up, and its seats abstain on tool segments: code never runs outside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ComputerConfig {
    /// Re-run tool calls at all (default true). `false`: this node's seats abstain on tool
    /// segments and no code of anyone's is ever run here.
    pub execute: bool,
    /// The Python interpreter the sandbox runs (default: `python3` on `PATH`, resolved to
    /// its real file; its installation prefix is mounted read-only, nothing else of its
    /// directory tree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// CPU seconds one re-run may use (default 10).
    pub cpu_seconds: u64,
    /// Memory one re-run may map, in MiB (default 512).
    pub memory_mib: u64,
    /// Wall-clock time after which a re-run is killed (default 20 s).
    #[serde(with = "humantime_serde")]
    pub wall: Duration,
}

impl Default for ComputerConfig {
    fn default() -> Self {
        let l = trust_sandbox::Limits::default();
        Self {
            execute: true,
            python: None,
            cpu_seconds: l.cpu_seconds,
            memory_mib: l.memory_bytes / (1024 * 1024),
            wall: l.wall,
        }
    }
}

impl ComputerConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The sandbox's configuration.
    pub fn sandbox(&self) -> trust_sandbox::Config {
        trust_sandbox::Config {
            python: self.python.as_ref().map(std::path::PathBuf::from),
            limits: trust_sandbox::Limits {
                cpu_seconds: self.cpu_seconds,
                wall: self.wall,
                memory_bytes: self.memory_mib.saturating_mul(1024 * 1024),
                ..trust_sandbox::Limits::default()
            },
            enabled: self.execute,
        }
    }
}

/// `[provider]`: this node as a provider, the sessions it opens and what they may cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// Seats drawn per segment (`k_t`, every tier) in the sessions this node opens; a
    /// segment is decided by `ceil(0.6 k)` agreeing votes. Default 3, at most the genesis
    /// `max_k`.
    pub seats_per_segment: u8,
    /// Seats per Human-tier segment in the sessions this node opens (default
    /// `seats_per_segment`): a network with fewer people than that still audits Human
    /// segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_seats_per_segment: Option<u8>,
    /// Honeypots (known-error segments, blinded among the real ones) this node plants in
    /// each session it opens, to expose seats that approve everything; 0 plants none, at
    /// most 8.
    pub honeypots_per_session: usize,
    /// The largest fee one session this node opens may escrow; a `POST /v1/sessions` over
    /// it is refused with 403. Unset: no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fee_per_session: Option<u64>,
    /// The largest sum of the fees of the sessions this node opened in the last 24 hours;
    /// a session that would go over it is refused with 403. Unset: no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fee_per_day: Option<u64>,
}

/// `[ledger]`: what the ledger keeps: contract snapshots, and how many blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LedgerConfig {
    /// A contract state snapshot every this many blocks (0: none). Restarts restore from
    /// the newest one, state sync serves them, and pruning starts from one. Default 100.
    pub snapshot_every: u64,
    /// Keep only the last N blocks (at least [`MIN_KEEP_BLOCKS`]), pruning older ones at
    /// each snapshot down to the newest snapshot that leaves N (`snapshot_every` must be
    /// above 0). Unset: keep every block (an archive node). A pruned node still restores,
    /// verifies and proves from its oldest block and says so for anything older.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_blocks: Option<u64>,
}

/// The least `[ledger] keep_blocks`: an appeal window and a few snapshots' worth.
pub const MIN_KEEP_BLOCKS: u64 = 100;

impl LedgerConfig {
    /// `keep_blocks`, checked against `snapshot_every`: pruning needs snapshots to start
    /// from.
    pub fn keep_blocks(&self) -> Result<Option<u64>, ConfigError> {
        match self.keep_blocks {
            None => Ok(None),
            Some(n) if n < MIN_KEEP_BLOCKS => Err(ConfigError::Invalid(format!(
                "[ledger] keep_blocks = {n}: keep at least {MIN_KEEP_BLOCKS} blocks, or remove it to keep every block"
            ))),
            Some(_) if self.snapshot_every == 0 => Err(ConfigError::Invalid(
                "[ledger] keep_blocks needs snapshots to prune down to: set [ledger] snapshot_every above 0"
                    .into(),
            )),
            Some(n) => Ok(Some(n)),
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            moniker: "trust-node".into(),
            network: NetworkConfig::default(),
            consensus: ConsensusConfig::default(),
            mempool: MempoolConfig::default(),
            api: ApiConfig::default(),
            ipfs: IpfsConfig::default(),
            llm: LlmConfig::default(),
            auditor: AuditorConfig::default(),
            computer: ComputerConfig::default(),
            provider: ProviderConfig::default(),
            session: trust_judging::session::terms::SessionOptions::default(),
            ledger: LedgerConfig::default(),
        }
    }
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            listen: "/ip4/127.0.0.1/tcp/26656".into(),
            bootstrap: Vec::new(),
            max_peers_per_ip: crate::net::DEFAULT_MAX_PEERS_PER_IP,
        }
    }
}

impl Default for ConsensusConfig {
    fn default() -> Self {
        Self {
            listen: "/ip4/127.0.0.1/tcp/26657".into(),
            bootstrap: Vec::new(),
            block_time: Duration::from_secs(1),
            propose_timeout: None,
            vote_timeout: None,
            timeout_delta: None,
            sync_interval: Duration::from_secs(2),
        }
    }
}

impl Default for MempoolConfig {
    fn default() -> Self {
        Self {
            max_txs: 10_000,
            max_bytes: crate::mempool::DEFAULT_MAX_BYTES,
        }
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8480".into(),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 256,
            operator_token_file: crate::keys::OPERATOR_TOKEN_FILE.into(),
        }
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            seats_per_segment: 3,
            human_seats_per_segment: None,
            honeypots_per_session: trust_judging::session::honeypot::DEFAULT_PER_SESSION,
            max_fee_per_session: None,
            max_fee_per_day: None,
        }
    }
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            snapshot_every: 100,
            keep_blocks: None,
        }
    }
}

/// A duration in whole milliseconds, as the parts that count in milliseconds take it
/// (saturating; a sub-millisecond rest is dropped).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl NodeConfig {
    /// The API server's limits.
    pub fn api_limits(&self) -> crate::api::server::Limits {
        crate::api::server::Limits {
            header_timeout: self.api.header_timeout,
            body_timeout: self.api.body_timeout,
            max_connections: self.api.max_connections,
        }
    }

    /// The provider's spending cap.
    pub fn spending_cap(&self) -> crate::audit::provider::SpendingCap {
        crate::audit::provider::SpendingCap {
            per_session: self.provider.max_fee_per_session,
            per_day: self.provider.max_fee_per_day,
        }
    }

    /// Where the operator token lives for the node at `home`.
    pub fn operator_token_path(&self, home: &Path) -> PathBuf {
        home.join(&self.api.operator_token_file)
    }
}
/// What a network is: the contract's genesis and the validators that order blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisDoc {
    /// Human-readable network name (part of the chain id).
    pub chain_name: String,
    /// Validator accounts; their voting power is their bonded stake in contract state.
    pub validators: Vec<AccountId>,
    /// The contract's initial state.
    pub genesis: Genesis,
}

impl GenesisDoc {
    /// The chain id every block carries: `H("trust/v1/chain", encode(self))`.
    pub fn chain_id(&self) -> Hash {
        Hash::of_parts("trust/v1/chain", &[&encoding::encode(self)])
    }
}

/// Why the home directory could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HomeError {
    /// I/O.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The file exists and would be overwritten.
    #[error("{0} already exists: refusing to overwrite it")]
    Exists(PathBuf),
    /// The file does not parse (or does not render).
    #[error("{path}: {source}")]
    Parse {
        /// File.
        path: PathBuf,
        /// The parser's (or writer's) error.
        #[source]
        source: crate::Cause,
    },
    /// The file is too large.
    #[error("{0} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge(PathBuf),
    /// The directory is no node home: it has no `config.toml` (a mistyped `--home`, or a
    /// node never made there).
    #[error(
        "no node home at {} (no {CONFIG_FILE}): pass --home DIR of a node made by \
         `trust-node init`/`testnet init`",
        .0.display()
    )]
    NoHome(PathBuf),
}

/// `home`, if it is a node home (it holds a `config.toml`); [`HomeError::NoHome`]
/// otherwise. Every command that reads a home asks this first, so that a mistyped
/// `--home` is said to be one instead of failing later on a file or port it implies.
pub fn require_home(home: &Path) -> Result<(), HomeError> {
    match home.join(CONFIG_FILE).is_file() {
        true => Ok(()),
        false => Err(HomeError::NoHome(home.to_path_buf())),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HomeError + '_ {
    move |source| HomeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read(path: &Path) -> Result<String, HomeError> {
    let meta = std::fs::metadata(path).map_err(io(path))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(HomeError::TooLarge(path.to_path_buf()));
    }
    std::fs::read_to_string(path).map_err(io(path))
}

fn write_new(path: &Path, text: &str) -> Result<(), HomeError> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                HomeError::Exists(path.to_path_buf())
            } else {
                io(path)(e)
            }
        })?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(io(path))
}

/// Flags of `trust-node run` that override `config.toml`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `[api] listen` (`--api-listen`).
    pub api_listen: Option<String>,
    /// `[network] listen` (`--p2p-listen`).
    pub p2p_listen: Option<String>,
    /// `[consensus] listen` (`--consensus-listen`).
    pub consensus_listen: Option<String>,
    /// Least time between blocks, `[consensus] block_time` (`--block-time-ms`).
    pub block_time: Option<Duration>,
    /// `[ipfs] api` (`--ipfs-api`).
    pub ipfs_api: Option<String>,
    /// `[llm] url` (`--llm-url`).
    pub llm_url: Option<String>,
    /// `[llm] model` (`--llm-model`).
    pub llm_model: Option<String>,
    /// `[llm] api_key_env` (`--llm-api-key-env`).
    pub llm_api_key_env: Option<String>,
    /// `[auditor] human = true` (`--human`): Human seats wait for a person at the audit
    /// form.
    pub human: bool,
    /// `--state-sync`: API addresses of nodes to fetch a snapshot from when the ledger
    /// holds no block ([`crate::statesync`]).
    pub state_sync: Vec<crate::api::addr::ApiAddr>,
    /// `--state-sync-trust`: the block the snapshot must be at ([`crate::statesync`]).
    pub state_sync_trust: Option<crate::proof::TrustedBlock>,
    /// `[auditor] drain_timeout` (`--drain-timeout`).
    pub drain_timeout: Option<Duration>,
}

/// A setting of `config.toml` (or a flag) that the node cannot run with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The home directory's files.
    #[error(transparent)]
    Home(#[from] HomeError),
    /// A value out of its range; the message names the setting and the range.
    #[error("{0}")]
    Invalid(String),
    /// An address setting that does not parse: the setting, its value, and why.
    #[error("{setting} {value:?}: {source}")]
    Address {
        /// The setting (`[api] listen`, `[network] bootstrap address`, ...).
        setting: String,
        /// The value given.
        value: String,
        /// Why it is no address.
        #[source]
        source: crate::Cause,
    },
    /// The node's account key does not make a libp2p identity.
    #[error("{0}")]
    NodeKey(#[source] libp2p::identity::DecodingError),
}

impl ConfigError {
    /// What address setting `setting`, set to `value`, maps its parse error to.
    fn address<E: Into<crate::Cause>>(setting: &str, value: &str) -> impl FnOnce(E) -> Self {
        let (setting, value) = (setting.to_string(), value.to_string());
        move |e| Self::Address {
            setting,
            value,
            source: e.into(),
        }
    }
}

impl NodeConfig {
    /// The node's settings: `<home>/config.toml` with the flags in `overrides` applied,
    /// checked against itself and the network's genesis (`doc`): a setting the node cannot
    /// run with stops it at start, naming the setting and its range.
    pub fn load(home: &Path, overrides: &Overrides, doc: &GenesisDoc) -> Result<Self, ConfigError> {
        let mut cfg = load_config(home)?;
        let o = overrides.clone();
        let set = |slot: &mut String, v: Option<String>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        set(&mut cfg.api.listen, o.api_listen);
        set(&mut cfg.network.listen, o.p2p_listen);
        set(&mut cfg.consensus.listen, o.consensus_listen);
        cfg.ipfs.api = o.ipfs_api.or(cfg.ipfs.api);
        cfg.llm.url = o.llm_url.or(cfg.llm.url);
        cfg.llm.model = o.llm_model.or(cfg.llm.model);
        cfg.llm.api_key_env = o.llm_api_key_env.or(cfg.llm.api_key_env);
        cfg.auditor.human |= o.human;
        if let Some(t) = o.drain_timeout {
            cfg.auditor.drain_timeout = t;
        }
        if let Some(t) = o.block_time {
            cfg.consensus.block_time = t;
        }
        cfg.check(doc)?;
        Ok(cfg)
    }

    /// The LLM tier's settings.
    pub fn llm_settings(&self) -> crate::audit::llm::setup::LlmSettings {
        let l = &self.llm;
        crate::audit::llm::setup::LlmSettings {
            llm_url: l.url.clone(),
            llm_model: l.model.clone(),
            llm_api_key_env: l.api_key_env.clone(),
            llm_timeout_ms: l.timeout.map(millis),
            llm_retries: l.retries,
            llm_max_concurrent: l.max_concurrent,
            llm_max_reply_bytes: l.max_reply_bytes,
            llm_ares: l.ares,
            llm_deadline_ms: l.deadline.map(millis),
        }
    }

    /// The swarm's settings: this node's identity (its account key), listen address,
    /// bootstrap peers, and the validators (known from genesis) as reserved peers.
    pub fn net_config(
        &self,
        keys: &crate::keys::NodeKeys,
        doc: &GenesisDoc,
        blobs: crate::blobs::BlobStore,
    ) -> Result<crate::net::NetConfig, ConfigError> {
        use crate::net;
        let keypair = libp2p::identity::Keypair::ed25519_from_bytes(keys.account.seed())
            .map_err(ConfigError::NodeKey)?;
        Ok(net::NetConfig {
            keypair,
            listen: self.network.listen.parse().map_err(ConfigError::address(
                "[network] listen",
                &self.network.listen,
            ))?,
            bootstrap: addrs(&self.network.bootstrap, "[network] bootstrap")?,
            chain_id: doc.chain_id(),
            max_peers: net::DEFAULT_MAX_PEERS,
            blobs: Some(blobs),
            blob_fetch_timeout: net::BLOB_FETCH_TIMEOUT,
            ask_peers_for_blobs: true,
            max_peers_per_ip: self.network.max_peers_per_ip,
            // The validators' node ids are their account keys: known from genesis.
            reserved: doc
                .validators
                .iter()
                .filter_map(net::validator_peer)
                .collect(),
            sync_rate: net::DEFAULT_SYNC_RATE,
            ban_duration: net::BAN_DURATION,
        })
    }

    /// The consensus engine's settings: listen address, peers, the WAL under `home`, the
    /// block time and timeouts, snapshots and sync.
    pub fn consensus_setup(
        &self,
        home: &Path,
        keys: &crate::keys::NodeKeys,
        doc: &GenesisDoc,
    ) -> Result<crate::consensus::ConsensusSetup, ConfigError> {
        use crate::consensus::{self, TimeoutConfig};
        let c = &self.consensus;
        Ok(consensus::ConsensusSetup {
            moniker: self.moniker.clone(),
            chain: doc.chain_id(),
            key: keys.account.clone(),
            validators: doc.validators.clone(),
            listen: c
                .listen
                .parse()
                .map_err(ConfigError::address("[consensus] listen", &c.listen))?,
            peers: addrs(&c.bootstrap, "[consensus] bootstrap")?,
            wal_dir: wal_dir(home),
            block_time: self.block_time(),
            timeouts: consensus::timeouts(
                self.block_time(),
                TimeoutConfig {
                    propose: c.propose_timeout,
                    vote: c.vote_timeout,
                    delta: c.timeout_delta,
                },
            ),
            snapshot_every: self.ledger.snapshot_every,
            sync_interval: c.sync_interval,
            #[cfg(feature = "misbehave")]
            forge: false,
        })
    }

    /// The HTTP API's socket address.
    pub fn api_addr(&self) -> Result<std::net::SocketAddr, ConfigError> {
        self.api
            .listen
            .parse()
            .map_err(ConfigError::address("[api] listen", &self.api.listen))
    }

    /// The least time between blocks.
    pub fn block_time(&self) -> Duration {
        self.consensus.block_time
    }

    /// The checks of [`NodeConfig::load`].
    pub fn check(&self, doc: &GenesisDoc) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        let api = &self.api;
        if api.max_connections == 0 || api.header_timeout.is_zero() || api.body_timeout.is_zero() {
            return invalid(
                "max_connections, header_timeout and body_timeout in [api] of config.toml must be above 0".into(),
            );
        }
        let p = &self.provider;
        let max_k = doc.genesis.params.max_k.into_iter().min().unwrap_or(0);
        if p.seats_per_segment == 0 || p.seats_per_segment > max_k {
            return invalid(format!(
                "seats_per_segment = {} in [provider] of config.toml: must be between 1 and the network's max_k ({max_k})",
                p.seats_per_segment
            ));
        }
        if let Some(k) = p.human_seats_per_segment
            && (k == 0 || k > max_k)
        {
            return invalid(format!(
                "human_seats_per_segment = {k} in [provider] of config.toml: must be between 1 and the network's max_k ({max_k})"
            ));
        }
        if p.honeypots_per_session > trust_judging::session::honeypot::MAX_PER_SESSION {
            return invalid(format!(
                "honeypots_per_session = {} in [provider] of config.toml: at most {}",
                p.honeypots_per_session,
                trust_judging::session::honeypot::MAX_PER_SESSION
            ));
        }
        if let Err(e) = self.session.resolve(&doc.genesis.params) {
            return invalid(format!("[session] in config.toml: {e}"));
        }
        Ok(())
    }
}

/// The multiaddresses in `list` (setting `what`).
fn addrs(list: &[String], what: &str) -> Result<Vec<libp2p::Multiaddr>, ConfigError> {
    list.iter()
        .map(|s| {
            s.parse::<libp2p::Multiaddr>()
                .map_err(ConfigError::address(&format!("{what} address"), s))
        })
        .collect()
}

/// The consensus WAL directory.
pub fn wal_dir(home: &Path) -> PathBuf {
    data_dir(home).join("consensus")
}

/// Which layout a `config.toml` is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One table per subsystem: what `init` and `testnet init` write.
    Nested,
    /// The flat layout of earlier releases (every setting a top-level key): deprecated,
    /// read with a warning ([`legacy`]).
    Flat,
}

/// A `config.toml` as read: its settings, and the layout they were written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedConfig {
    /// The settings (a flat file's converted into the nested layout).
    pub config: NodeConfig,
    /// How the file was written.
    pub layout: Layout,
}

/// Reads `<home>/config.toml`; a home without one is no node home
/// ([`HomeError::NoHome`]), never one running on the defaults. A flat (deprecated) file is
/// read too, with one warning that says how to convert it ([`load_config_with_layout`]).
pub fn load_config(home: &Path) -> Result<NodeConfig, HomeError> {
    load_config_with_layout(home).map(|l| l.config)
}

/// [`load_config`], saying which layout the file was in. A flat file logs a warning
/// naming the file and the command that converts it.
pub fn load_config_with_layout(home: &Path) -> Result<LoadedConfig, HomeError> {
    let path = home.join(CONFIG_FILE);
    require_home(home)?;
    let loaded = parse_config_with_layout(&read(&path)?).map_err(|e| HomeError::Parse {
        path: path.clone(),
        source: e.into(),
    })?;
    if loaded.layout == Layout::Flat {
        tracing::warn!(file = %path.display(), "{}", legacy::deprecation(&path, home));
    }
    Ok(loaded)
}

/// Why the text of a `config.toml` does not parse: the parser's message (with its line),
/// on one line, or why its layout is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigParseError(String);

impl ConfigParseError {
    /// The TOML parser's error on `text`, on one line, after the line it names.
    fn toml(e: &toml::de::Error, text: &str) -> Self {
        let mut msg = e.message().replace('\n', " ");
        if msg.ends_with("expected a duration") {
            msg.push_str(" such as \"300ms\", \"2s\" or \"1m 30s\"");
        }
        Self(match e.span() {
            Some(s) => {
                let upto = text.get(..s.start).unwrap_or("");
                let line = upto.matches('\n').count().saturating_add(1);
                format!("line {line}: {msg}")
            }
            None => msg,
        })
    }
}

/// Why a config could not be written as the text of a `config.toml`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigWriteError {
    /// A string holds a run of quotes longer than [`MAX_QUOTE_RUN`].
    #[error(
        "a setting holds {0} quote characters in a row, more than the {MAX_QUOTE_RUN} \
         a config file can be written with"
    )]
    QuoteRun(usize),
    /// The config did not encode.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The TOML writer refused it.
    #[error(transparent)]
    Toml(#[from] toml::ser::Error),
}

/// Parses the text of a `config.toml`, in either layout (a flat one converted); the
/// parser's message on one line otherwise.
pub fn parse_config(text: &str) -> Result<NodeConfig, ConfigParseError> {
    parse_config_with_layout(text).map(|l| l.config)
}

/// [`parse_config`], saying which layout the text was in. A text mixing the layouts is
/// refused, naming each flat key and where it belongs.
pub fn parse_config_with_layout(text: &str) -> Result<LoadedConfig, ConfigParseError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| ConfigParseError::toml(&e, text))?;
    let layout = legacy::layout_of(&table)?;
    let config = match layout {
        Layout::Nested => toml::from_str(text).map_err(|e| ConfigParseError::toml(&e, text))?,
        Layout::Flat => legacy::parse_flat(text)?,
    };
    Ok(LoadedConfig { config, layout })
}

/// Longest run of one quote character (`'` or `"`) a config string may hold. The TOML
/// writer counts such runs in a `u8` to choose how to quote a string: a longer run
/// overflows it, which panics where overflow checks are on (found by fuzzing
/// `config_toml`).
pub const MAX_QUOTE_RUN: usize = 255;

/// The longest run of one quote character in any string of `value`.
fn longest_quote_run(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(s) => ['\'', '"']
            .iter()
            .map(|q| s.split(|c| c != *q).map(str::len).max().unwrap_or(0))
            .max()
            .unwrap_or(0),
        serde_json::Value::Array(items) => items.iter().map(longest_quote_run).max().unwrap_or(0),
        serde_json::Value::Object(fields) => {
            fields.values().map(longest_quote_run).max().unwrap_or(0)
        }
        _ => 0,
    }
}

/// The text of a `config.toml` holding `cfg`, as [`write_config`] writes it (the nested
/// layout): text that [`parse_config`] reads back to `cfg`. Refuses a string with a run of
/// more than [`MAX_QUOTE_RUN`] quote characters.
pub fn render_config(cfg: &NodeConfig) -> Result<String, ConfigWriteError> {
    let run = serde_json::to_value(cfg).map(|v| longest_quote_run(&v))?;
    if run > MAX_QUOTE_RUN {
        return Err(ConfigWriteError::QuoteRun(run));
    }
    Ok(toml::to_string_pretty(cfg)?)
}

/// Writes `<home>/config.toml`, refusing to overwrite.
pub fn write_config(home: &Path, cfg: &NodeConfig) -> Result<PathBuf, HomeError> {
    let path = home.join(CONFIG_FILE);
    let text = render_config(cfg).map_err(|e| HomeError::Parse {
        path: path.clone(),
        source: e.into(),
    })?;
    write_new(&path, &text)?;
    Ok(path)
}

/// What [`migrate_config`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migrated {
    /// The file was already nested (or missing): nothing changed.
    AlreadyNested(PathBuf),
    /// The flat file was rewritten nested; the flat one is kept at `backup`.
    Rewritten {
        /// The config file.
        path: PathBuf,
        /// The flat file, as it was.
        backup: PathBuf,
    },
}

/// The nested text of `<home>/config.toml` and the layout the file is in now
/// ([`HomeError::NoHome`] without one). What `config migrate --print` shows.
pub fn migrated_text(home: &Path) -> Result<(String, Layout), HomeError> {
    let path = home.join(CONFIG_FILE);
    require_home(home)?;
    let parse_err = |source: crate::Cause| HomeError::Parse {
        path: path.clone(),
        source,
    };
    let loaded = parse_config_with_layout(&read(&path)?).map_err(|e| parse_err(e.into()))?;
    let text = render_config(&loaded.config).map_err(|e| parse_err(e.into()))?;
    Ok((text, loaded.layout))
}

/// Rewrites a flat `<home>/config.toml` in the nested layout, keeping the flat file as
/// `config.toml.bak` (refused if that exists); a nested file is left as it is. Comments
/// of the flat file are not carried over.
pub fn migrate_config(home: &Path) -> Result<Migrated, HomeError> {
    let path = home.join(CONFIG_FILE);
    let (text, layout) = migrated_text(home)?;
    if layout == Layout::Nested {
        return Ok(Migrated::AlreadyNested(path));
    }
    let backup = home.join(format!("{CONFIG_FILE}.bak"));
    write_new(&backup, &read(&path)?)?;
    let tmp = home.join(format!("{CONFIG_FILE}.new"));
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&tmp)(e)),
    }
    write_new(&tmp, &text)?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(Migrated::Rewritten { path, backup })
}

/// Reads `<home>/genesis.json`.
pub fn load_genesis(home: &Path) -> Result<GenesisDoc, HomeError> {
    load_genesis_file(&home.join(GENESIS_FILE))
}

/// Reads a genesis document from any file, as the node reads its own `genesis.json`
/// (`proof verify --genesis` needs no home).
pub fn load_genesis_file(path: &Path) -> Result<GenesisDoc, HomeError> {
    serde_json::from_str(&read(path)?).map_err(|e| HomeError::Parse {
        path: path.to_path_buf(),
        source: e.into(),
    })
}

/// Writes `<home>/genesis.json`, refusing to overwrite.
pub fn write_genesis(home: &Path, doc: &GenesisDoc) -> Result<PathBuf, HomeError> {
    let path = home.join(GENESIS_FILE);
    let text = serde_json::to_string_pretty(doc).map_err(|e| HomeError::Parse {
        path: path.clone(),
        source: e.into(),
    })?;
    write_new(&path, &text)?;
    Ok(path)
}

/// `<home>/data/ledger`.
pub fn ledger_dir(home: &Path) -> PathBuf {
    data_dir(home).join("ledger")
}

/// `<home>/data`: the node's database (segment keys, salts, trace text, its votes before
/// they are revealed) and the consensus WAL.
pub fn data_dir(home: &Path) -> PathBuf {
    home.join("data")
}

/// Why the node's data directory is not fit to hold its secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataDirError {
    /// It could not be created or read.
    #[error("the node's data directory {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Users other than its owner may enter or read it.
    #[error(
        "the node's data directory {path} is open to other users (mode {mode:03o}): it holds \
         segment keys, salts, trace text and unrevealed votes; run `chmod 700 {path}` and \
         start again"
    )]
    OpenToOthers {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// Makes `<home>/data` owner-only (mode 0700) if it does not exist yet, and refuses one
/// that others may enter or read: nothing is changed then, the operator decides.
pub fn secure_data_dir(home: &Path) -> Result<PathBuf, DataDirError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let path = data_dir(home);
    let io = |source| DataDirError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let mode = std::fs::metadata(&path).map_err(io)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(DataDirError::OpenToOthers { path, mode });
    }
    Ok(path)
}

/// Why the database of a node home could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process holds the database's lock: a node is running on this home (or a
    /// `ledger verify` of it).
    #[error(
        "the home {} is in use by another trust-node process (its database is locked); \
         stop it first",
        .0.display()
    )]
    InUse(PathBuf),
    /// The database could not be opened.
    #[error("the node's database {path}: {source}")]
    Db {
        /// The database's directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: sled::Error,
    },
}

/// Opens the database of the node home `home` (`<home>/data/ledger`: the ledger and
/// every part's own trees), created if missing. One process at a time holds it: when
/// another does, the error says the home is in use ([`StoreError::InUse`]).
pub fn open_store(home: &Path) -> Result<sled::Db, StoreError> {
    let path = ledger_dir(home);
    sled::open(&path).map_err(|source| match lock_held(&source) {
        true => StoreError::InUse(home.to_path_buf()),
        false => StoreError::Db { path, source },
    })
}

/// Whether sled refused a database because another process holds its lock file: sled
/// 0.34 has no error of its own for that, only an I/O error whose message says so.
fn lock_held(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().starts_with("could not acquire lock"))
}

/// The libp2p peer id of an account key (both are the same ed25519 key).
pub fn peer_id(account: &trust_protocol::Keypair) -> Option<libp2p::PeerId> {
    libp2p::identity::Keypair::ed25519_from_bytes(account.seed())
        .ok()
        .map(|k| k.public().to_peer_id())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[ledger] keep_blocks` reads from its table, and is refused below the floor or
    /// without snapshots to prune down to, naming the fix.
    #[test]
    fn keep_blocks_is_a_ledger_setting_with_a_floor_and_needs_snapshots() {
        let cfg: NodeConfig =
            toml::from_str("[ledger]\nsnapshot_every = 20\nkeep_blocks = 500\n").expect("parses");
        assert_eq!(cfg.ledger.keep_blocks().unwrap(), Some(500));
        assert_eq!(NodeConfig::default().ledger.keep_blocks().unwrap(), None);
        let low = LedgerConfig {
            keep_blocks: Some(10),
            ..LedgerConfig::default()
        };
        let e = low.keep_blocks().unwrap_err().to_string();
        assert!(e.contains("keep at least 100"), "{e}");
        let no_snapshots = LedgerConfig {
            snapshot_every: 0,
            ..cfg.ledger.clone()
        };
        let e = no_snapshots.keep_blocks().unwrap_err().to_string();
        assert!(e.contains("[ledger] snapshot_every"), "{e}");
        assert!(toml::from_str::<NodeConfig>("[ledger]\nkeep = 5\n").is_err());
        // keep_blocks is written back only when set.
        let plain = toml::to_string(&NodeConfig::default()).unwrap();
        assert!(
            plain.contains("[ledger]\nsnapshot_every = 100\n") && !plain.contains("keep_blocks"),
            "{plain}"
        );
        assert!(
            toml::to_string(&cfg)
                .unwrap()
                .contains("[ledger]\nsnapshot_every = 20\nkeep_blocks = 500")
        );
    }

    /// The data directory holds segment keys, salts and trace text: a new one is made
    /// owner-only, and one others may read is refused as it is (not silently changed).
    #[test]
    fn the_data_directory_is_made_owner_only_and_an_open_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let dir = secure_data_dir(home.path()).unwrap();
        assert_eq!(dir, data_dir(home.path()));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        secure_data_dir(home.path()).expect("an owner-only directory is fine");
        for open in [0o755, 0o750, 0o701] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(open)).unwrap();
            let e = secure_data_dir(home.path()).unwrap_err();
            assert!(
                matches!(e, DataDirError::OpenToOthers { mode, .. } if mode == open),
                "{e}"
            );
            assert!(e.to_string().contains("chmod 700"), "{e}");
            assert_eq!(mode(&dir), open, "the mode was changed");
        }
    }

    /// Found by the `config_toml` fuzz target: a config that parses, whose moniker holds
    /// 293 single quotes in a row, made the TOML writer overflow a `u8` counter (a panic
    /// with overflow checks on) when written back. It is refused with a reason instead,
    /// and a run of [`MAX_QUOTE_RUN`] quotes still writes and reads back.
    #[test]
    fn a_config_with_a_long_run_of_quotes_is_refused_when_written_not_a_panic() {
        let crash = format!("moniker = \"trust{}0.2.\t<1757\"\n", "'".repeat(293));
        let cfg = parse_config(&crash).expect("the fuzzer's input parses");
        let err = render_config(&cfg).expect_err("too many quotes in a row");
        assert!(err.to_string().contains("293 quote characters"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            write_config(dir.path(), &cfg),
            Err(HomeError::Parse { .. })
        ));
        for q in ["'", "\\\""] {
            let text = format!("moniker = \"a{}b\"\n", q.repeat(MAX_QUOTE_RUN));
            let cfg = parse_config(&text).expect("parses");
            let written = render_config(&cfg).expect("a run of the limit writes");
            assert_eq!(parse_config(&written), Ok(cfg));
        }
    }

    #[test]
    fn config_round_trips_and_refuses_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = NodeConfig {
            moniker: "n0".into(),
            ..NodeConfig::default()
        };
        write_config(dir.path(), &cfg).unwrap();
        assert_eq!(load_config(dir.path()).unwrap(), cfg);
        assert!(matches!(
            write_config(dir.path(), &cfg),
            Err(HomeError::Exists(_))
        ));
        std::fs::write(dir.path().join(CONFIG_FILE), "monikr = \"x\"\n").unwrap();
        let err = load_config(dir.path()).unwrap_err().to_string();
        assert!(err.contains("monikr"), "{err}");
    }

    /// A home whose database another process holds (a node running on it) is said to be
    /// in use, naming the home; the holder's database is untouched and it goes on.
    #[test]
    fn a_home_whose_database_is_held_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let first = open_store(home).unwrap();
        first.insert(b"k", b"v".as_slice()).unwrap();
        let err = open_store(home).unwrap_err();
        assert!(
            matches!(err, StoreError::InUse(ref h) if h == home),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "the home {} is in use by another trust-node process (its database is locked); stop it first",
                home.display()
            )
        );
        assert_eq!(first.get(b"k").unwrap().as_deref(), Some(b"v".as_slice()));
        drop(first);
        // Released, it opens again.
        assert!(open_store(home).is_ok());
        // A database that fails otherwise keeps sled's reason.
        let file = home.join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(open_store(&file), Err(StoreError::Db { .. })));
    }

    /// A directory without a config.toml is no node home: reading one says so, naming
    /// the path, instead of running on the defaults (whose API port is another node's, or
    /// none).
    #[test]
    fn a_home_without_a_config_is_no_node_home() {
        let dir = tempfile::tempdir().unwrap();
        let typo = dir.path().join("nod0");
        for err in [
            load_config(&typo).unwrap_err(),
            load_config(dir.path()).unwrap_err(),
            require_home(dir.path()).unwrap_err(),
        ] {
            assert!(matches!(err, HomeError::NoHome(_)), "{err:?}");
            let said = err.to_string();
            assert!(said.starts_with("no node home at "), "{said}");
            assert!(said.contains("(no config.toml)"), "{said}");
            assert!(said.contains("--home DIR"), "{said}");
        }
        assert!(
            load_config(&typo)
                .unwrap_err()
                .to_string()
                .contains(&typo.display().to_string())
        );
        write_config(dir.path(), &NodeConfig::default()).unwrap();
        assert!(require_home(dir.path()).is_ok());
    }

    /// Every setting set away from its default: each table, each optional key.
    fn everything_set() -> NodeConfig {
        NodeConfig {
            moniker: "v1".into(),
            network: NetworkConfig {
                listen: "/ip4/0.0.0.0/tcp/1".into(),
                bootstrap: vec!["/dns4/a/tcp/1".into()],
                max_peers_per_ip: 3,
            },
            consensus: ConsensusConfig {
                listen: "/ip4/0.0.0.0/tcp/2".into(),
                bootstrap: vec!["/dns4/a/tcp/2".into(), "/dns4/b/tcp/2".into()],
                block_time: Duration::from_millis(300),
                propose_timeout: Some(Duration::from_millis(900)),
                vote_timeout: Some(Duration::from_millis(1_500)),
                timeout_delta: Some(Duration::from_millis(50)),
                sync_interval: Duration::from_millis(2_500),
            },
            mempool: MempoolConfig {
                max_txs: 5,
                max_bytes: 6,
            },
            api: ApiConfig {
                listen: "0.0.0.0:1".into(),
                header_timeout: Duration::from_millis(7),
                body_timeout: Duration::from_secs(61),
                max_connections: 8,
                operator_token_file: "/secret/token".into(),
            },
            ipfs: IpfsConfig {
                api: Some("http://127.0.0.1:5001".into()),
            },
            llm: LlmConfig {
                url: Some("http://127.0.0.1:8080/v1".into()),
                model: Some("m".into()),
                api_key_env: Some("K".into()),
                timeout: Some(Duration::from_secs(20)),
                retries: Some(4),
                max_concurrent: Some(5),
                max_reply_bytes: Some(1_000),
                deadline: Some(Duration::from_millis(4_000)),
                ares: Some(trust_judging::llm::ares::AresParams {
                    epsilon: 0.05,
                    ..Default::default()
                }),
            },
            auditor: AuditorConfig {
                human: true,
                ..AuditorConfig::default()
            },
            computer: ComputerConfig {
                execute: false,
                python: Some("/usr/bin/python3".into()),
                cpu_seconds: 5,
                memory_mib: 256,
                wall: Duration::from_secs(8),
            },
            provider: ProviderConfig {
                seats_per_segment: 5,
                human_seats_per_segment: Some(1),
                honeypots_per_session: 0,
                max_fee_per_session: Some(10),
                max_fee_per_day: Some(100),
            },
            session: trust_judging::session::terms::SessionOptions {
                seats: Some(4),
                ..Default::default()
            },
            ledger: LedgerConfig {
                snapshot_every: 20,
                keep_blocks: Some(500),
            },
        }
    }

    /// The nested layout writes one table per subsystem, durations as humantime strings,
    /// and reads back to the same settings.
    #[test]
    fn the_nested_layout_round_trips_every_table() {
        let cfg = everything_set();
        let text = render_config(&cfg).unwrap();
        let back = parse_config_with_layout(&text).unwrap();
        assert_eq!(back.layout, Layout::Nested);
        assert_eq!(back.config, cfg);
        for part in [
            "moniker = \"v1\"\n",
            "[network]\nlisten = ",
            "[consensus]\nlisten = ",
            "block_time = \"300ms\"\n",
            "propose_timeout = \"900ms\"\n",
            "vote_timeout = \"1s 500ms\"\n",
            "sync_interval = \"2s 500ms\"\n",
            "[mempool]\nmax_txs = 5\n",
            "[api]\nlisten = ",
            "body_timeout = \"1m 1s\"\n",
            "[ipfs]\napi = ",
            "[llm]\nurl = ",
            "timeout = \"20s\"\n",
            "deadline = \"4s\"\n",
            "[llm.ares]\nepsilon = 0.05\n",
            "[auditor]\nhuman = true\n",
            "[provider]\nseats_per_segment = 5\n",
            "[session]\nseats = 4\n",
            "[ledger]\nsnapshot_every = 20\nkeep_blocks = 500\n",
        ] {
            assert!(text.contains(part), "{part:?} not in:\n{text}");
        }
        // No key of the flat layout is written.
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert!(
            table
                .keys()
                .all(|k| legacy::RENAMES.iter().all(|r| r.0 != k)),
            "{text}"
        );
    }

    /// Durations are humantime strings: `"300ms"`, `"2s"`, `"1m 30s"`; a bare number or a
    /// string that is no duration is refused, naming the line.
    #[test]
    fn durations_read_as_humantime_strings() {
        let cfg = parse_config(
            "[consensus]\nblock_time = \"300ms\"\npropose_timeout = \"2s\"\nsync_interval = \"1m 30s\"\n[api]\nheader_timeout = \"250ms\"\n[llm]\ndeadline = \"1h\"\n",
        )
        .unwrap();
        assert_eq!(cfg.consensus.block_time, Duration::from_millis(300));
        assert_eq!(cfg.block_time(), Duration::from_millis(300));
        assert_eq!(cfg.consensus.propose_timeout, Some(Duration::from_secs(2)));
        assert_eq!(cfg.consensus.sync_interval, Duration::from_secs(90));
        assert_eq!(cfg.api_limits().header_timeout, Duration::from_millis(250));
        assert_eq!(cfg.llm_settings().llm_deadline_ms, Some(3_600_000));
        assert_eq!(cfg.llm_settings().llm_timeout_ms, None);
        for bad in [
            "[consensus]\nblock_time = 300\n",
            "[consensus]\nblock_time = \"300\"\n",
            "[consensus]\nblock_time = \"soon\"\n",
        ] {
            let e = parse_config(bad).unwrap_err().to_string();
            assert!(e.starts_with("line 2: "), "{bad}: {e}");
            assert!(
                e.ends_with("expected a duration such as \"300ms\", \"2s\" or \"1m 30s\""),
                "{bad}: {e}"
            );
        }
    }

    /// What `testnet init` (and `init`) writes is the nested layout, and parses back to
    /// what the node then runs with.
    #[test]
    fn testnet_init_writes_a_nested_config_that_parses() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        for args in [
            vec![
                "trust-node",
                "testnet",
                "init",
                "--nodes",
                "2",
                "--home",
                home,
            ],
            vec!["trust-node", "init", "--home", &format!("{home}/solo")],
        ] {
            let cli = crate::cli::Cli::try_parse_from(&args).unwrap();
            let ran = match cli.command {
                crate::cli::Command::Testnet(a) => crate::cli::home::run_testnet(a),
                crate::cli::Command::Init(a) => crate::cli::home::run_init(a),
                other => panic!("{other:?}"),
            };
            ran.unwrap_or_else(|e| panic!("{args:?}: {}", e.message));
        }
        for (node, port) in [("node0", 26602), ("node1", 26612), ("solo", 8480)] {
            let h = dir.path().join(node);
            let text = std::fs::read_to_string(h.join(CONFIG_FILE)).unwrap();
            let parsed = parse_config_with_layout(&text).unwrap();
            assert_eq!(parsed.layout, Layout::Nested, "{text}");
            assert_eq!(load_config(&h).unwrap(), parsed.config);
            assert!(text.contains("\n[consensus]\n"), "{text}");
            assert!(text.contains("block_time = \"1s\"\n"), "{text}");
            assert!(text.contains("sync_interval = \"2s\"\n"), "{text}");
            assert!(text.contains("header_timeout = \"10s\"\n"), "{text}");
            assert!(!text.contains("_ms"), "{text}");
            assert_eq!(parsed.config.api_addr().unwrap().port(), port);
        }
    }

    fn corpus(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus/config_toml")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The flat files earlier releases wrote (the fuzz corpus keeps two, and the LLM
    /// README's example) read into the same settings as their nested equivalents beside
    /// them, and the loader says they were flat (it warns then); the nested seeds of the
    /// defaults are what the writer writes.
    #[test]
    fn the_flat_corpus_files_read_as_their_nested_equivalents() {
        for name in ["default", "validator", "llm"] {
            let flat = parse_config_with_layout(&corpus(name)).unwrap();
            assert_eq!(flat.layout, Layout::Flat, "{name}");
            let nested = parse_config_with_layout(&corpus(&format!("nested-{name}"))).unwrap();
            assert_eq!(nested.layout, Layout::Nested, "nested-{name}");
            assert_eq!(flat.config, nested.config, "{name}");
            if name != "llm" {
                assert_eq!(
                    render_config(&flat.config).unwrap(),
                    corpus(&format!("nested-{name}"))
                );
            }
            let home = tempfile::tempdir().unwrap();
            std::fs::write(home.path().join(CONFIG_FILE), corpus(name)).unwrap();
            let loaded = load_config_with_layout(home.path()).unwrap();
            assert_eq!(loaded, flat, "{name}");
        }
        let v = parse_config(&corpus("validator")).unwrap();
        assert_eq!(v.moniker, "validator-1");
        assert_eq!(
            v.consensus.propose_timeout,
            Some(Duration::from_millis(900))
        );
        assert!(v.auditor.human);
        assert_eq!(v.network.bootstrap.len(), 1);
        assert_eq!(v.provider.honeypots_per_session, 2);
        let llm = parse_config(&corpus("llm")).unwrap();
        assert_eq!(llm.llm.timeout, Some(Duration::from_secs(20)));
        assert_eq!(llm.llm_settings().llm_timeout_ms, Some(20_000));
        assert!(llm.llm.ares.is_some_and(|a| a.calibration_min == 14));
        // Every seed, flat or nested, writes back (nested) to what it read, as the fuzz
        // target's check asks.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/config_toml");
        for seed in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(seed.unwrap().path()).unwrap();
            let cfg = parse_config(&text).unwrap();
            let written = parse_config_with_layout(&render_config(&cfg).unwrap()).unwrap();
            assert_eq!((written.config, written.layout), (cfg, Layout::Nested));
        }
        // The warning names the file and the command that converts it.
        let w = legacy::deprecation(Path::new("/h/config.toml"), Path::new("/h"));
        assert!(
            w.starts_with("/h/config.toml is in the flat config.toml layout, which is deprecated"),
            "{w}"
        );
        assert!(w.contains("`trust-node config migrate --home /h`"), "{w}");
    }

    /// Every key of the flat layout, set away from its default, converts exactly into its
    /// place in the nested one; each alone makes a file flat.
    #[test]
    fn every_flat_key_converts_into_its_table() {
        let flat = r#"moniker = "v1"
p2p_listen = "/ip4/0.0.0.0/tcp/1"
bootstrap = ["/dns4/a/tcp/1"]
max_peers_per_ip = 3
consensus_listen = "/ip4/0.0.0.0/tcp/2"
consensus_bootstrap = ["/dns4/a/tcp/2", "/dns4/b/tcp/2"]
block_time_ms = 300
propose_timeout_ms = 900
vote_timeout_ms = 1500
timeout_delta_ms = 50
sync_interval_ms = 2500
mempool_max = 5
mempool_max_bytes = 6
api_listen = "0.0.0.0:1"
api_header_timeout_ms = 7
api_body_timeout_ms = 61000
api_max_connections = 8
operator_token_file = "/secret/token"
ipfs_api = "http://127.0.0.1:5001"
llm_url = "http://127.0.0.1:8080/v1"
llm_model = "m"
llm_api_key_env = "K"
llm_timeout_ms = 20000
llm_retries = 4
llm_max_concurrent = 5
llm_max_reply_bytes = 1000
llm_deadline_ms = 4000
human = true
seats_per_segment = 5
human_seats_per_segment = 1
honeypots_per_session = 0
max_fee_per_session = 10
max_fee_per_day = 100
snapshot_every = 20
[llm_ares]
epsilon = 0.05
[session]
seats = 4
[ledger]
keep_blocks = 500
"#;
        let parsed = parse_config_with_layout(flat).unwrap();
        assert_eq!(parsed.layout, Layout::Flat);
        // The flat layout predates `[computer]`: it leaves that table at its defaults.
        let expected = NodeConfig {
            computer: ComputerConfig::default(),
            ..everything_set()
        };
        assert_eq!(parsed.config, expected);
        let (top, _) = flat.split_once("\n[").unwrap();
        let mut seen = 0;
        for line in top.lines().skip(1) {
            let key = line.split(' ').next().unwrap();
            let one = parse_config_with_layout(line).unwrap();
            assert_eq!(one.layout, Layout::Flat, "{line}");
            assert_ne!(one.config, NodeConfig::default(), "{line}");
            assert!(legacy::new_home_of(key).is_some(), "{key}");
            seen += 1;
        }
        let ares = parse_config_with_layout("[llm_ares]\nepsilon = 0.05\n").unwrap();
        assert_eq!(ares.layout, Layout::Flat);
        assert_eq!(ares.config.llm.ares, everything_set().llm.ares);
        assert_eq!(seen + 1, legacy::RENAMES.len());
    }

    /// A file that mixes the layouts is refused, naming each flat key and where it goes;
    /// an unknown key is refused naming it and its line, in either layout.
    #[test]
    fn a_mixed_file_or_an_unknown_key_is_refused_naming_the_key() {
        let mixed = "moniker = \"m\"\nblock_time_ms = 300\napi_listen = \"0.0.0.0:1\"\n[consensus]\nlisten = \"/ip4/0.0.0.0/tcp/2\"\n";
        let e = parse_config(mixed).unwrap_err().to_string();
        for part in [
            "mixes the deprecated flat layout (top-level ",
            "`api_listen`",
            ") with the nested one ([consensus]): write it all nested, where ",
            "`block_time_ms` is `block_time` in [consensus], a duration such as \"300ms\"",
            "`api_listen` is `listen` in [api]",
        ] {
            assert!(e.contains(part), "{part:?} not in {e}");
        }
        let e = parse_config("human = true\n[ledger]\nsnapshot_every = 5\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`snapshot_every` in [ledger]")
                && e.contains("`human` is `human` in [auditor]"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), mixed).unwrap();
        let e = load_config(dir.path()).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}: this file mixes",
                dir.path().join(CONFIG_FILE).display()
            )),
            "{e}"
        );
        for (text, key, line) in [
            (
                "moniker = \"m\"\n[consensus]\nblok_time = \"1s\"\n",
                "blok_time",
                3,
            ),
            ("[networks]\nlisten = \"x\"\n", "networks", 1),
            (
                "[llm]\nurl = \"u\"\n[llm.ares]\nepsilonn = 0.1\n",
                "epsilonn",
                4,
            ),
            ("block_time_ms = 300\napi_lisen = \"x\"\n", "api_lisen", 2),
            (
                "[api]\nlisten = \"x\"\nblock_time_ms = 300\n",
                "block_time_ms",
                3,
            ),
        ] {
            let e = parse_config(text).unwrap_err().to_string();
            assert!(e.contains(&format!("unknown field `{key}`")), "{text}: {e}");
            assert!(e.starts_with(&format!("line {line}: ")), "{text}: {e}");
        }
    }

    /// `config migrate` rewrites a flat file nested, keeping the flat one beside it, and
    /// leaves a nested file (or an existing backup) alone.
    #[test]
    fn migrate_rewrites_a_flat_file_and_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let flat = corpus("validator");
        std::fs::write(home.join(CONFIG_FILE), &flat).unwrap();
        let before = load_config(home).unwrap();
        let (text, layout) = migrated_text(home).unwrap();
        assert_eq!(
            (text.as_str(), layout),
            (corpus("nested-validator").as_str(), Layout::Flat)
        );
        let done = migrate_config(home).unwrap();
        let backup = home.join("config.toml.bak");
        assert_eq!(
            done,
            Migrated::Rewritten {
                path: home.join(CONFIG_FILE),
                backup: backup.clone()
            }
        );
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), flat);
        let after = load_config_with_layout(home).unwrap();
        assert_eq!((after.config, after.layout), (before, Layout::Nested));
        assert!(!home.join("config.toml.new").exists());
        assert_eq!(
            migrate_config(home).unwrap(),
            Migrated::AlreadyNested(home.join(CONFIG_FILE))
        );
        // A second flat file does not overwrite the first one's backup.
        std::fs::write(home.join(CONFIG_FILE), &flat).unwrap();
        assert!(matches!(migrate_config(home), Err(HomeError::Exists(p)) if p == backup));
        assert_eq!(
            std::fs::read_to_string(home.join(CONFIG_FILE)).unwrap(),
            flat
        );
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            migrated_text(empty.path()),
            Err(HomeError::NoHome(_))
        ));
        assert!(matches!(
            migrate_config(empty.path()),
            Err(HomeError::NoHome(_))
        ));
    }

    #[test]
    fn the_session_table_round_trips_refuses_typos_and_is_checked_against_the_genesis() {
        let text = "moniker = \"p\"\n[session]\nseats = 4\nbeta = 0.8\ntiers = [\"computer\", \"llm\"]\ndomain = \"medicine\"\nmax_exposure = 0.5\n";
        let cfg = parse_config(text).expect("parses");
        assert_eq!(cfg.session.seats, Some(4));
        assert_eq!(cfg.session.beta, Some(0.8));
        assert_eq!(cfg.session.domain.as_deref(), Some("medicine"));
        assert_eq!(parse_config(&render_config(&cfg).unwrap()), Ok(cfg.clone()));
        let typo = parse_config("[session]\nseat = 4\n")
            .unwrap_err()
            .to_string();
        assert!(typo.contains("seat"), "{typo}");
        // Nothing set writes no table at all.
        assert!(
            !render_config(&NodeConfig::default())
                .unwrap()
                .contains("[session]")
        );
        // Out of the network's limits: named at start.
        let doc = GenesisDoc {
            chain_name: "t".into(),
            validators: vec![],
            genesis: trust_contracts::Genesis {
                params: trust_contracts::Params::default(),
                accounts: vec![],
                auditors: vec![],
            },
        };
        let mut bad = cfg;
        bad.session.seats = Some(40);
        let err = bad.check(&doc).unwrap_err().to_string();
        assert!(
            err.contains("[session] in config.toml: k = 40 Computer seats asked"),
            "{err}"
        );
    }

    #[test]
    fn llm_keys_round_trip_and_hold_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = NodeConfig {
            llm: LlmConfig {
                url: Some("http://127.0.0.1:8080/v1".into()),
                model: Some("smollm2".into()),
                api_key_env: Some("MY_LLM_KEY".into()),
                ares: Some(trust_judging::llm::ares::AresParams {
                    epsilon: 0.05,
                    ..Default::default()
                }),
                ..LlmConfig::default()
            },
            ..NodeConfig::default()
        };
        write_config(dir.path(), &cfg).unwrap();
        assert_eq!(load_config(dir.path()).unwrap(), cfg);
        let text = std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
        assert!(
            text.contains("[llm]\nurl = \"http://127.0.0.1:8080/v1\"\n"),
            "{text}"
        );
        assert!(text.contains("api_key_env = \"MY_LLM_KEY\""), "{text}");
        assert!(
            text.contains("[llm.ares]") && text.contains("epsilon = 0.05"),
            "{text}"
        );
        // A config without them writes none of them.
        let plain = tempfile::tempdir().unwrap();
        write_config(plain.path(), &NodeConfig::default()).unwrap();
        let text = std::fs::read_to_string(plain.path().join(CONFIG_FILE)).unwrap();
        assert!(!text.contains("llm"), "{text}");
    }

    #[test]
    fn peer_id_is_stable_and_per_key() {
        let a = trust_protocol::Keypair::from_label("a");
        let b = trust_protocol::Keypair::from_label("b");
        assert_eq!(peer_id(&a), peer_id(&a));
        assert_ne!(peer_id(&a), peer_id(&b));
    }
}
