//! Wire-format tests: decoding arbitrary bytes never panics, every message type round
//! trips, and golden vectors pin the exact bytes (a changed encoding fails here on purpose).

use proptest::prelude::*;
use trust_protocol::{
    Hash, Keypair, Salt, Vote,
    block::{Block, BlockHeader, genesis_seed, prove_seed},
    commitment, decode, encode,
    vrf::VrfProof,
};

fn block_strategy() -> impl Strategy<Value = Block> {
    (
        any::<[u8; 32]>(),
        1u64..u64::MAX,
        any::<[u8; 32]>(),
        any::<[u8; 32]>(),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8),
    )
        .prop_map(|(chain, height, prev, state, txs)| {
            let key = Keypair::from_seed(chain);
            let vrf = prove_seed(&key, &Hash(chain), height, &Hash(prev)).unwrap();
            Block::new(
                Hash(chain),
                height,
                Hash(prev),
                height.saturating_mul(1_000),
                Hash(state),
                key.public(),
                vrf,
                txs,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode::<Block>(&bytes);
        let _ = decode::<BlockHeader>(&bytes);
        let _ = decode::<VrfProof>(&bytes);
        let _ = decode::<Vote>(&bytes);
        let _ = decode::<Hash>(&bytes);
        let _ = decode::<Vec<Vec<u8>>>(&bytes);
    }

    #[test]
    fn blocks_round_trip(b in block_strategy()) {
        let bytes = encode(&b);
        prop_assert_eq!(decode::<Block>(&bytes), Ok(b.clone()));
        prop_assert_eq!(b.check(), Ok(()));
    }

    #[test]
    fn mutated_block_bytes_never_panic(b in block_strategy(), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = encode(&b);
        let i = pos.index(bytes.len());
        bytes[i] = byte;
        if let Ok(d) = decode::<Block>(&bytes) {
            // Whatever decodes re-encodes to exactly the same bytes (canonical).
            prop_assert_eq!(encode(&d), bytes);
        }
    }

    #[test]
    fn votes_round_trip(v in prop::sample::select(Vote::ALL.to_vec())) {
        prop_assert_eq!(decode::<Vote>(&encode(&v)), Ok(v));
    }
}

#[test]
fn golden_block_header() {
    let key = Keypair::from_seed([4; 32]);
    let vrf = prove_seed(&key, &Hash([1; 32]), 7, &genesis_seed(&Hash([5; 32]))).unwrap();
    let b = Block::new(
        Hash([1; 32]),
        7,
        Hash([2; 32]),
        1_700_000_000_000,
        Hash([3; 32]),
        key.public(),
        vrf,
        vec![b"a".to_vec(), b"bc".to_vec()],
    );
    let bytes = encode(&b);
    // chain(32) height(8) prev(32) time_ms(8) txs_root(32) state_root(32) proposer(32)
    // vrf(80) | vec len(8) | 2 x (len(8) + bytes)
    assert_eq!(
        bytes.len(),
        32 + 8 + 32 + 8 + 32 + 32 + 32 + 80 + 8 + (8 + 1) + (8 + 2)
    );
    assert_eq!(&bytes[32..40], &7u64.to_le_bytes());
    assert_eq!(&bytes[72..80], &1_700_000_000_000u64.to_le_bytes());
    assert_eq!(&bytes[176..256], vrf.as_bytes());
    assert_eq!(
        hex(&bytes[bytes.len() - 27..]),
        "020000000000000001000000000000006102000000000000006263"
    );
    assert_eq!(
        b.hash().to_hex(),
        GOLDEN_BLOCK_HASH,
        "block header encoding or hashing changed"
    );
    assert_eq!(
        b.header.seed().to_hex(),
        GOLDEN_BLOCK_SEED,
        "block seed derivation changed"
    );
}

#[test]
fn golden_commitment() {
    let c = commitment(
        &Hash([1; 32]),
        &Hash([2; 32]),
        &Keypair::from_seed([3; 32]).public(),
        Vote::Invalid,
        &Salt([4; 32]),
        "the rule (B → C) yields C, not F",
    );
    assert_eq!(c.to_hex(), GOLDEN_COMMITMENT, "commitment preimage changed");
}

/// Abstention joined the vote enum on purpose (a committed, revealed "cannot judge"): it is
/// the fourth variant, encoded as 3, with commitment code 4. The earlier votes keep their
/// bytes; both commitments changed when they began to bind the vote's reason (issue 28).
#[test]
fn golden_abstain_vote() {
    assert_eq!(hex(&encode(&Vote::Valid)), GOLDEN_VALID_VOTE);
    assert_eq!(hex(&encode(&Vote::Abstain)), GOLDEN_ABSTAIN_VOTE);
    assert_eq!(Vote::Abstain.code(), 4);
    let c = commitment(
        &Hash([1; 32]),
        &Hash([2; 32]),
        &Keypair::from_seed([3; 32]).public(),
        Vote::Abstain,
        &Salt([4; 32]),
        "the rule (B → C) yields C, not F",
    );
    assert_eq!(c.to_hex(), GOLDEN_ABSTAIN_COMMITMENT);
    assert_ne!(c.to_hex(), GOLDEN_COMMITMENT);
}

/// The provider-paid abstention joined the vote enum last (issue 54, issue 53 finding 11):
/// it is encoded as 4 with commitment code 5, and the four earlier votes keep their bytes
/// and codes, so commitments and ledgers written before it still open and replay.
#[test]
fn golden_payload_abstain_vote() {
    assert_eq!(hex(&encode(&Vote::Valid)), GOLDEN_VALID_VOTE);
    assert_eq!(hex(&encode(&Vote::Abstain)), GOLDEN_ABSTAIN_VOTE);
    assert_eq!(
        hex(&encode(&Vote::PayloadAbstain)),
        GOLDEN_PAYLOAD_ABSTAIN_VOTE
    );
    let codes: Vec<u8> = Vote::ALL.iter().map(|v| v.code()).collect();
    assert_eq!(codes, [1, 2, 3, 4, 5]);
    assert!(Vote::PayloadAbstain.is_abstain() && Vote::PayloadAbstain.is_payload_abstain());
    assert!(!Vote::Abstain.is_payload_abstain());
    assert!(!Vote::PayloadAbstain.is_valid() && !Vote::PayloadAbstain.is_error());
    assert_eq!(decode::<Vote>(&[4, 0, 0, 0]), Ok(Vote::PayloadAbstain));
    assert!(decode::<Vote>(&[5, 0, 0, 0]).is_err());
    let c = commitment(
        &Hash([1; 32]),
        &Hash([2; 32]),
        &Keypair::from_seed([3; 32]).public(),
        Vote::PayloadAbstain,
        &Salt([4; 32]),
        "the rule (B → C) yields C, not F",
    );
    assert_ne!(c.to_hex(), GOLDEN_ABSTAIN_COMMITMENT);
    assert_ne!(c.to_hex(), GOLDEN_COMMITMENT);
    // JSON: one snake_case spelling (no version ever wrote another).
    assert_eq!(
        serde_json::to_string(&Vote::PayloadAbstain).unwrap(),
        "\"payload_abstain\""
    );
    assert_eq!(
        serde_json::from_str::<Vote>("\"payload_abstain\"").unwrap(),
        Vote::PayloadAbstain
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// Changed on purpose when headers gained `time_ms` (block time), and again when they gained
// the proposer's VRF proof of the block seed (issue 39, finding 7).
const GOLDEN_BLOCK_HASH: &str = "25f3718301e5e10d4c503d6930731091d8be3e00d55d8d63cfbebdb018cc1a0d";
// The seed: H("trust/v1/block-seed", chain, height, VRF output); pinned with the VRF proof.
const GOLDEN_BLOCK_SEED: &str = "9db5dba15ebc34cbccf84652cdbfa2e916adc247f016a5c581ac3f30121d0b8e";
// Changed on purpose: the commitment binds the hash of the vote's reason, under the tag
// `trust/v2/vote-commitment` (issue 28).
const GOLDEN_COMMITMENT: &str = "0b49bcef5ba06113989a226fde6b9556fd2f323225ea256f407a840f3a2b55fd";
const GOLDEN_VALID_VOTE: &str = "00000000";
const GOLDEN_ABSTAIN_VOTE: &str = "03000000";
const GOLDEN_PAYLOAD_ABSTAIN_VOTE: &str = "04000000";
const GOLDEN_ABSTAIN_COMMITMENT: &str =
    "f0565053828e601db27f39f8adf1ee6833b4ca282e97a9033c8caa2ddb180a1d";
