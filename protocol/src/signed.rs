//! Signed envelopes with a domain-separation tag per message kind, bound to one chain.
//!
//! The signed bytes are `"TRUST-SIG/v2" || len(tag) || tag || chain || encode(body)`.
//! Because the tag names the message kind, a signature made for one kind never verifies
//! as another, even when the two bodies happen to encode to the same bytes. Because the
//! chain id (the hash of the network's genesis document) is signed too, a transaction
//! signed for one network never verifies on another, though the same key is used on
//! both: a transfer or an unbond signed on a testnet does not replay on a main network.
//! The chain id is not sent: both sides know it.

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::{Hash, Keypair, PublicKey, Signature, SignatureError, encoding};

/// A domain-separation tag naming one message kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain(pub &'static str);

impl Domain {
    /// Transactions ordered into blocks and applied by the contract.
    pub const TX: Domain = Domain("trust/v1/tx");
    /// Block headers signed by their proposer.
    pub const BLOCK: Domain = Domain("trust/v1/block");
    /// Gossip envelopes that are not transactions (peer announcements and the like).
    pub const GOSSIP: Domain = Domain("trust/v1/gossip");
    /// Answers to queries, signed by the node that serves them.
    pub const QUERY_ANSWER: Domain = Domain("trust/v1/query-answer");
}

/// A message kind that travels signed.
pub trait SignedMessage: Serialize + DeserializeOwned {
    /// The tag that separates this kind's signatures from every other kind's.
    const DOMAIN: Domain;
}

const SIG_PREFIX: &[u8] = b"TRUST-SIG/v2";

/// A body together with its signer and signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed<T> {
    /// The account that signed.
    pub signer: PublicKey,
    /// The signed message.
    pub body: T,
    /// Signature over the domain-tagged encoding of `body`.
    pub signature: Signature,
}

/// The exact bytes a signer signs for a body of kind `T` on the chain `chain`.
pub fn signing_bytes<T: SignedMessage>(chain: &Hash, body: &T) -> Vec<u8> {
    let tag = T::DOMAIN.0.as_bytes();
    let enc = encoding::encode(body);
    let mut out = Vec::new();
    out.extend_from_slice(SIG_PREFIX);
    out.extend_from_slice(&(tag.len() as u64).to_le_bytes());
    out.extend_from_slice(tag);
    out.extend_from_slice(chain.as_ref());
    out.extend_from_slice(&enc);
    out
}

impl<T: SignedMessage> Signed<T> {
    /// Signs `body` with `key` for the chain `chain` (its genesis hash).
    pub fn sign(key: &Keypair, chain: &Hash, body: T) -> Self {
        let signature = key.sign_raw(&signing_bytes(chain, &body));
        Self {
            signer: key.public(),
            body,
            signature,
        }
    }

    /// Checks the signature against the signer, the body, this kind's domain tag and the
    /// chain `chain`.
    pub fn verify(&self, chain: &Hash) -> Result<(), SignatureError> {
        self.signer
            .verify_raw(&signing_bytes(chain, &self.body), &self.signature)
    }

    /// The id of the envelope: a hash of its canonical encoding (signature included).
    pub fn id(&self) -> Hash {
        Hash::of_parts("trust/v1/signed-id", &[&encoding::encode(self)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct A(u32);
    impl SignedMessage for A {
        const DOMAIN: Domain = Domain("test/a");
    }
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct B(u32);
    impl SignedMessage for B {
        const DOMAIN: Domain = Domain("test/b");
    }

    const CHAIN: Hash = Hash([7; 32]);

    #[test]
    fn verifies_and_detects_tampering() {
        let k = Keypair::from_label("k");
        let s = Signed::sign(&k, &CHAIN, A(5));
        assert!(s.verify(&CHAIN).is_ok());
        let mut t = s.clone();
        t.body = A(6);
        assert!(t.verify(&CHAIN).is_err());
        let mut u = s.clone();
        u.signer = Keypair::from_label("other").public();
        assert!(u.verify(&CHAIN).is_err());
    }

    #[test]
    fn wrong_domain_tag_is_rejected() {
        let k = Keypair::from_label("k");
        let a = Signed::sign(&k, &CHAIN, A(5));
        // Same body bytes, different message kind: the signature must not carry over.
        let bytes = encoding::encode(&a);
        let b: Signed<B> = encoding::decode(&bytes).expect("same layout decodes");
        assert_eq!(b.body, B(5));
        assert!(matches!(b.verify(&CHAIN), Err(SignatureError::Invalid(_))));
    }

    /// A message signed for one chain is refused on another: a testnet transfer does not
    /// replay on a network where the same key holds funds.
    #[test]
    fn a_signature_for_one_chain_does_not_verify_on_another() {
        let k = Keypair::from_label("k");
        let s = Signed::sign(&k, &CHAIN, A(5));
        assert!(s.verify(&CHAIN).is_ok());
        assert!(matches!(
            s.verify(&Hash([8; 32])),
            Err(SignatureError::Invalid(_))
        ));
        assert_ne!(
            signing_bytes(&CHAIN, &A(5)),
            signing_bytes(&Hash([8; 32]), &A(5))
        );
    }
}
