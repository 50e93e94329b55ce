//! Test fixture shared by the provider and seat tests: a contract whose genesis registers
//! Computer auditors with known sealing keys, one node state (mempool) that every
//! in-process role pools its transactions into, and a block function that orders what
//! is pooled, ends the block and returns the events.

use std::sync::{Arc, RwLock};

use trust_contracts::{BlockCtx, Contract, Event, Genesis, GenesisAccount, GenesisAuditor, Params};
use trust_protocol::{Hash, Keypair, seal::SealingSecret, tx::Tier};

use super::outbox::Outbox;
use crate::api::NodeState;

/// Auditor `i`'s sealing key.
pub(crate) fn sealing(i: usize) -> SealingSecret {
    SealingSecret::from_bytes([u8::try_from(i).expect("few auditors") + 1; 32])
}

/// Auditor `i`'s account key.
pub(crate) fn auditor(i: usize) -> Keypair {
    Keypair::from_label(&format!("aud{i}"))
}

/// The provider's account key.
pub(crate) fn provider_key() -> Keypair {
    Keypair::from_label("provider")
}

/// A chain with a funded provider and `auditors` Computer auditors.
pub(crate) struct Chain {
    pub(crate) contract: Contract,
    pub(crate) state: Arc<RwLock<NodeState>>,
    height: u64,
}

impl Chain {
    pub(crate) fn new(auditors: usize) -> Self {
        let me = provider_key();
        let mut accounts = vec![GenesisAccount {
            id: me.public(),
            balance: 1_000_000,
            stake: 0,
        }];
        accounts.extend((0..auditors).map(|i| GenesisAccount {
            id: auditor(i).public(),
            balance: 10,
            stake: 1_000,
        }));
        let contract = Contract::new(&Genesis {
            params: Params::default(),
            accounts,
            auditors: (0..auditors)
                .map(|i| GenesisAuditor {
                    id: auditor(i).public(),
                    tier: Tier::Computer,
                    expertise: vec!["math".into()],
                    sealing_key: sealing(i).public(),
                })
                .collect(),
        })
        .expect("genesis");
        let state = Arc::new(RwLock::new(NodeState::new(
            me.public(),
            true,
            contract.clone(),
            (0, Hash::ZERO),
            1000,
        )));
        Self {
            contract,
            state,
            height: 0,
        }
    }

    /// An outbox for `key` that pools into this chain's mempool.
    pub(crate) fn outbox(&self, key: Keypair) -> Outbox {
        Outbox::new(key, self.state.clone(), None)
    }

    /// Orders every pooled transaction into the next block, ends it, returns its events.
    pub(crate) fn block(&mut self) -> Vec<Event> {
        self.height += 1;
        let h = self.height;
        let ctx = BlockCtx {
            height: h,
            block_hash: Hash::of_parts("audit-testkit", &[&h.to_le_bytes()]),
        };
        let txs = self
            .state
            .read()
            .expect("state")
            .mempool
            .candidates(&self.contract, 1000);
        let mut ev = Vec::new();
        for tx in txs {
            ev.extend(self.contract.apply(&ctx, &tx).expect("pooled tx applies"));
        }
        ev.extend(self.contract.end_block(&ctx));
        let mut s = self.state.write().expect("state");
        s.contract = self.contract.clone();
        s.mempool.prune(&self.contract);
        ev
    }
}
