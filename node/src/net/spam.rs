//! Test builds only (cargo feature `misbehave`): a node that floods the network with
//! transactions nobody can pay for.
//!
//! Selected by `TRUST_TEST_BEHAVIOUR=spammer` (see `daemon.rs`). The `spam` task signs
//! transfers from keys it has just made (accounts that hold nothing), so each is
//! well-formed and correctly signed and can never apply, and publishes them on the
//! transaction topic at [`SPAM_PER_SECOND`], around its own mempool (which would refuse
//! them). What an honest node must do with them: refuse each without pooling it, and ban
//! the peer that keeps sending them (see [`super`]).

use std::time::Duration;

use tracing::{info, warn};
use trust_protocol::{
    Hash, Keypair, Signed,
    tx::{Call, SignedTx, Tx},
};

use super::NetHandle;
use crate::tasks::{Stop, TaskResult};

/// Transactions published per second.
pub const SPAM_PER_SECOND: u32 = 200;
/// How often a batch goes out.
const BATCH_EVERY: Duration = Duration::from_millis(50);

/// Makes the spam: each transaction from a fresh key, deterministic for a seed.
#[derive(Debug, Clone)]
pub struct Spammer {
    seed: Hash,
    made: u64,
    /// The chain its transactions are signed for: the attack is on the pools' pricing,
    /// not on their signature check.
    chain: Hash,
}

impl Spammer {
    /// A spammer whose keys derive from `seed` (distinct seeds, distinct keys), signing
    /// for `chain`.
    pub fn new(seed: &[u8], chain: Hash) -> Self {
        Self {
            seed: Hash::sha256(seed),
            made: 0,
            chain,
        }
    }

    /// The next `n` transactions: transfers of 1 at nonce 0, each signed by a key made for
    /// it alone.
    pub fn batch(&mut self, n: u32) -> Vec<SignedTx> {
        (0..n)
            .map(|_| {
                self.made = self.made.wrapping_add(1);
                let key = Keypair::from_seed(
                    Hash::of_parts(
                        "trust/test/spam-key",
                        &[self.seed.as_ref(), &self.made.to_le_bytes()],
                    )
                    .0,
                );
                let to = Keypair::from_seed(Hash::of_parts("trust/test/spam-sink", &[]).0);
                Signed::sign(
                    &key,
                    &self.chain,
                    Tx {
                        nonce: 0,
                        call: Call::Transfer {
                            to: to.public(),
                            amount: 1,
                        },
                    },
                )
            })
            .collect()
    }

    /// How many transactions it made so far.
    pub fn made(&self) -> u64 {
        self.made
    }
}

/// The `spam` task: publishes [`SPAM_PER_SECOND`] unpayable transactions until stopped.
pub async fn run(net: NetHandle, mut spammer: Spammer, mut stop: Stop) -> TaskResult {
    let per_batch = SPAM_PER_SECOND
        .saturating_mul(u32::try_from(BATCH_EVERY.as_millis()).unwrap_or(u32::MAX))
        / 1000;
    let mut tick = tokio::time::interval(BATCH_EVERY);
    info!(
        per_second = SPAM_PER_SECOND,
        "TEST BEHAVIOUR: spamming the network with unpayable transactions"
    );
    loop {
        tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            _ = tick.tick() => {}
        }
        for tx in spammer.batch(per_batch) {
            if let Err(e) = net.publish_tx(&tx).await {
                warn!(error = %e, "spam not published");
            }
        }
    }
}
