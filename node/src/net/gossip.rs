//! Transaction gossip: the topic, the gossipsub configuration and peer scoring, and the
//! stateless checks every gossiped message passes before the node sees it.
//!
//! A node signs the messages it publishes (gossipsub's envelope: author, sequence number,
//! signature) but does not check the envelope's signature on the messages it receives
//! (`ValidationMode::None`). Every message is a transaction its sender signed, checked
//! here ([`check_tx`]) before the node sees it, and a message's id is the hash of its
//! bytes, so the envelope's signature proves nothing the payload does not; checking it
//! cost one ed25519 verification per copy a node received, a duplicate included (about half
//! of a node's network CPU in a 200-session burst, BENCHMARKS.md). Who relayed a bad
//! message is still known for scoring: the peer it came from, whom the connection's
//! encryption authenticates. The envelope stays on the wire, so nodes that still check it
//! accept these messages.
//!
//! Size limits are layered. The frame limit (`max_transmit_size`) bounds what the
//! gossipsub codec reads at all; the topic limit bounds one message with its envelope
//! (author, sequence number, signature), so a transaction of exactly
//! [`MAX_TX_BYTES`] still travels. Anything beyond those is dropped inside gossipsub
//! (which penalises the sender's score but emits no event); a message between
//! [`MAX_TX_BYTES`] and the topic limit reaches [`check_tx`] and is counted as oversized.

use std::time::Duration;

use libp2p::gossipsub::{
    self, ConfigBuilderError, IdentTopic, MessageId, PeerScoreParams, PeerScoreThresholds,
    TopicScoreParams, ValidationMode,
};
use trust_protocol::{
    DecodeError, Hash, SignatureError,
    block::MAX_TX_BYTES,
    encoding,
    tx::{SignedTx, TxFormatError},
};

/// Room for a gossipsub message's envelope around its data (author, sequence number,
/// signature, topic and protobuf framing take about 150 bytes with ed25519 keys).
pub const GOSSIP_ENVELOPE_MARGIN: usize = 512;
/// Room for a whole RPC frame around one message (control messages ride along).
const FRAME_MARGIN: usize = 4 * 1024;
/// How long an invalid-message penalty takes to decay to nothing.
const INVALID_PENALTY_DECAY: Duration = Duration::from_secs(600);

/// The gossip topic for transactions of the chain `chain_id`:
/// `trust/<hex of the first 8 bytes>/tx/1`.
pub fn tx_topic(chain_id: &Hash) -> String {
    let prefix = chain_id.as_bytes().get(..8).unwrap_or_default();
    format!("trust/{}/tx/1", hex::encode(prefix))
}

/// Gossipsub's message id: SHA-256 of the data, so the same transaction from two
/// authors collapses into one message.
fn message_id(message: &gossipsub::Message) -> MessageId {
    MessageId::from(Hash::sha256(&message.data).as_bytes().to_vec())
}

/// The gossipsub configuration: signed envelopes whose signatures are not checked (see
/// the module's notes), validation by the application, sizes bounded for transactions.
pub(crate) fn config(topic: &IdentTopic) -> Result<gossipsub::Config, ConfigBuilderError> {
    gossipsub::ConfigBuilder::default()
        .validation_mode(ValidationMode::None)
        .validate_messages()
        .max_transmit_size(MAX_TX_BYTES + GOSSIP_ENVELOPE_MARGIN + FRAME_MARGIN)
        .set_topic_max_transmit_size(topic.hash(), MAX_TX_BYTES + GOSSIP_ENVELOPE_MARGIN)
        .message_id_fn(message_id)
        .build()
}

