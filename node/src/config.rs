//! The node's home directory: `config.toml` (how this node runs), `genesis.json` (what
//! network it joins), `keys/` and `data/`.
//!
//! ```text
//! <home>/config.toml     NodeConfig, every field optional with the defaults below
//! <home>/genesis.json    GenesisDoc, identical on every node of a network
//! <home>/keys/           account.key, sealing.key (see crate::keys)
//! <home>/operator.token  the operator token: the provider API and the audit form (0600,
//!                        see crate::keys)
//! <home>/data/ledger/    the sled ledger (see crate::ledger)
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trust_contracts::Genesis;
use trust_protocol::{AccountId, Hash, encoding};

/// Config file name under the home directory.
pub const CONFIG_FILE: &str = "config.toml";
/// Genesis file name under the home directory.
pub const GENESIS_FILE: &str = "genesis.json";
/// Largest config or genesis file read.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How this node runs. Flags override these values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// A name for logs and status.
    pub moniker: String,
    /// libp2p listen address of the node's swarm (gossip, sync, queries, Bitswap).
    pub p2p_listen: String,
    /// libp2p listen address of the consensus engine's own swarm.
    pub consensus_listen: String,
    /// HTTP API address (loopback by default: expose it deliberately).
    pub api_listen: String,
    /// Peers dialled at start (`/ip4/.../tcp/.../p2p/<peer id>`).
    pub bootstrap: Vec<String>,
    /// Consensus peers dialled at start.
    pub consensus_bootstrap: Vec<String>,
    /// Contract state snapshot every this many blocks.
    pub snapshot_every: u64,
    /// Most transactions the mempool holds.
    pub mempool_max: usize,
    /// Most bytes of encoded transactions the mempool holds; when full it evicts from the
    /// sender ranked lowest (failing senders first, then the largest holder). Default
    /// 64 MiB.
    pub mempool_max_bytes: usize,
    /// Peers from one IP address this node keeps connected, validators and bootstrap
    /// peers not counted (they always have a slot). Default 8.
    pub max_peers_per_ip: usize,
    /// Least time between blocks, in milliseconds (consensus waits this long after a
    /// decision before starting the next height).
    pub block_time_ms: u64,
    /// How long round 0 waits for a proposal, in milliseconds (later rounds wait longer).
    /// Unset: two block times, between 400 and 3000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propose_timeout_ms: Option<u64>,
    /// How long a round waits once 2/3 of the prevotes (or precommits) are in but do not
    /// agree, in milliseconds. Unset: one block time, between 200 and 1000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vote_timeout_ms: Option<u64>,
    /// How much each round timeout grows per further round of a height, in milliseconds.
    /// Unset: half a block time, between 100 and 500.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_delta_ms: Option<u64>,
    /// How often peers exchange their heights for catch-up sync, in milliseconds.
    pub sync_interval_ms: u64,
    /// Seats drawn per segment (`k_t`, every tier) in sessions this node opens as a
    /// provider; a segment is decided by `ceil(0.6 k)` agreeing votes. Default 3, at most
    /// the genesis `max_k`.
    pub seats_per_segment: u8,
    /// Honeypots (known-error segments, blinded among the real ones) this node plants in
    /// each session it opens as a provider, to expose seats that approve everything; 0
    /// plants none, at most 8. Default 1.
    pub honeypots_per_session: usize,
    /// An external IPFS node's RPC API (e.g. `http://127.0.0.1:5001`): ciphertexts this
    /// node provides are stored there too, and seats read from it before asking peers.
    /// Unset: the embedded blob store and Bitswap only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipfs_api: Option<String>,
    /// Base URL of an OpenAI-compatible chat endpoint for this node's LLM seats (e.g.
    /// `http://127.0.0.1:8080/v1`: llama.cpp server, vLLM, Ollama, a hosted API). Unset:
    /// this node has no LLM judge, and LLM seats it holds abstain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_url: Option<String>,
    /// The model name sent to the endpoint (default `default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_model: Option<String>,
    /// The name of the environment variable holding the endpoint's API key (the key
    /// itself is never written here or logged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_api_key_env: Option<String>,
    /// One LLM request's timeout, in milliseconds (default 20 000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_timeout_ms: Option<u64>,
    /// Retries of a failed LLM request, with exponential backoff (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_retries: Option<u32>,
    /// LLM requests in flight at once from this node (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_max_concurrent: Option<usize>,
    /// Largest LLM reply read, in bytes (default 65 536).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_max_reply_bytes: Option<usize>,
    /// How long one segment's LLM judgement may take before the seat abstains, in
    /// milliseconds (default: half the commit window at the block time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_deadline_ms: Option<u64>,
    /// The operator token's file (relative to the home unless absolute): the secret that
    /// logs a person in to the node's audit form. Created with mode 0600 by `init`,
    /// `testnet init`, or `run` when missing; `run` refuses one group or others can read.
    pub operator_token_file: String,
    /// Human-tier seats: this node's Human seats wait for a person at the audit form
    /// (`/audit` on the API listener) and abstain when nobody judges them in time. Also
    /// `run --human`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub human: bool,
    /// Seats per Human-tier segment in sessions this node opens as a provider (default
    /// `seats_per_segment`): a network with fewer people than that still audits Human
    /// segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_seats_per_segment: Option<u8>,
    /// The largest fee one session this node opens as a provider may escrow; a
    /// `POST /v1/sessions` over it is refused with 403. Unset: no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fee_per_session: Option<u64>,
    /// The largest sum of the fees of the sessions this node opened in the last 24 hours;
    /// a session that would go over it is refused with 403. Unset: no cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fee_per_day: Option<u64>,
    /// How long a client may take to send a request's headers (and how long an idle
    /// connection stays open), in milliseconds. Default 10 000.
    pub api_header_timeout_ms: u64,
    /// How long a client may take to send a request's body, in milliseconds. Default
    /// 30 000.
    pub api_body_timeout_ms: u64,
    /// Connections the API serves at once; further ones are answered 503 and closed.
    /// Default 256.
    pub api_max_connections: usize,
    /// ARES settings (`[llm_ares]`: epsilon, delta, given_soundness, valid_at, invalid_at).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_ares: Option<crate::audit::llm::ares::AresParams>,
    /// Defaults for the sessions this node opens as a provider (`[session]`: seats,
    /// computer_seats, llm_seats, human_seats, racing_seats, tau, beta, computer_weight,
    /// llm_weight, human_weight, tiers, domain, require_domain, fee, commit_window,
    /// reveal_window, max_exposure). A request's own settings win over these.
    #[serde(skip_serializing_if = "crate::audit::provider::terms::SessionOptions::is_empty")]
    pub session: crate::audit::provider::terms::SessionOptions,
    /// What the ledger keeps (`[ledger]`: keep_blocks).
    #[serde(skip_serializing_if = "LedgerConfig::is_default")]
    pub ledger: LedgerConfig,
}

