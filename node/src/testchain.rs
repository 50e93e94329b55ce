//! Test support: one node's chain without a network, for the router tests of the API and
//! of the pages. Four accounts (`{label}0` to `{label}3`): node 0 the one validator, nodes
//! 1 to 3 Computer-tier auditors; a real sled database in a temp dir holding the ledger; a
//! real mempool task. [`TestChain::block`] builds a block from transactions and the pool,
//! appends it and publishes the new chain view: it stands in for the consensus driver, the
//! view's one writer.

use std::sync::Arc;

use trust_contracts::{Contract, Event, Genesis, GenesisAccount, GenesisAuditor, Params};
use trust_protocol::{
    AccountId, Hash, Keypair, SealingPublicKey, Signed,
    block::BlockHeader,
    tx::{Call, SignedTx, Tier, Tx},
};

use crate::{
    chain::{Tip, build_block, decided_sessions, retired_outcomes},
    ledger::{Ledger, StoredBlock},
    mempool::Pool,
    tasks::Stop,
    view::{
        ChainPublisher, ChainView, ChainWatch, PeerPublisher, PeerView, PeerWatch, ValidatorPower,
    },
};

/// A commit certificate for `header` signed by `signers` (round 0) with the votes of
/// network `chain`, as the consensus driver stores it.
pub(crate) fn sign_certificate(
    chain: &Hash,
    header: &BlockHeader,
    signers: &[&Keypair],
) -> Vec<u8> {
    use malachitebft_core_types::{NilOrVal, Round, VoteType};

    use crate::consensus::{
        codec::{WireCertificate, WireCommitSignature, encode_borsh},
        context::{Address, BlockId, ConsensusSignature, Height, Vote},
        signing::vote_digest,
    };
    let value_id = BlockId::of(header.hash());
    let mut signatures: Vec<WireCommitSignature> = signers
        .iter()
        .map(|k| {
            let address = Address::of(&k.public());
            let vote = Vote {
                vote_type: VoteType::Precommit,
                height: Height(header.height),
                round: Round::new(0),
                value: NilOrVal::Val(value_id),
                validator: address,
                extension: None,
            };
            let sig = k.sign_raw(vote_digest(chain, &vote).as_ref());
            WireCommitSignature {
                address,
                signature: ConsensusSignature(sig.0),
                extension: None,
            }
        })
        .collect();
    signatures.sort_by_key(|s| s.address);
    encode_borsh(&WireCertificate {
        height: Height(header.height),
        round: Round::new(0),
        value_id,
        signatures,
    })
    .expect("certificate encodes")
    .to_vec()
}

/// A one-validator chain with three Computer auditors over a real ledger.
pub(crate) struct TestChain {
    /// The four accounts' keys.
    pub(crate) keys: Vec<Keypair>,
    /// The last block's tip.
    pub(crate) tip: Tip,
    /// The chain view's writer.
    pub(crate) chain: ChainPublisher,
    /// Where readers watch the chain.
    pub(crate) chain_watch: ChainWatch,
    /// The peer view's writer, held so that the published peers stay visible.
    _peers: PeerPublisher,
    /// Where readers watch the peers.
    pub(crate) peer_watch: PeerWatch,
    /// The mempool.
    pub(crate) pool: Pool,
    /// The ledger, in [`TestChain::db`].
    pub(crate) ledger: Ledger,
    /// The sled database (other subsystems may open their trees in it).
    pub(crate) db: sled::Db,
    /// The contract at genesis.
    pub(crate) genesis: Contract,
    /// The contract's genesis.
    pub(crate) genesis_input: Genesis,
    /// The genesis validators (node 0).
    pub(crate) validators: Vec<AccountId>,
    _dir: tempfile::TempDir,
}

impl TestChain {
    /// The chain at genesis, the auditors declaring `expertise`, `peers` published. Call
    /// inside a tokio runtime (the mempool task is spawned on it).
    pub(crate) fn new(label: &str, expertise: &[&str], peers: PeerView) -> Self {
        Self::with_params(label, expertise, peers, Params::default())
    }