/// Peer scoring for the transaction topic.
///
/// Invalid deliveries (P4) dominate: with weight -10 and the default thresholds, one
/// rejected message stops gossip exchange with the sender, three put it below the
/// graylist, which is also when the actor bans it. Mesh delivery rates (P3) are not
/// scored because transaction traffic is bursty and has no expected rate, and IP
/// colocation is not scored because validators and test networks often share hosts.
pub(crate) fn score_params(topic: &IdentTopic) -> (PeerScoreParams, PeerScoreThresholds) {
    let topic_params = TopicScoreParams {
        topic_weight: 1.0,
        time_in_mesh_weight: 0.01,
        time_in_mesh_quantum: Duration::from_secs(1),
        time_in_mesh_cap: 100.0,
        first_message_deliveries_weight: 1.0,
        first_message_deliveries_decay: 0.9,
        first_message_deliveries_cap: 50.0,
        mesh_message_deliveries_weight: 0.0,
        mesh_failure_penalty_weight: 0.0,
        invalid_message_deliveries_weight: -10.0,
        invalid_message_deliveries_decay: gossipsub::score_parameter_decay(INVALID_PENALTY_DECAY),
        ..TopicScoreParams::default()
    };
    let mut params = PeerScoreParams {
        ip_colocation_factor_weight: 0.0,
        ..PeerScoreParams::default()
    };
    params.topics.insert(topic.hash(), topic_params);
    (params, PeerScoreThresholds::default())
}

/// Why a gossiped message was rejected before reaching the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxRejection {
    /// Larger than [`MAX_TX_BYTES`].
    #[error("{0} bytes exceed the transaction limit of {MAX_TX_BYTES}")]
    Oversized(usize),
    /// Not a canonical encoding of a signed transaction.
    #[error("malformed: {0}")]
    Malformed(#[source] DecodeError),
    /// The signature does not verify.
    #[error("bad signature: {0}")]
    Signature(#[source] SignatureError),
    /// Breaks a stateless format rule.
    #[error("invalid format: {0}")]
    Format(#[source] TxFormatError),
}

/// The stateless checks, cheapest first: size, decoding, signature (for the chain
/// `chain`), format.
pub(crate) fn check_tx(data: &[u8], chain: &Hash) -> Result<SignedTx, TxRejection> {
    if data.len() > MAX_TX_BYTES {
        return Err(TxRejection::Oversized(data.len()));
    }
    let tx: SignedTx =
        encoding::decode_with_limit(data, MAX_TX_BYTES).map_err(TxRejection::Malformed)?;
    tx.verify(chain).map_err(TxRejection::Signature)?;
    tx.body.validate().map_err(TxRejection::Format)?;
    Ok(tx)
}

#[cfg(test)]
mod tests {
    use trust_protocol::{
        Keypair, Signed,
        tx::{Call, Tx},
    };

    use super::*;

    fn transfer(nonce: u64, amount: u64) -> SignedTx {
        let alice = Keypair::from_label("alice");
        let bob = Keypair::from_label("bob").public();
        Signed::sign(
            &alice,
            &trust_protocol::Hash::ZERO,
            Tx {
                nonce,
                call: Call::Transfer { to: bob, amount },
            },
        )
    }

    #[test]
    fn topic_names_the_chain() {
        let a = tx_topic(&Hash([1u8; 32]));
        assert_eq!(a, "trust/0101010101010101/tx/1");
        assert_ne!(a, tx_topic(&Hash([2u8; 32])));
    }

    #[test]
    fn checks_in_order() {
        let tx = transfer(0, 5);
        assert_eq!(
            check_tx(&encoding::encode(&tx), &Hash::ZERO),
            Ok(tx.clone())
        );
        // Signed for another network: refused here, with the signature as the reason.
        assert!(matches!(
            check_tx(&encoding::encode(&tx), &Hash([1; 32])),
            Err(TxRejection::Signature(_))
        ));

        let big = vec![0u8; MAX_TX_BYTES + 1];
        assert_eq!(
            check_tx(&big, &Hash::ZERO),
            Err(TxRejection::Oversized(MAX_TX_BYTES + 1))
        );
        assert!(matches!(
            check_tx(b"junk", &Hash::ZERO),
            Err(TxRejection::Malformed(_))
        ));

        let mut forged = tx;
        forged.signature.0[0] ^= 0xff;
        assert!(matches!(
            check_tx(&encoding::encode(&forged), &Hash::ZERO),
            Err(TxRejection::Signature(_))
        ));

        let zero = transfer(1, 0);
        assert!(matches!(
            check_tx(&encoding::encode(&zero), &Hash::ZERO),
            Err(TxRejection::Format(_))
        ));
    }

    #[test]
    fn config_and_scores_are_valid() {
        let topic = IdentTopic::new(tx_topic(&Hash::ZERO));
        assert!(config(&topic).is_ok());
        let (params, thresholds) = score_params(&topic);
        assert_eq!(params.validate(), Ok(()));
        assert_eq!(thresholds.validate(), Ok(()));
    }
}
