//! The flat `config.toml` of earlier releases: every setting a top-level key
//! (`block_time_ms = 1000`, `api_listen = "..."`), beside the `[llm_ares]`, `[session]` and
//! `[ledger]` tables. Such a file is still read, converted exactly into the nested
//! [`NodeConfig`] (milliseconds become durations), and the node warns that the layout is
//! deprecated and how to convert it (`trust-node config migrate`). A file that mixes the two
//! layouts is refused, naming where each flat key belongs.

use std::{path::Path, time::Duration};

use serde::Deserialize;

use super::{ConfigParseError, Layout, NodeConfig};

/// Every key of the flat layout and where it lives in the nested one: `(flat key, table,
/// key there, whether the value is a duration)`. A flat `*_ms` number becomes a humantime
/// string (`block_time_ms = 300` is `block_time = "300ms"` in `[consensus]`).
pub const RENAMES: [(&str, &str, &str, bool); 34] = [
    ("p2p_listen", "network", "listen", false),
    ("bootstrap", "network", "bootstrap", false),
    ("max_peers_per_ip", "network", "max_peers_per_ip", false),
    ("consensus_listen", "consensus", "listen", false),
    ("consensus_bootstrap", "consensus", "bootstrap", false),
    ("block_time_ms", "consensus", "block_time", true),
    ("propose_timeout_ms", "consensus", "propose_timeout", true),
    ("vote_timeout_ms", "consensus", "vote_timeout", true),
    ("timeout_delta_ms", "consensus", "timeout_delta", true),
    ("sync_interval_ms", "consensus", "sync_interval", true),
    ("mempool_max", "mempool", "max_txs", false),
    ("mempool_max_bytes", "mempool", "max_bytes", false),
    ("api_listen", "api", "listen", false),
    ("api_header_timeout_ms", "api", "header_timeout", true),
    ("api_body_timeout_ms", "api", "body_timeout", true),
    ("api_max_connections", "api", "max_connections", false),
    ("operator_token_file", "api", "operator_token_file", false),
    ("ipfs_api", "ipfs", "api", false),
    ("llm_url", "llm", "url", false),
    ("llm_model", "llm", "model", false),
    ("llm_api_key_env", "llm", "api_key_env", false),
    ("llm_timeout_ms", "llm", "timeout", true),
    ("llm_retries", "llm", "retries", false),
    ("llm_max_concurrent", "llm", "max_concurrent", false),
    ("llm_max_reply_bytes", "llm", "max_reply_bytes", false),
    ("llm_deadline_ms", "llm", "deadline", true),
    ("llm_ares", "llm.ares", "", false),
    ("human", "auditor", "human", false),
    ("seats_per_segment", "provider", "seats_per_segment", false),
    (
        "human_seats_per_segment",
        "provider",
        "human_seats_per_segment",
        false,
    ),
    (
        "honeypots_per_session",
        "provider",
        "honeypots_per_session",
        false,
    ),
    (
        "max_fee_per_session",
        "provider",
        "max_fee_per_session",
        false,
    ),
    ("max_fee_per_day", "provider", "max_fee_per_day", false),
    ("snapshot_every", "ledger", "snapshot_every", false),
];

/// The tables only the nested layout has (`[session]` and `[ledger]` are in both).
pub const NESTED_TABLES: [&str; 8] = [
    "network",
    "consensus",
    "mempool",
    "api",
    "ipfs",
    "llm",
    "auditor",
    "provider",
];

/// Where the flat key `key` lives in the nested layout, as a reader is told it.
pub fn new_home_of(key: &str) -> Option<String> {
    RENAMES
        .iter()
        .find(|r| r.0 == key)
        .map(|(_, table, new, dur)| {
            if new.is_empty() {
                format!("`{key}` is the table [{table}]")
            } else if *dur {
                format!("`{key}` is `{new}` in [{table}], a duration such as \"300ms\"")
            } else {
                format!("`{key}` is `{new}` in [{table}]")
            }
        })
}

