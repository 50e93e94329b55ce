//! Transactions and blocks in the canonical encoding, as every path of the node decodes
//! them: gossip and the HTTP API (signed transactions), the chain and sync (blocks), the
//! ledger (stored blocks with their certificate).
//!
//! Properties: no panic; whatever decodes re-encodes to the same bytes and decodes to an
//! equal value; nothing larger than the decoder's limit is accepted; the checks the node
//! runs next (signature, format rules, block shape) never panic either.
use trust_node::{
    ledger::StoredBlock,
    net::blob_req::{self, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES},
    query::decode_txs,
};
use trust_protocol::{
    block::{Block, MAX_TX_BYTES},
    encoding::{self, MAX_MESSAGE_BYTES},
    tx::SignedTx,
};

fn round_trip<T>(data: &[u8]) -> Option<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let value: T = encoding::decode(data).ok()?;
    assert!(data.len() <= MAX_MESSAGE_BYTES);
    let again = encoding::encode(&value);
    assert_eq!(again, data, "a decoded value re-encodes to other bytes");
    let back: T = encoding::decode(&again).expect("its own encoding decodes");
    assert_eq!(back, value);
    Some(value)
}

fn check_tx(tx: &SignedTx) {
    let _ = tx.verify(&trust_protocol::Hash::ZERO);
    let _ = tx.body.validate();
    let _ = tx.id();
}

/// One input, as the fuzzer (and the seed replay test) gives it.
pub(crate) fn check(data: &[u8]) {
    if let Some(tx) = round_trip::<SignedTx>(data) {
        check_tx(&tx);
    }
    // The gossip path: size limit first, then the same decoder, signature and format.
    if let Ok(tx) = trust_node::net::check_gossiped_tx(data, &trust_protocol::Hash::ZERO) {
        assert!(data.len() <= MAX_TX_BYTES);
        assert!(tx.verify(&trust_protocol::Hash::ZERO).is_ok() && tx.body.validate().is_ok());
    }
    if let Some(block) = round_trip::<Block>(data) {
        let _ = block.check();
        let _ = block.hash();
        let _ = block.header.seed();
        for t in &block.txs {
            if let Ok(tx) = encoding::decode::<SignedTx>(t) {
                check_tx(&tx);
            }
        }
    }
    if let Some(stored) = round_trip::<StoredBlock>(data) {
        let _ = stored.block.check();
        assert_eq!(decode_txs(&stored).len(), stored.block.txs.len());
    }
    // The blob protocol's decoders, at their own limits.
    if let Ok(req) = blob_req::decode_request(data) {
        assert!(data.len() <= MAX_REQUEST_BYTES);
        assert_eq!(encoding::encode(&req), data);
    }
    if let Ok(res) = blob_req::decode_response(data) {
        assert!(data.len() <= MAX_RESPONSE_BYTES);
        assert_eq!(encoding::encode(&res), data);
    }
}