/// `[ledger]` in `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LedgerConfig {
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
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The setting checked against `snapshot_every`: pruning needs snapshots to start from.
    pub fn keep_blocks(&self, snapshot_every: u64) -> Result<Option<u64>, ConfigError> {
        match self.keep_blocks {
            None => Ok(None),
            Some(n) if n < MIN_KEEP_BLOCKS => Err(ConfigError::Invalid(format!(
                "[ledger] keep_blocks = {n}: keep at least {MIN_KEEP_BLOCKS} blocks, or remove it to keep every block"
            ))),
            Some(_) if snapshot_every == 0 => Err(ConfigError::Invalid(
                "[ledger] keep_blocks needs snapshots to prune down to: set snapshot_every above 0"
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
            p2p_listen: "/ip4/127.0.0.1/tcp/26656".into(),
            consensus_listen: "/ip4/127.0.0.1/tcp/26657".into(),
            api_listen: "127.0.0.1:8480".into(),
            bootstrap: Vec::new(),
            consensus_bootstrap: Vec::new(),
            snapshot_every: 100,
            mempool_max: 10_000,
            mempool_max_bytes: crate::mempool::DEFAULT_MAX_BYTES,
            max_peers_per_ip: crate::net::DEFAULT_MAX_PEERS_PER_IP,
            block_time_ms: 1_000,
            propose_timeout_ms: None,
            vote_timeout_ms: None,
            timeout_delta_ms: None,
            sync_interval_ms: 2_000,
            seats_per_segment: 3,
            honeypots_per_session: crate::audit::provider::honeypot::DEFAULT_PER_SESSION,
            ipfs_api: None,
            llm_url: None,
            llm_model: None,
            llm_api_key_env: None,
            llm_timeout_ms: None,
            llm_retries: None,
            llm_max_concurrent: None,
            llm_max_reply_bytes: None,
            llm_deadline_ms: None,
            operator_token_file: crate::keys::OPERATOR_TOKEN_FILE.into(),
            human: false,
            human_seats_per_segment: None,
            max_fee_per_session: None,
            max_fee_per_day: None,
            api_header_timeout_ms: 10_000,
            api_body_timeout_ms: 30_000,
            api_max_connections: 256,
            llm_ares: None,
            session: crate::audit::provider::terms::SessionOptions::default(),
            ledger: LedgerConfig::default(),
        }
    }
}

impl NodeConfig {
    /// The API server's limits.
    pub fn api_limits(&self) -> crate::api::server::Limits {
        crate::api::server::Limits {
            header_timeout: std::time::Duration::from_millis(self.api_header_timeout_ms),
            body_timeout: std::time::Duration::from_millis(self.api_body_timeout_ms),
            max_connections: self.api_max_connections,
        }
    }

    /// The provider's spending cap.
    pub fn spending_cap(&self) -> crate::audit::provider::SpendingCap {
        crate::audit::provider::SpendingCap {
            per_session: self.max_fee_per_session,
            per_day: self.max_fee_per_day,
        }
    }

    /// Where the operator token lives for the node at `home`.
    pub fn operator_token_path(&self, home: &Path) -> PathBuf {
        home.join(&self.operator_token_file)
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
    /// The file does not parse.
    #[error("{path}: {reason}")]
    Parse {
        /// File.
        path: PathBuf,
        /// Parser message.
        reason: String,
    },
    /// The file is too large.
    #[error("{0} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge(PathBuf),
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
    /// `api_listen`.
    pub api_listen: Option<String>,
    /// `p2p_listen`.
    pub p2p_listen: Option<String>,
    /// `consensus_listen`.
    pub consensus_listen: Option<String>,
    /// Least time between blocks (`block_time_ms`).
    pub block_time: Option<std::time::Duration>,
    /// `ipfs_api`.
    pub ipfs_api: Option<String>,
    /// `llm_url`.
    pub llm_url: Option<String>,
    /// `llm_model`.
    pub llm_model: Option<String>,
    /// `llm_api_key_env`.
    pub llm_api_key_env: Option<String>,
    /// `human = true`: Human seats wait for a person at the audit form.
    pub human: bool,
    /// `--state-sync`: API addresses of nodes to fetch a snapshot from when the ledger
    /// holds no block ([`crate::statesync`]).
    pub state_sync: Vec<String>,
    /// `--state-sync-trust`: the block the snapshot must be at ([`crate::statesync`]).
    pub state_sync_trust: Option<crate::proof::TrustedBlock>,
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
        set(&mut cfg.api_listen, o.api_listen);
        set(&mut cfg.p2p_listen, o.p2p_listen);
        set(&mut cfg.consensus_listen, o.consensus_listen);
        cfg.ipfs_api = o.ipfs_api.or(cfg.ipfs_api);
        cfg.llm_url = o.llm_url.or(cfg.llm_url);
        cfg.llm_model = o.llm_model.or(cfg.llm_model);
        cfg.llm_api_key_env = o.llm_api_key_env.or(cfg.llm_api_key_env);
        cfg.human |= o.human;
        if let Some(t) = o.block_time {
            cfg.block_time_ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
        }
        cfg.check(doc)?;
        Ok(cfg)
    }

    /// The LLM tier's settings.
    pub fn llm_settings(&self) -> crate::audit::llm::setup::LlmSettings {
        crate::audit::llm::setup::LlmSettings {
            llm_url: self.llm_url.clone(),
            llm_model: self.llm_model.clone(),
            llm_api_key_env: self.llm_api_key_env.clone(),
            llm_timeout_ms: self.llm_timeout_ms,
            llm_retries: self.llm_retries,
            llm_max_concurrent: self.llm_max_concurrent,
            llm_max_reply_bytes: self.llm_max_reply_bytes,
            llm_ares: self.llm_ares,
            llm_deadline_ms: self.llm_deadline_ms,
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
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        Ok(net::NetConfig {
            keypair,
            listen: self.p2p_listen.parse().map_err(|e| {
                ConfigError::Invalid(format!("p2p_listen {:?}: {e}", self.p2p_listen))
            })?,
            bootstrap: addrs(&self.bootstrap, "bootstrap")?,
            chain_id: doc.chain_id(),
            max_peers: net::DEFAULT_MAX_PEERS,
            blobs: Some(blobs),
            blob_fetch_timeout: net::BLOB_FETCH_TIMEOUT,
            ask_peers_for_blobs: true,
            max_peers_per_ip: self.max_peers_per_ip,
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
        use std::time::Duration;

        use crate::consensus::{self, TimeoutConfig};
        Ok(consensus::ConsensusSetup {
            moniker: self.moniker.clone(),
            chain: doc.chain_id(),
            key: keys.account.clone(),
            validators: doc.validators.clone(),
            listen: self.consensus_listen.parse().map_err(|e| {
                ConfigError::Invalid(format!("consensus_listen {:?}: {e}", self.consensus_listen))
            })?,
            peers: addrs(&self.consensus_bootstrap, "consensus_bootstrap")?,
            wal_dir: wal_dir(home),
            block_time: self.block_time(),
            timeouts: consensus::timeouts(
                self.block_time(),
                TimeoutConfig {
                    propose: self.propose_timeout_ms.map(Duration::from_millis),
                    vote: self.vote_timeout_ms.map(Duration::from_millis),
                    delta: self.timeout_delta_ms.map(Duration::from_millis),
                },
            ),
            snapshot_every: self.snapshot_every,
            sync_interval: Duration::from_millis(self.sync_interval_ms),
            #[cfg(feature = "misbehave")]
            forge: false,
        })
    }

    /// The HTTP API's socket address.
    pub fn api_addr(&self) -> Result<std::net::SocketAddr, ConfigError> {
        self.api_listen
            .parse()
            .map_err(|e| ConfigError::Invalid(format!("api_listen {:?}: {e}", self.api_listen)))
    }

    /// The least time between blocks.
    pub fn block_time(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.block_time_ms)
    }

    /// The checks of [`NodeConfig::load`].
    pub fn check(&self, doc: &GenesisDoc) -> Result<(), ConfigError> {
        let invalid = |m: String| Err(ConfigError::Invalid(m));
        if self.api_max_connections == 0
            || self.api_header_timeout_ms == 0
            || self.api_body_timeout_ms == 0
        {
            return invalid(
                "api_max_connections, api_header_timeout_ms and api_body_timeout_ms in config.toml must be at least 1".into(),
            );
        }
        let max_k = doc.genesis.params.max_k.into_iter().min().unwrap_or(0);
        if self.seats_per_segment == 0 || self.seats_per_segment > max_k {
            return invalid(format!(
                "seats_per_segment = {} in config.toml: must be between 1 and the network's max_k ({max_k})",
                self.seats_per_segment
            ));
        }
        if let Some(k) = self.human_seats_per_segment
            && (k == 0 || k > max_k)
        {
            return invalid(format!(
                "human_seats_per_segment = {k} in config.toml: must be between 1 and the network's max_k ({max_k})"
            ));
        }
        if self.honeypots_per_session > crate::audit::provider::honeypot::MAX_PER_SESSION {
            return invalid(format!(
                "honeypots_per_session = {} in config.toml: at most {}",
                self.honeypots_per_session,
                crate::audit::provider::honeypot::MAX_PER_SESSION
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
                .map_err(|e| ConfigError::Invalid(format!("{what} address {s:?}: {e}")))
        })
        .collect()
}

/// The consensus WAL directory.
pub fn wal_dir(home: &Path) -> PathBuf {
    data_dir(home).join("consensus")
}

/// Reads `<home>/config.toml`; a missing file means the defaults.
pub fn load_config(home: &Path) -> Result<NodeConfig, HomeError> {
    let path = home.join(CONFIG_FILE);
    if !path.exists() {
        return Ok(NodeConfig::default());
    }
    parse_config(&read(&path)?).map_err(|e| HomeError::Parse {
        path,
        reason: e.to_string(),
    })
}

/// Why the text of a `config.toml` does not parse: the parser's message, on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.message().replace('\n', " "))]
pub struct ConfigParseError(#[source] toml::de::Error);

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

/// Parses the text of a `config.toml`; the parser's message on one line otherwise.
pub fn parse_config(text: &str) -> Result<NodeConfig, ConfigParseError> {
    toml::from_str(text).map_err(ConfigParseError)
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

/// The text of a `config.toml` holding `cfg`, as [`write_config`] writes it: text that
/// [`parse_config`] reads back to `cfg`. Refuses a string with a run of more than
/// [`MAX_QUOTE_RUN`] quote characters.
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
        reason: e.to_string(),
    })?;
    write_new(&path, &text)?;
    Ok(path)
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
        reason: e.to_string(),
    })
}

/// Writes `<home>/genesis.json`, refusing to overwrite.
pub fn write_genesis(home: &Path, doc: &GenesisDoc) -> Result<PathBuf, HomeError> {
    let path = home.join(GENESIS_FILE);
    let text = serde_json::to_string_pretty(doc).map_err(|e| HomeError::Parse {
        path: path.clone(),
        reason: e.to_string(),
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
            toml::from_str("snapshot_every = 20\n[ledger]\nkeep_blocks = 500\n").expect("parses");
        assert_eq!(
            cfg.ledger.keep_blocks(cfg.snapshot_every).unwrap(),
            Some(500)
        );
        assert_eq!(NodeConfig::default().ledger.keep_blocks(100).unwrap(), None);
        let low = LedgerConfig {
            keep_blocks: Some(10),
        };
        let e = low.keep_blocks(100).unwrap_err().to_string();
        assert!(e.contains("keep at least 100"), "{e}");
        let e = cfg.ledger.keep_blocks(0).unwrap_err().to_string();
        assert!(e.contains("snapshot_every"), "{e}");
        assert!(toml::from_str::<NodeConfig>("[ledger]\nkeep = 5\n").is_err());
        // Written back only when set.
        assert!(
            !toml::to_string(&NodeConfig::default())
                .unwrap()
                .contains("[ledger]")
        );
        assert!(
            toml::to_string(&cfg)
                .unwrap()
                .contains("[ledger]\nkeep_blocks = 500")
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
            llm_url: Some("http://127.0.0.1:8080/v1".into()),
            llm_model: Some("smollm2".into()),
            llm_api_key_env: Some("MY_LLM_KEY".into()),
            llm_ares: Some(crate::audit::llm::ares::AresParams {
                epsilon: 0.05,
                ..Default::default()
            }),
            ..NodeConfig::default()
        };
        write_config(dir.path(), &cfg).unwrap();
        assert_eq!(load_config(dir.path()).unwrap(), cfg);
        let text = std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap();
        assert!(text.contains("llm_api_key_env = \"MY_LLM_KEY\""), "{text}");
        assert!(
            text.contains("[llm_ares]") && text.contains("epsilon = 0.05"),
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