/// The layout of a parsed `config.toml`; a file that mixes them is refused, naming each
/// flat key and where it belongs.
pub fn layout_of(table: &toml::Table) -> Result<Layout, ConfigParseError> {
    let flat: Vec<&str> = table
        .keys()
        .map(String::as_str)
        .filter(|k| RENAMES.iter().any(|r| r.0 == *k))
        .collect();
    let mut nested: Vec<String> = table
        .keys()
        .filter(|k| NESTED_TABLES.contains(&k.as_str()))
        .map(|k| format!("[{k}]"))
        .collect();
    if table
        .get("ledger")
        .and_then(toml::Value::as_table)
        .is_some_and(|t| t.contains_key("snapshot_every"))
    {
        nested.push("`snapshot_every` in [ledger]".into());
    }
    match (flat.is_empty(), nested.is_empty()) {
        (true, _) => Ok(Layout::Nested),
        (false, true) => Ok(Layout::Flat),
        (false, false) => Err(ConfigParseError(format!(
            "this file mixes the deprecated flat layout (top-level {}) with the nested one ({}): \
             write it all nested, where {}",
            flat.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            nested.join(", "),
            flat.iter()
                .filter_map(|k| new_home_of(k))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}

/// The warning logged when `path` (the config of the node at `home`) is read in the flat
/// layout: what to run to convert it.
pub fn deprecation(path: &Path, home: &Path) -> String {
    format!(
        "{} is in the flat config.toml layout, which is deprecated: it was read as the \
         nested layout (one table per subsystem, durations such as \"300ms\"), and a later \
         release will refuse it. Convert it with `trust-node config migrate --home {}` \
         (it keeps the flat file as {}.bak; add --print to only show the converted file)",
        path.display(),
        home.display(),
        super::CONFIG_FILE
    )
}

/// The flat layout, key for key (every key optional, the defaults those of
/// [`NodeConfig::default`]).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FlatConfig {
    moniker: Option<String>,
    p2p_listen: Option<String>,
    consensus_listen: Option<String>,
    api_listen: Option<String>,
    bootstrap: Option<Vec<String>>,
    consensus_bootstrap: Option<Vec<String>>,
    snapshot_every: Option<u64>,
    mempool_max: Option<usize>,
    mempool_max_bytes: Option<usize>,
    max_peers_per_ip: Option<usize>,
    block_time_ms: Option<u64>,
    propose_timeout_ms: Option<u64>,
    vote_timeout_ms: Option<u64>,
    timeout_delta_ms: Option<u64>,
    sync_interval_ms: Option<u64>,
    seats_per_segment: Option<u8>,
    honeypots_per_session: Option<usize>,
    ipfs_api: Option<String>,
    llm_url: Option<String>,
    llm_model: Option<String>,
    llm_api_key_env: Option<String>,
    llm_timeout_ms: Option<u64>,
    llm_retries: Option<u32>,
    llm_max_concurrent: Option<usize>,
    llm_max_reply_bytes: Option<usize>,
    llm_deadline_ms: Option<u64>,
    operator_token_file: Option<String>,
    human: Option<bool>,
    human_seats_per_segment: Option<u8>,
    max_fee_per_session: Option<u64>,
    max_fee_per_day: Option<u64>,
    api_header_timeout_ms: Option<u64>,
    api_body_timeout_ms: Option<u64>,
    api_max_connections: Option<usize>,
    llm_ares: Option<trust_judging::llm::ares::AresParams>,
    session: trust_judging::session::terms::SessionOptions,
    ledger: FlatLedger,
}

/// `[ledger]` of the flat layout.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FlatLedger {
    keep_blocks: Option<u64>,
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

impl FlatConfig {
    /// The same settings in the nested layout.
    fn into_nested(self) -> NodeConfig {
        let ms = |v: Option<u64>| v.map(Duration::from_millis);
        let mut c = NodeConfig::default();
        set(&mut c.moniker, self.moniker);
        set(&mut c.network.listen, self.p2p_listen);
        set(&mut c.network.bootstrap, self.bootstrap);
        set(&mut c.network.max_peers_per_ip, self.max_peers_per_ip);
        set(&mut c.consensus.listen, self.consensus_listen);
        set(&mut c.consensus.bootstrap, self.consensus_bootstrap);
        set(&mut c.consensus.block_time, ms(self.block_time_ms));
        c.consensus.propose_timeout = ms(self.propose_timeout_ms);
        c.consensus.vote_timeout = ms(self.vote_timeout_ms);
        c.consensus.timeout_delta = ms(self.timeout_delta_ms);
        set(&mut c.consensus.sync_interval, ms(self.sync_interval_ms));
        set(&mut c.mempool.max_txs, self.mempool_max);
        set(&mut c.mempool.max_bytes, self.mempool_max_bytes);
        set(&mut c.api.listen, self.api_listen);
        set(&mut c.api.header_timeout, ms(self.api_header_timeout_ms));
        set(&mut c.api.body_timeout, ms(self.api_body_timeout_ms));
        set(&mut c.api.max_connections, self.api_max_connections);
        set(&mut c.api.operator_token_file, self.operator_token_file);
        c.ipfs.api = self.ipfs_api;
        c.llm = super::LlmConfig {
            url: self.llm_url,
            model: self.llm_model,
            api_key_env: self.llm_api_key_env,
            timeout: ms(self.llm_timeout_ms),
            retries: self.llm_retries,
            max_concurrent: self.llm_max_concurrent,
            max_reply_bytes: self.llm_max_reply_bytes,
            deadline: ms(self.llm_deadline_ms),
            ares: self.llm_ares,
        };
        set(&mut c.auditor.human, self.human);
        set(&mut c.provider.seats_per_segment, self.seats_per_segment);
        c.provider.human_seats_per_segment = self.human_seats_per_segment;
        set(
            &mut c.provider.honeypots_per_session,
            self.honeypots_per_session,
        );
        c.provider.max_fee_per_session = self.max_fee_per_session;
        c.provider.max_fee_per_day = self.max_fee_per_day;
        c.session = self.session;
        set(&mut c.ledger.snapshot_every, self.snapshot_every);
        c.ledger.keep_blocks = self.ledger.keep_blocks;
        c
    }
}

/// Reads the text of a flat `config.toml` into the nested settings.
pub(super) fn parse_flat(text: &str) -> Result<NodeConfig, ConfigParseError> {
    toml::from_str::<FlatConfig>(text)
        .map(FlatConfig::into_nested)
        .map_err(|e| ConfigParseError::toml(&e, text))
}
