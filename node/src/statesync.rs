//! State sync: `trust-node run --state-sync ADDR[,ADDR...]` on a home whose ledger holds
//! no block (a new node, or a genesis validator that never ran) fetches a recent contract
//! snapshot from another node's API (`GET /v1/snapshot`), checks it, and starts the ledger
//! at the snapshot's block (a pruned ledger's base, [`crate::ledger::Ledger::install_base`]);
//! consensus then syncs the blocks after it from its peers. Nothing below the snapshot is
//! downloaded or replayed.
//!
//! What the joining node trusts is its own `genesis.json`, as `proof verify` does for a
//! proof walked from genesis. What it checks, in order:
//! 1. the snapshot decodes as a contract state of this chain;
//! 2. its state root is the `state_root` in the header of the snapshot's block `S`;
//! 3. the block `S + 1` links to `S` (`prev_hash`) and is decided by a commit
//!    certificate signed by genesis validators holding more than 2/3 of the genesis
//!    powers (so `S`, hence the snapshot, is on the chain those validators decided);
//! 4. `S + 1` executes on the snapshot to its own header's state root.
//!
//! Who could abuse it: a peer serving a forged snapshot needs a certificate from more than
//! 2/3 of the genesis power's keys (the long-range attack every walk from genesis
//! accepts; `proof` explains it); a peer serving an old but real snapshot only makes the
//! node sync more blocks; a peer that never answers or answers garbage is skipped for the
//! next address. When the validator powers have moved so far from genesis that the
//! genesis validators no longer hold 2/3 of the certificate's weight, the check refuses
//! (and says so) rather than trust the peer.
//!
//! Genesis power vouches for a snapshot only up to the genesis unbonding horizon
//! ([`genesis_horizon`]: the genesis `unbond_delay`, in blocks). A genesis validator that
//! unbonds in block 1 can withdraw its stake from block `1 + unbond_delay` on; up to that
//! height every key counted in the genesis powers still has its stake held by the contract,
//! and past it the keys may hold nothing, so their signatures cost them nothing (the
//! long-range attack). A snapshot whose next block lies past the horizon is therefore
//! refused without a trusted block, before it is downloaded, with an error that names
//! `--state-sync-trust` and the command that prints a block to trust.
//!
//! Such a snapshot is taken with a trusted block (`--state-sync-trust HEIGHT:HASH`, read
//! from a node the operator trusts, as a light client takes its trusted header: `trust-node
//! status` there prints its `height` and `tip`). The trusted block is the snapshot's own
//! block or one above it: the node takes the peer's newest snapshot at or below HEIGHT, and
//! check 3's certificate is replaced by the hash chain from the snapshot's block up to the
//! trusted one (each header names its parent's hash, [`MAX_TRUST_LINK`] headers at most),
//! which must end at HASH; checks 1, 2 and 4 stay. A peer cannot serve another state under
//! a trusted hash (the chain of headers commits to the snapshot's block and that to the
//! state root), and an operator given a wrong hash is told the peer's block is not it, so
//! nothing is installed.

use std::time::Duration;

use tracing::{info, warn};
use trust_contracts::Contract;
use trust_protocol::encoding;

use crate::{
    api::{addr::ApiAddr, client, snapshot::SnapshotChunk},
    chain::{Tip, execute_block},
    config::{self, GenesisDoc},
    ledger::{Ledger, StoredBlock},
    proof::TrustedBlock,
};

/// Largest snapshot a node accepts from a peer.
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// How long the joining node keeps asking while its peers hold no snapshot yet.
pub const WAIT_FOR_SNAPSHOT: Duration = Duration::from_secs(120);

/// The longest one address may take to serve a whole snapshot with its blocks: past it the
/// joining node gives up on that address and asks the next, so a peer that answers
/// slowly (a byte a minute, or never) cannot stall a new node forever. A gibibyte at a few
/// megabytes a second fits.
pub const PER_PEER_DEADLINE: Duration = Duration::from_secs(600);