    /// [`TestChain::new`] with the contract's `params`.
    pub(crate) fn with_params(
        label: &str,
        expertise: &[&str],
        peers: PeerView,
        params: Params,
    ) -> Self {
        let keys: Vec<Keypair> = (0..4)
            .map(|i| Keypair::from_label(&format!("{label}{i}")))
            .collect();
        let genesis = Genesis {
            params,
            accounts: keys
                .iter()
                .map(|k| GenesisAccount {
                    id: k.public(),
                    balance: 100_000,
                    stake: 1_000,
                })
                .collect(),
            auditors: keys[1..]
                .iter()
                .map(|k| GenesisAuditor {
                    id: k.public(),
                    tier: Tier::Computer,
                    expertise: expertise.iter().map(|e| e.to_string()).collect(),
                    sealing_key: SealingPublicKey([1; 32]),
                })
                .collect(),
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let db = sled::open(dir.path()).expect("sled");
        let ledger = Ledger::from_db(&db).expect("ledger");
        let contract = Contract::new(&genesis).expect("genesis");
        let tip = Tip::genesis(Hash::sha256(format!("{label}-test").as_bytes()));
        let validators = vec![ValidatorPower {
            id: keys[0].public(),
            power: 1_000,
        }];
        let (chain, chain_watch) =
            ChainPublisher::new(ChainView::new(tip, contract.clone(), validators));
        let (peer_publisher, peer_watch) = PeerPublisher::new();
        peer_publisher.publish(peers);
        let (pool, task) = Pool::new(100, chain_watch.clone());
        tokio::spawn(task.run(Stop::never()));
        let validators = vec![keys[0].public()];
        Self {
            keys,
            tip,
            chain,
            chain_watch,
            _peers: peer_publisher,
            peer_watch,
            pool,
            ledger,
            db,
            genesis: contract,
            genesis_input: genesis,
            validators,
            _dir: dir,
        }
    }

    /// Decides a block from `txs` plus the mempool, proposed by node 0; returns its events.
    pub(crate) async fn block(&mut self, txs: Vec<SignedTx>) -> Vec<Event> {
        let view = self.chain.current();
        let mut cands = self.pool.reap(view.contract.clone(), 1000).await;
        cands.extend(txs);
        let (block, done, dropped) = build_block(
            &view.contract,
            &self.tip,
            &self.keys[0],
            crate::chain::now_ms(),
            &cands,
        )
        .expect("seed proven");
        assert!(dropped.is_empty(), "{dropped:?}");
        let stored = StoredBlock {
            block: block.clone(),
            certificate: sign_certificate(&block.header.chain, &block.header, &[&self.keys[0]]),
        };
        let feed = crate::feed::derive(block.header.height, &done.events, &done.contract);
        let powers = |c: &Contract| crate::consensus::driver::validator_powers(&self.validators, c);
        let powers_changed = powers(&view.contract) != powers(&done.contract);
        self.ledger
            .append_with_feed(
                &stored,
                &decided_sessions(&done.events),
                &feed,
                powers_changed,
                &retired_outcomes(&done.events, &view.contract),
            )
            .expect("append");
        self.tip = self.tip.after(&block);
        self.chain.publish(ChainView {
            tip: self.tip,
            state_root: block.header.state_root,
            contract: Arc::new(done.contract),
            parent: Some(view.contract.clone()),
            validators: view.validators.clone(),
        });
        done.events
    }

    /// `call` signed by account `i` with its next nonce on the chain.
    pub(crate) fn sign(&self, i: usize, call: Call) -> SignedTx {
        let k = &self.keys[i];
        let nonce = self.chain.current().contract.nonce(&k.public());
        Signed::sign(k, &trust_protocol::Hash::ZERO, Tx { nonce, call })
    }
}
