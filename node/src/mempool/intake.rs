//! Transaction intake from the network: what the swarm hands over (gossiped transactions,
//! peers' sync requests) judged on the latest chain view and passed to the mempool task,
//! without ever making the swarm wait.

use futures::FutureExt;
use libp2p::PeerId;
use tracing::debug;
use trust_protocol::tx::SignedTx;

use super::{MempoolError, Pool};
use crate::{
    ledger::Ledger,
    net::{NetHandler, SyncStatus, TxCheck, TxVerdict, sync::MAX_BLOCKS_PER_REQUEST},
    view::{ChainWatch, latest},
};

/// Admits gossiped transactions into the mempool and serves blocks to peers. Runs inside
/// the swarm task, so it never waits: it judges a transaction on the latest chain view,
/// then hands it to the mempool task and gives the swarm the verdict to come (the pool
/// alone knows what the sender has pooled already).
#[derive(Debug)]
pub struct Intake {
    /// The chain view (read only).
    pub chain: ChainWatch,
    /// The mempool's handle.
    pub pool: Pool,
    /// The ledger blocks are served from.
    pub ledger: Ledger,
}

/// How a transaction the mempool refused counts against the peer that gossiped it: not at
/// all when it is harmless or may fit once this node has seen the next block, a flood
/// point when it is junk on this state (an honest peer a block ahead causes a few), a
/// strike when it is invalid data.
pub fn gossip_verdict(e: &MempoolError) -> TxVerdict {
    match e {
        MempoolError::Duplicate
        | MempoolError::Stale { .. }
        | MempoolError::TooFarAhead { .. }
        | MempoolError::Expired(_)
        | MempoolError::NotYet(_)
        | MempoolError::Full(_)
        | MempoolError::Stopped => TxVerdict::Ignore,
        MempoolError::Unaffordable { .. } | MempoolError::Unfit(_) => {
            TxVerdict::Refuse(e.to_string())
        }
        _ => TxVerdict::Reject(e.to_string()),
    }
}

impl NetHandler for Intake {
    fn on_tx(&self, _from: PeerId, tx: SignedTx) -> TxCheck {
        let view = latest(&self.chain);
        // The swarm verified the signature before handing the transaction over
        // (net::gossip::check_tx); it is not verified twice more here and in the pool.
        let checked = super::Signature::Checked;
        if let Err(e) = super::admissible_as(&tx, &view.contract, checked) {
            if matches!(e, MempoolError::NotYet(_)) {
                // A peer a block ahead of this node: kept for the block this node has
                // yet to see, and neither forwarded nor held against the peer.
                self.pool.park_checked(tx);
            }
            return TxCheck::Now(Err(gossip_verdict(&e)));
        }
        match self.pool.offer_checked(tx) {
            Some(verdict) => TxCheck::Later(
                async move {
                    match verdict.await {
                        Ok(Ok(_)) => Ok(()),
                        Ok(Err(e)) => Err(gossip_verdict(&e)),
                        Err(_) => Err(TxVerdict::Ignore),
                    }
                }
                .boxed(),
            ),
            None => {
                // Not taken (the pool's queue is full, or it stopped): not forwarded
                // either, and the peer did nothing wrong.
                debug!("mempool busy; gossiped transaction ignored");
                TxCheck::Now(Err(TxVerdict::Ignore))
            }
        }
    }

    fn sync_status(&self) -> SyncStatus {
        let view = latest(&self.chain);
        SyncStatus {
            height: view.tip.height,
            tip: view.tip.hash,
        }
    }

    fn sync_blocks(&self, from: u64, max: u32, budget: usize) -> Vec<Vec<u8>> {
        // Stored bytes as they are: their sizes bound the answer before anything is decoded.
        self.ledger
            .raw_blocks(from, max.min(MAX_BLOCKS_PER_REQUEST), budget)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gossiped transaction the mempool refuses counts against its forwarder by what
    /// it is: harmless (or "not yet") costs nothing, junk a flood point, bad data a strike.
    #[test]
    fn refusals_count_against_the_forwarder_by_kind() {
        let cases = [
            (MempoolError::Duplicate, TxVerdict::Ignore),
            (
                MempoolError::TooFarAhead { got: 900, next: 0 },
                TxVerdict::Ignore,
            ),
            (MempoolError::NotYet("seats"), TxVerdict::Ignore),
            (MempoolError::Full("share"), TxVerdict::Ignore),
        ];
        for (e, v) in cases {
            assert_eq!(gossip_verdict(&e), v, "{e}");
        }
        let junk = MempoolError::Unaffordable {
            what: "balance",
            need: 1,
            have: 0,
        };
        assert!(matches!(gossip_verdict(&junk), TxVerdict::Refuse(_)));
        assert!(matches!(
            gossip_verdict(&MempoolError::Unfit("no seat")),
            TxVerdict::Refuse(_)
        ));
        assert!(matches!(
            gossip_verdict(&MempoolError::BadSignature),
            TxVerdict::Reject(_)
        ));
    }

    /// The test builds' spammer (`crate::net::spam`) seen from the pool it floods.
    #[cfg(feature = "misbehave")]
    mod spam {
        use trust_contracts::{Contract, Genesis, GenesisAccount, Params};
        use trust_protocol::Keypair;

        use crate::{
            mempool::{self, Mempool, MempoolError},
            net::spam::Spammer,
        };

        /// Every spam transaction passes the stateless gossip checks, comes from its own key,
        /// and is refused by a pool on a real state because its sender holds nothing.
        #[test]
        fn spam_is_well_formed_from_fresh_keys_and_unpayable() {
            let rich = Keypair::from_label("rich");
            let contract = Contract::new(&Genesis {
                params: Params::default(),
                accounts: vec![GenesisAccount {
                    id: rich.public(),
                    balance: 1_000_000,
                    stake: 0,
                }],
                auditors: vec![],
            })
            .unwrap();
            let mut spammer = Spammer::new(b"node 3", contract.chain_id());
            let batch = spammer.batch(50);
            assert_eq!((batch.len(), spammer.made()), (50, 50));
            let mut signers: Vec<_> = batch.iter().map(|t| t.signer).collect();
            signers.sort();
            signers.dedup();
            assert_eq!(signers.len(), 50, "a fresh key each");
            let mut pool = Mempool::new(1_000);
            for tx in &batch {
                let bytes = trust_protocol::encoding::encode(tx);
                assert_eq!(
                    crate::net::check_gossiped_tx(&bytes, &contract.chain_id()).as_ref(),
                    Ok(tx)
                );
                assert!(matches!(
                    mempool::admissible(tx, &contract),
                    Err(MempoolError::Unaffordable { have: 0, .. })
                ));
                assert!(pool.insert(tx.clone(), &contract).is_err());
            }
            assert!(pool.is_empty());
            // The next batch is new keys again; another seed, other keys.
            let next = spammer.batch(1);
            assert!(!signers.contains(&next[0].signer));
            assert_ne!(
                Spammer::new(b"node 4", contract.chain_id()).batch(1)[0].signer,
                batch[0].signer
            );
        }
    }
}