/// Most headers a trusted block may lie above the snapshot's block: the joining node reads
/// each of them to link the snapshot to the trusted hash.
pub const MAX_TRUST_LINK: u64 = 10_000;

/// The highest block whose commit certificate genesis power alone may vouch for: the
/// genesis `unbond_delay`. Stake unbonded in block 1, the earliest a genesis validator can
/// unbond, is withdrawable from block `1 + unbond_delay`; up to this height every genesis
/// key still has its stake held.
pub fn genesis_horizon(doc: &GenesisDoc) -> u64 {
    doc.genesis.params.unbond_delay
}

/// How to get a block to trust, as the errors say it.
const HOW_TO_TRUST: &str = "read one from a node you trust: `trust-node status --api HOST:PORT` there prints its `height` and `tip` hash, which you pass as --state-sync-trust HEIGHT:TIP";

/// Why state sync failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateSyncError {
    /// The home's ledger could not be opened or written.
    #[error("ledger: {0}")]
    Ledger(#[from] crate::ledger::LedgerError),
    /// The ledger's database.
    #[error("ledger store: {0}")]
    Db(#[from] sled::Error),
    /// The data directory.
    #[error(transparent)]
    DataDir(#[from] config::DataDirError),
    /// The home's database could not be opened (another process holds it, or it fails).
    #[error(transparent)]
    Store(#[from] config::StoreError),
    /// No address gave a snapshot that passed the checks.
    #[error("state sync failed from every address given: {0}")]
    NoSnapshot(#[source] Refusals),
    /// Every address offered a snapshot past the genesis unbonding horizon, and no block
    /// was trusted.
    #[error(
        "state sync needs a trusted block: the newest snapshot offered is at block {height}, past \
         the genesis unbonding horizon (block {horizon}, the genesis unbond_delay), after which the \
         genesis validators may have withdrawn their stake, so their signatures no longer vouch \
         for a snapshot; start again with --state-sync-trust HEIGHT:HASH ({HOW_TO_TRUST})"
    )]
    TrustNeeded {
        /// The height of the newest snapshot offered.
        height: u64,
        /// [`genesis_horizon`].
        horizon: u64,
    },
}

/// Why one address's snapshot was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// The address could not be asked, or answered with an error.
    #[error("{0}")]
    Fetch(#[from] client::ClientError),
    /// The answer is not a snapshot chunk.
    #[error("answer does not parse: {0}")]
    Parse(#[source] serde_json::Error),
    /// A field of the answer (`what`) is not hex, or does not decode.
    #[error("answer does not parse: {what}: {source}")]
    Field {
        /// The field: `chunk`, `block`, `next block`.
        what: &'static str,
        /// Why.
        #[source]
        source: crate::Cause,
    },
    /// The snapshot or its blocks break a check (the rule, in words).
    #[error("{0}")]
    Invalid(String),
    /// No block is trusted and the snapshot is past [`genesis_horizon`].
    #[error(
        "the snapshot is at block {height}, past the genesis unbonding horizon (block \
         {horizon}): genesis power no longer vouches for it, so it needs --state-sync-trust \
         ({HOW_TO_TRUST})"
    )]
    PastHorizon {
        /// The snapshot's height.
        height: u64,
        /// [`genesis_horizon`].
        horizon: u64,
    },
    /// The snapshot or one of its blocks fails a check of its own (`what`: which, and
    /// how).
    #[error("{what}: {source}")]
    Fails {
        /// What failed: `block 7`, `the snapshot does not decode`, ...
        what: String,
        /// Why.
        #[source]
        source: crate::Cause,
    },
}

/// Every address tried, each with why its snapshot was not taken, in the order tried
/// (shown `ADDR: why; ADDR: why`; its source is the first address's refusal).
#[derive(Debug)]
pub struct Refusals(pub Vec<(String, Refused)>);

impl std::fmt::Display for Refusals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (addr, why)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{addr}: {why}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusals {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .first()
            .map(|(_, why)| why as &(dyn std::error::Error + 'static))
    }
}

/// Runs state sync into `home`'s ledger when it holds no block: the height the ledger
/// starts at, or `None` when it already held blocks (nothing to do).
pub async fn sync_home(
    home: &std::path::Path,
    doc: &GenesisDoc,
    addrs: &[ApiAddr],
    trust: Option<TrustedBlock>,
) -> Result<Option<u64>, StateSyncError> {
    config::secure_data_dir(home)?;
    let db = config::open_store(home)?;
    let ledger = Ledger::from_db(&db)?;
    if let Some((tip, _)) = ledger.tip()? {
        info!(
            tip,
            "state sync skipped: the ledger already holds blocks (it restores from them)"
        );
        return Ok(None);
    }
    ledger.set_chain(doc.chain_id())?;
    let height = sync(&ledger, doc, addrs, trust).await?;
    db.flush()?;
    Ok(Some(height))
}

/// Fetches, checks and installs a snapshot from the first of `addrs` that serves one that
/// passes every check (at the `trust`ed block, if one is given); waits up to
/// [`WAIT_FOR_SNAPSHOT`] while none holds one yet.
pub async fn sync(
    ledger: &Ledger,
    doc: &GenesisDoc,
    addrs: &[ApiAddr],
    trust: Option<TrustedBlock>,
) -> Result<u64, StateSyncError> {
    sync_within(ledger, doc, addrs, trust, PER_PEER_DEADLINE).await
}

/// [`sync`], giving each address at most `per_peer` to serve its snapshot.
async fn sync_within(
    ledger: &Ledger,
    doc: &GenesisDoc,
    addrs: &[ApiAddr],
    trust: Option<TrustedBlock>,
    per_peer: Duration,
) -> Result<u64, StateSyncError> {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_SNAPSHOT;
    loop {
        let mut why = Vec::new();
        let mut refused = Vec::new();
        for addr in addrs {
            let addr = addr.as_str();
            let fetched = tokio::time::timeout(per_peer, fetch_checked(addr, doc, trust))
                .await
                .unwrap_or_else(|_| {
                    Err(Refused::Invalid(format!(
                        "gave up after {} s: the address did not serve its snapshot in time",
                        per_peer.as_secs()
                    )))
                });
            match fetched {
                Ok((block, snapshot, power)) => {
                    let height = block.block.header.height;
                    ledger.install_base(&block, &snapshot)?;
                    match power {
                        Some((signed, of)) => info!(
                            height,
                            from = %addr,
                            bytes = snapshot.len(),
                            signed,
                            of,
                            "state sync: snapshot checked against its block and the next block's certificate; the ledger starts at block {height}"
                        ),
                        None => info!(
                            height,
                            from = %addr,
                            bytes = snapshot.len(),
                            "state sync: snapshot checked against the trusted block and the next block; the ledger starts at block {height}"
                        ),
                    }
                    return Ok(height);
                }
                Err(e) => {
                    warn!(from = %addr, error = %e, "state sync: snapshot not taken");
                    why.push(format!("{addr}: {e}"));
                    refused.push((addr.to_string(), e));
                }
            }
        }
        let past: Vec<(u64, u64)> = refused
            .iter()
            .filter_map(|(_, r)| match r {
                Refused::PastHorizon { height, horizon } => Some((*height, *horizon)),
                _ => None,
            })
            .collect();
        if !refused.is_empty() && past.len() == refused.len() {
            let (height, horizon) = past.into_iter().max().unwrap_or_default();
            return Err(StateSyncError::TrustNeeded { height, horizon });
        }
        let waiting = why.iter().all(|w| w.contains("no snapshot below the tip"));
        if !waiting || tokio::time::Instant::now() >= deadline {
            return Err(StateSyncError::NoSnapshot(Refusals(refused)));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// One address's snapshot with its block, checked: the block, the snapshot, and the power
/// that signed the next block's certificate (and the total).
async fn fetch_checked(
    addr: &str,
    doc: &GenesisDoc,
    trust: Option<TrustedBlock>,
) -> Result<(StoredBlock, Vec<u8>, Option<(u128, u128)>), Refused> {
    let mut first = chunk(addr, None, 0).await?;
    match trust {
        // The newest snapshot is above the trusted block: an older one may be kept at it.
        Some(t) if first.height > t.height => {
            first = chunk(addr, Some(t.height), 0).await.map_err(|e| {
                Refused::Invalid(format!(
                    "the newest snapshot here is at block {}, above the trusted block {}, \
                     and none is at block {} ({e}): trust a block at or above block {} \
                     ({HOW_TO_TRUST})",
                    first.height, t.height, t.height, first.height
                ))
            })?;
        }
        Some(t) if t.height - first.height > MAX_TRUST_LINK => {
            return Err(Refused::Invalid(format!(
                "the trusted block {} is more than {MAX_TRUST_LINK} blocks above the newest \
                 snapshot here (block {}): trust a block nearer it",
                t.height, first.height
            )));
        }
        Some(_) => {}
        None => past_horizon(doc, first.height)?,
    }
    if first.total > MAX_SNAPSHOT_BYTES {
        return Err(Refused::Invalid(format!(
            "a snapshot of {} bytes is over the {MAX_SNAPSHOT_BYTES} accepted",
            first.total
        )));
    }
    let mut snapshot = unhex("chunk", &first.chunk)?;
    while (snapshot.len() as u64) < first.total {
        let next = chunk(addr, Some(first.height), snapshot.len() as u64).await?;
        let part = unhex("chunk", &next.chunk)?;
        if next.height != first.height
            || next.total != first.total
            || next.offset != snapshot.len() as u64
            || part.is_empty()
        {
            return Err(Refused::Invalid(
                "a later chunk does not continue the first".into(),
            ));
        }
        snapshot.extend_from_slice(&part);
    }
    if snapshot.len() as u64 != first.total {
        return Err(Refused::Invalid(
            "the chunks overrun the snapshot's size".into(),
        ));
    }
    // Each block comes in an answer of its own (two full blocks would not fit one).
    let block = chunk_part(addr, first.height, "block").await?;
    let next = chunk_part(addr, first.height, "next").await?;
    let block: StoredBlock = decode("block", &block.block)?;
    let next: StoredBlock = decode("next block", &next.next)?;
    let link = match trust {
        Some(t) => headers(addr, first.height.saturating_add(2), t.height).await?,
        None => Vec::new(),
    };
    let power = check(doc, first.height, &snapshot, &block, &next, trust, &link)?;
    Ok((block, snapshot, power))
}

/// Without a trusted block: refused when the certificate of the block after a snapshot at
/// `height` lies past [`genesis_horizon`].
fn past_horizon(doc: &GenesisDoc, height: u64) -> Result<(), Refused> {
    let horizon = genesis_horizon(doc);
    if height.saturating_add(1) > horizon {
        return Err(Refused::PastHorizon { height, horizon });
    }
    Ok(())
}

/// The headers of blocks `from..=to` as `addr` serves them (`GET /v1/blocks/H`), each
/// checked to be at its height; nothing when `from > to`. Whether they link is
/// [`check`]'s.
async fn headers(
    addr: &str,
    from: u64,
    to: u64,
) -> Result<Vec<trust_protocol::block::BlockHeader>, Refused> {
    let mut out = Vec::new();
    for h in from..=to {
        let json = client::get(addr, &format!("/v1/blocks/{h}")).await?;
        let header: trust_protocol::block::BlockHeader =
            serde_json::from_value(json.get("header").cloned().unwrap_or_default())
                .map_err(Refused::Parse)?;
        if header.height != h {
            return Err(Refused::Invalid(format!(
                "asked for block {h}, got a header at height {}",
                header.height
            )));
        }
        out.push(header);
    }
    Ok(out)
}

async fn chunk(addr: &str, height: Option<u64>, offset: u64) -> Result<SnapshotChunk, Refused> {
    let path = match height {
        Some(h) => format!("/v1/snapshot?height={h}&offset={offset}"),
        None => "/v1/snapshot".to_string(),
    };
    let json = client::get(addr, &path).await?;
    serde_json::from_value(json).map_err(Refused::Parse)
}

/// The snapshot's block (`part` `block`) or the one after it (`next`), at `height`.
async fn chunk_part(addr: &str, height: u64, part: &str) -> Result<SnapshotChunk, Refused> {
    let json = client::get(addr, &format!("/v1/snapshot?height={height}&part={part}")).await?;
    let c: SnapshotChunk = serde_json::from_value(json).map_err(Refused::Parse)?;
    if c.height != height {
        return Err(Refused::Invalid(format!(
            "asked for the {part} of the snapshot at {height}, got one at {}",
            c.height
        )));
    }
    Ok(c)
}

fn unhex(what: &'static str, s: &str) -> Result<Vec<u8>, Refused> {
    hex::decode(s).map_err(|e| Refused::Field {
        what,
        source: e.into(),
    })
}

fn decode<T: serde::de::DeserializeOwned + serde::Serialize>(
    what: &'static str,
    s: &str,
) -> Result<T, Refused> {
    encoding::decode(&unhex(what, s)?).map_err(|e| Refused::Field {
        what,
        source: e.into(),
    })
}

/// A check of `what` that failed with `e`.
fn fails(what: impl Into<String>, e: impl Into<crate::Cause>) -> Refused {
    Refused::Fails {
        what: what.into(),
        source: e.into(),
    }
}

/// The checks of the module doc, 1 to 4; with `trust`, check 3's certificate is replaced
/// by the hash chain from the snapshot's block, through the next block and `link` (the
/// headers after it, in order), up to the trusted block; without it, the snapshot must lie
/// below [`genesis_horizon`]. The power that signed the next block's certificate, and the
/// total, when it was checked.
fn check(
    doc: &GenesisDoc,
    height: u64,
    snapshot: &[u8],
    block: &StoredBlock,
    next: &StoredBlock,
    trust: Option<TrustedBlock>,
    link: &[trust_protocol::block::BlockHeader],
) -> Result<Option<(u128, u128)>, Refused> {
    if trust.is_none() {
        past_horizon(doc, height)?;
    }
    let chain = doc.chain_id();
    let bad = |m: String| Refused::Invalid(m);
    let contract =
        Contract::from_snapshot(snapshot).map_err(|e| fails("the snapshot does not decode", e))?;
    if contract.chain_id() != chain {
        return Err(bad(format!(
            "the snapshot is of chain {}, this node's is {chain}",
            contract.chain_id()
        )));
    }
    let header = &block.block.header;
    block
        .block
        .check()
        .map_err(|e| fails(format!("block {height}"), e))?;
    if header.height != height || header.height < 2 || header.chain != chain {
        return Err(bad(format!(
            "the snapshot's block is at height {} of chain {}, not {height} of {chain}",
            header.height, header.chain
        )));
    }
    if contract.state_root() != header.state_root {
        return Err(bad(format!(
            "the snapshot's state root {} is not block {height}'s {}",
            contract.state_root(),
            header.state_root
        )));
    }
    let after = &next.block.header;
    next.block
        .check()
        .map_err(|e| fails(format!("block {}", height + 1), e))?;
    if after.height != height.saturating_add(1) || after.prev_hash != block.block.hash() {
        return Err(bad(format!(
            "the next block (height {}) does not link to block {height}",
            after.height
        )));
    }
    let power = match trust {
        Some(t) => {
            // The hash of each block from the snapshot's up, each linked to the one below.
            let mut chain = vec![
                (height, block.block.hash()),
                (after.height, next.block.hash()),
            ];
            for h in link {
                let (below, below_hash) = chain.last().copied().unwrap_or_default();
                if h.height != below.saturating_add(1) || h.prev_hash != below_hash {
                    return Err(bad(format!(
                        "block {} does not link to block {below}: no chain of headers leads \
                         from the snapshot to the trusted block",
                        h.height
                    )));
                }
                chain.push((h.height, h.hash()));
            }
            match chain.iter().find(|(h, _)| *h == t.height) {
                Some((_, hash)) if *hash == t.hash => None,
                Some((h, hash)) => {
                    return Err(bad(format!(
                        "the peer's block {h} is {hash}, not the trusted block {t}{}",
                        if *h == height {
                            format!(" (the snapshot's block {height})")
                        } else {
                            format!(" (the chain of headers from the snapshot's block {height})")
                        }
                    )));
                }
                None => {
                    return Err(bad(format!(
                        "the snapshot's block {height} and the headers after it do not reach \
                         the trusted block {t}"
                    )));
                }
            }
        }
        None => Some(
            crate::proof::check_certificate_from_genesis(
                &next.certificate,
                after,
                &doc.genesis,
                &doc.validators,
                chain,
            )
            .map_err(|e| fails(format!("block {}", height + 1), e))?,
        ),
    };
    let tip = Tip::genesis(chain).after(&block.block);
    let done = execute_block(&contract, &tip, &next.block).map_err(|e| {
        fails(
            format!("block {} does not execute on the snapshot", height + 1),
            e,
        )
    })?;
    if done.contract.state_root() != after.state_root {
        return Err(bad(format!(
            "block {} executes on the snapshot to {}, its header says {}",
            height + 1,
            done.contract.state_root(),
            after.state_root
        )));
    }
    Ok(power)
}

#[cfg(test)]
mod tests {
    use trust_contracts::{Genesis, GenesisAccount, Params};
    use trust_protocol::Keypair;

    use super::*;
    use crate::{chain::build_block, testchain::sign_certificate};

    /// A one-validator network's genesis, its first six blocks as stored (certified by
    /// the validator) and the state after each (index 0: genesis).
    fn network(name: &str) -> (GenesisDoc, Keypair, Vec<StoredBlock>, Vec<Contract>) {
        network_with(name, Params::default())
    }

    /// [`network`] under `params`.
    fn network_with(
        name: &str,
        params: Params,
    ) -> (GenesisDoc, Keypair, Vec<StoredBlock>, Vec<Contract>) {
        let key = Keypair::from_label("statesync-validator");
        let doc = GenesisDoc {
            chain_name: name.into(),
            validators: vec![key.public()],
            genesis: Genesis {
                params,
                accounts: vec![GenesisAccount {
                    id: key.public(),
                    balance: 10_000,
                    stake: 1_000,
                }],
                auditors: vec![],
            },
        };
        let chain = doc.chain_id();
        let mut states = vec![Contract::new(&doc.genesis).unwrap().with_chain(chain)];
        let mut tip = Tip::genesis(chain);
        let mut blocks = Vec::new();
        for h in 1..=6u64 {
            let (block, done, _) = build_block(states.last().unwrap(), &tip, &key, h, &[]).unwrap();
            blocks.push(StoredBlock {
                certificate: sign_certificate(&chain, &block.header, &[&key]),
                block: block.clone(),
            });
            tip = tip.after(&block);
            states.push(done.contract);
        }
        (doc, key, blocks, states)
    }

    /// The snapshot after block 2 with blocks 2 and 3 passes; each forgery a peer could
    /// serve is refused, naming what is wrong: a snapshot of another state, a garbage
    /// snapshot, a next block that does not link, a next block certified by a key that is
    /// not a genesis validator, and a snapshot of another network.
    #[test]
    fn a_snapshot_is_taken_only_with_its_block_and_a_certified_next_block() {
        let (doc, _key, blocks, states) = network("statesync");
        let snap = states[2].snapshot();
        let power = check(&doc, 2, &snap, &blocks[1], &blocks[2], None, &[]).unwrap();
        assert_eq!(power, Some((1_000, 1_000)));

        let refused = |r: Result<Option<(u128, u128)>, Refused>| r.unwrap_err().to_string();
        let e = refused(check(
            &doc,
            2,
            &states[1].snapshot(),
            &blocks[1],
            &blocks[2],
            None,
            &[],
        ));
        assert!(e.contains("state root"), "{e}");
        let e = refused(check(
            &doc,
            2,
            b"not a snapshot",
            &blocks[1],
            &blocks[2],
            None,
            &[],
        ));
        assert!(e.contains("does not decode"), "{e}");
        let e = refused(check(&doc, 2, &snap, &blocks[1], &blocks[3], None, &[]));
        assert!(e.contains("does not link"), "{e}");
        let stranger = Keypair::from_label("statesync-stranger");
        let mut forged = blocks[2].clone();
        forged.certificate = sign_certificate(&doc.chain_id(), &forged.block.header, &[&stranger]);
        let e = refused(check(&doc, 2, &snap, &blocks[1], &forged, None, &[]));
        assert!(e.contains("block 3"), "{e}");
        let (other, _, other_blocks, other_states) = network("another network");
        let e = refused(check(
            &doc,
            2,
            &other_states[2].snapshot(),
            &other_blocks[1],
            &other_blocks[2],
            None,
            &[],
        ));
        assert!(e.contains("chain"), "{e}");
        // The genuine one still passes for its own network.
        check(
            &other,
            2,
            &other_states[2].snapshot(),
            &other_blocks[1],
            &other_blocks[2],
            None,
            &[],
        )
        .unwrap();
    }

    /// With a trusted block, a next block whose certificate the genesis powers do not
    /// carry (as on a network whose powers moved since genesis) is accepted when the
    /// trusted block is the snapshot's block, the next one, or one the headers after them
    /// lead to, each linked to its parent by hash; another hash at any of those heights, a
    /// header that does not link, or headers that stop short of the trusted block are
    /// refused, naming what is wrong; the state-root and next-block checks still hold.
    #[test]
    fn a_trusted_block_stands_in_for_the_genesis_certificate_and_nothing_else() {
        let (doc, _key, blocks, states) = network("statesync-trusted");
        let snap = states[2].snapshot();
        let stranger = Keypair::from_label("statesync-successor");
        let mut moved = blocks[2].clone();
        moved.certificate = sign_certificate(&doc.chain_id(), &moved.block.header, &[&stranger]);
        let at = |i: usize| TrustedBlock {
            height: blocks[i].block.header.height,
            hash: blocks[i].block.hash(),
        };
        let trusted = at(1);
        let refused = |r: Result<Option<(u128, u128)>, Refused>| r.unwrap_err().to_string();
        // Without trust: refused, as the genesis powers did not sign it.
        let e = refused(check(&doc, 2, &snap, &blocks[1], &moved, None, &[]));
        assert!(e.contains("block 3"), "{e}");
        // Trusted: taken, with no certificate power to report.
        assert_eq!(
            check(&doc, 2, &snap, &blocks[1], &moved, Some(trusted), &[]).unwrap(),
            None
        );
        // The next block trusted, or one the headers after it lead to: taken too.
        assert_eq!(
            check(&doc, 2, &snap, &blocks[1], &moved, Some(at(2)), &[]).unwrap(),
            None
        );
        let link = [
            blocks[3].block.header.clone(),
            blocks[4].block.header.clone(),
        ];
        assert_eq!(
            check(&doc, 2, &snap, &blocks[1], &moved, Some(at(4)), &link).unwrap(),
            None
        );
        // Another hash at the snapshot's height, the next one's, or further up: refused.
        for wrong in [
            TrustedBlock {
                hash: blocks[2].block.hash(),
                ..trusted
            },
            TrustedBlock {
                hash: blocks[3].block.hash(),
                ..at(2)
            },
            TrustedBlock {
                hash: blocks[3].block.hash(),
                ..at(4)
            },
        ] {
            let e = refused(check(
                &doc,
                2,
                &snap,
                &blocks[1],
                &moved,
                Some(wrong),
                &link,
            ));
            assert!(e.contains("not the trusted block"), "{wrong}: {e}");
        }
        // A header that does not link to the one below (block 4 missing), or headers that
        // stop short of the trusted block: refused.
        let gap = [blocks[4].block.header.clone()];
        let e = refused(check(&doc, 2, &snap, &blocks[1], &moved, Some(at(4)), &gap));
        assert!(e.contains("does not link"), "{e}");
        let mut forged = blocks[3].block.header.clone();
        forged.state_root = blocks[2].block.header.state_root;
        let e = refused(check(
            &doc,
            2,
            &snap,
            &blocks[1],
            &moved,
            Some(at(4)),
            &[forged, blocks[4].block.header.clone()],
        ));
        assert!(e.contains("does not link"), "{e}");
        let e = refused(check(
            &doc,
            2,
            &snap,
            &blocks[1],
            &moved,
            Some(at(4)),
            &link[..1],
        ));
        assert!(e.contains("do not reach the trusted block"), "{e}");
        // The trusted block does not vouch for another state, nor for a next block that
        // does not link to it.
        let e = refused(check(
            &doc,
            2,
            &states[1].snapshot(),
            &blocks[1],
            &moved,
            Some(trusted),
            &[],
        ));
        assert!(e.contains("state root"), "{e}");
        let e = refused(check(
            &doc,
            2,
            &snap,
            &blocks[1],
            &blocks[3],
            Some(trusted),
            &[],
        ));
        assert!(e.contains("does not link"), "{e}");
    }

    /// Finding 10 of issue 53: genesis power vouches for a snapshot only while the block
    /// its certificate decides lies within the genesis unbonding horizon (`unbond_delay`).
    /// With `unbond_delay` 3, the snapshot at block 2 (next block 3) is taken on the
    /// genesis certificate; with 2, the same snapshot and blocks are refused without a
    /// trusted block, the error naming the horizon, `--state-sync-trust` and the command
    /// that prints a block to trust, and taken with one.
    #[test]
    fn past_the_genesis_unbonding_horizon_a_snapshot_needs_a_trusted_block() {
        let inside = Params {
            unbond_delay: 3,
            ..Params::default()
        };
        let (doc, _key, blocks, states) = network_with("statesync-horizon", inside);
        assert_eq!(genesis_horizon(&doc), 3);
        let snap = states[2].snapshot();
        assert_eq!(
            check(&doc, 2, &snap, &blocks[1], &blocks[2], None, &[]).unwrap(),
            Some((1_000, 1_000))
        );

        let past = Params {
            unbond_delay: 2,
            ..Params::default()
        };
        let (doc, _key, blocks, states) = network_with("statesync-horizon", past);
        let snap = states[2].snapshot();
        let e = check(&doc, 2, &snap, &blocks[1], &blocks[2], None, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("past the genesis unbonding horizon (block 2)")
                && e.contains("--state-sync-trust")
                && e.contains("trust-node status --api"),
            "{e}"
        );
        let trusted = TrustedBlock {
            height: 3,
            hash: blocks[2].block.hash(),
        };
        assert_eq!(
            check(&doc, 2, &snap, &blocks[1], &blocks[2], Some(trusted), &[]).unwrap(),
            None
        );
        // The node's own error, when every address offered such a snapshot.
        let all = StateSyncError::TrustNeeded {
            height: 2,
            horizon: 2,
        }
        .to_string();
        assert!(
            all.contains("--state-sync-trust HEIGHT:HASH")
                && all.contains("`trust-node status --api HOST:PORT`"),
            "{all}"
        );
    }

    /// Finding 10 of issue 53: a peer that accepts the connection and never answers (or
    /// answers a byte a minute) cannot stall a joining node: past its deadline the node
    /// gives up on it, says why, and its ledger is left as it was.
    #[tokio::test]
    async fn a_peer_that_never_answers_is_given_up_on() {
        let (doc, _key, _blocks, _states) = network("statesync-stall");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: ApiAddr = listener.local_addr().unwrap().to_string().parse().unwrap();
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                open.push(socket);
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open_with_chain(dir.path(), doc.chain_id()).unwrap();
        let e = sync_within(&ledger, &doc, &[addr], None, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("gave up after"), "{e}");
        assert_eq!(ledger.tip().unwrap(), None, "nothing installed");
        held.abort();
    }
}
