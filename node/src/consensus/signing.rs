//! Consensus signatures: every proposal, vote and proposal stream is signed with the
//! validator's account key over a domain-separated digest that includes the chain id, so a
//! signature from one network never verifies on another.

use async_trait::async_trait;
use borsh::BorshSerialize;
use malachitebft_core_types::{SignedMessage, ValidatorProof, VoteExtensionScope};
use malachitebft_signing::{Error as SigningError, Signer, VerificationResult, Verifier};
use trust_protocol::{Hash, Keypair, PublicKey, Signature};

use super::context::{Address, ConsensusSignature, PartInit, Proposal, TrustContext, Vote};

fn borsh_bytes<T: BorshSerialize>(value: &T) -> Vec<u8> {
    // Writing into a Vec cannot fail for our own types.
    borsh::to_vec(value).unwrap_or_default()
}

fn digest(tag: &str, chain: &Hash, body: &[u8]) -> Hash {
    Hash::of_parts(tag, &[chain.as_ref(), body])
}

/// What a vote signature covers (the extension is signed separately).
pub fn vote_digest(chain: &Hash, vote: &Vote) -> Hash {
    let body = borsh_bytes(&(
        vote.vote_type,
        vote.height,
        vote.round,
        vote.value,
        vote.validator,
    ));
    digest("trust/v1/consensus-vote", chain, &body)
}

/// What a proposal signature covers.
pub fn proposal_digest(chain: &Hash, proposal: &Proposal) -> Hash {
    digest("trust/v1/consensus-proposal", chain, &borsh_bytes(proposal))
}

/// What the `Fin` part of a proposal stream signs: the `Init` part and the hash of the
/// block bytes streamed in `Data` parts.
pub fn parts_digest(chain: &Hash, init: &PartInit, block_hash: &Hash) -> Hash {
    let mut body = borsh_bytes(init);
    body.extend_from_slice(block_hash.as_ref());
    digest("trust/v1/consensus-parts", chain, &body)
}

fn extension_digest(chain: &Hash, scope: &VoteExtensionScope<TrustContext>) -> Hash {
    let body = borsh_bytes(&(
        scope.height,
        scope.round,
        scope.value_id,
        scope.validator_address,
    ));
    digest("trust/v1/consensus-extension", chain, &body)
}

/// Checks `sig` by `address` over `digest`.
pub fn verify_digest(address: &Address, digest: &Hash, sig: &ConsensusSignature) -> bool {
    PublicKey(address.0)
        .verify_raw(digest.as_ref(), &Signature(sig.0))
        .is_ok()
}

/// Signs with the validator's account key.
#[derive(Debug, Clone)]
pub struct AccountSigner {
    key: Keypair,
    chain: Hash,
}

impl AccountSigner {
    /// A signer for `chain`.
    pub fn new(key: Keypair, chain: Hash) -> Self {
        Self { key, chain }
    }

    /// Signs a digest.
    pub fn sign(&self, digest: &Hash) -> ConsensusSignature {
        ConsensusSignature(self.key.sign_raw(digest.as_ref()).0)
    }

    /// The account key: it also proves the seeds of the blocks this validator proposes.
    pub fn key(&self) -> &Keypair {
        &self.key
    }

    /// This signer's address.
    pub fn address(&self) -> Address {
        Address::of(&self.key.public())
    }
}

#[async_trait]
impl Signer<TrustContext> for AccountSigner {
    async fn sign_vote(
        &self,
        vote: Vote,
    ) -> Result<SignedMessage<TrustContext, Vote>, SigningError> {
        let sig = self.sign(&vote_digest(&self.chain, &vote));
        Ok(SignedMessage::new(vote, sig))
    }

    async fn sign_proposal(
        &self,
        proposal: Proposal,
    ) -> Result<SignedMessage<TrustContext, Proposal>, SigningError> {
        let sig = self.sign(&proposal_digest(&self.chain, &proposal));
        Ok(SignedMessage::new(proposal, sig))
    }

    async fn sign_vote_extension(
        &self,
        scope: VoteExtensionScope<TrustContext>,
        extension: (),
    ) -> Result<SignedMessage<TrustContext, ()>, SigningError> {
        let sig = self.sign(&extension_digest(&self.chain, &scope));
        Ok(SignedMessage::new(extension, sig))
    }

    async fn sign_validator_proof(
        &self,
        public_key: Vec<u8>,
        peer_id: Vec<u8>,
    ) -> Result<ValidatorProof<TrustContext>, SigningError> {
        let bytes = ValidatorProof::<TrustContext>::signing_bytes(&public_key, &peer_id);
        let sig = ConsensusSignature(self.key.sign_raw(&bytes).0);
        Ok(ValidatorProof::new(public_key, peer_id, sig))
    }
}

/// Verifies consensus signatures of `chain`.
#[derive(Debug, Clone)]
pub struct AccountVerifier {
    chain: Hash,
}

impl AccountVerifier {
    /// A verifier for `chain`.
    pub fn new(chain: Hash) -> Self {
        Self { chain }
    }
}

#[async_trait]
impl Verifier<TrustContext> for AccountVerifier {
    async fn verify_signed_vote(
        &self,
        vote: &Vote,
        signature: &ConsensusSignature,
        public_key: &Address,
    ) -> Result<VerificationResult, SigningError> {
        let d = vote_digest(&self.chain, vote);
        Ok(VerificationResult::from_bool(verify_digest(
            public_key, &d, signature,
        )))
    }

    async fn verify_signed_proposal(
        &self,
        proposal: &Proposal,
        signature: &ConsensusSignature,
        public_key: &Address,
    ) -> Result<VerificationResult, SigningError> {
        let d = proposal_digest(&self.chain, proposal);
        Ok(VerificationResult::from_bool(verify_digest(
            public_key, &d, signature,
        )))
    }

    async fn verify_signed_vote_extension(
        &self,
        scope: &VoteExtensionScope<TrustContext>,
        _extension: &(),
        signature: &ConsensusSignature,
        public_key: &Address,
    ) -> Result<VerificationResult, SigningError> {
        let d = extension_digest(&self.chain, scope);
        Ok(VerificationResult::from_bool(verify_digest(
            public_key, &d, signature,
        )))
    }

    async fn verify_validator_proof(
        &self,
        proof: &ValidatorProof<TrustContext>,
    ) -> Result<VerificationResult, SigningError> {
        let Ok(key) = <[u8; 32]>::try_from(proof.public_key.as_slice()) else {
            return Ok(VerificationResult::Invalid);
        };
        let ok = PublicKey(key)
            .verify_raw(&proof.preimage(), &Signature(proof.signature.0))
            .is_ok();
        Ok(VerificationResult::from_bool(ok))
    }
}
