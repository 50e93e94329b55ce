//! Segment documents and sealed keys: what a seat receives from a provider it does not
//! trust. A seat opens its sealed key (`seal::open_key`, the sealed key decoded from a
//! transaction), decrypts the segment's ciphertext (`seal::decrypt_segment`) and parses the
//! plaintext as a `SegmentDoc` (JSON).
//!
//! The first byte picks the path, the rest is the input:
//! - a segment document's plaintext: parsed as the seat parses it, and also encrypted,
//!   decrypted and parsed again (the provider-to-seat path); a document that parses
//!   serialises to JSON that parses to an equal document;
//! - an encoded sealed key: decoded with the canonical decoder, then opened with a seat's
//!   secret (low-order and malformed ephemeral keys, any ciphertext length);
//! - a ciphertext blob: decrypted under a fixed key.
//!
//! Properties: no panic; round trips as above; an opened key is exactly 32 bytes.
use trust_protocol::{
    Hash, encoding,
    seal::{self, KEY_LEN, MAX_SEGMENT_PLAINTEXT, NONCE_LEN, SealedKey, SealingSecret, SegmentDoc},
};

const KEY: [u8; KEY_LEN] = [0x42; KEY_LEN];
const NONCE: [u8; NONCE_LEN] = [0x24; NONCE_LEN];
const SEAT_SECRET: [u8; 32] = [0x11; 32];
const CONTEXT: &[u8] = b"session|segment|seat";

fn doc(plain: &[u8]) {
    if let Ok(d) = SegmentDoc::from_bytes(plain) {
        let again = SegmentDoc::from_bytes(&d.to_bytes()).expect("its own JSON parses");
        assert_eq!(again, d);
    }
}

/// One input, as the fuzzer (and the seed replay test) gives it.
pub(crate) fn check(data: &[u8]) {
    let Some((&which, input)) = data.split_first() else {
        return;
    };
    let segment = Hash([9u8; 32]);
    match which % 3 {
        0 => {
            doc(input);
            match seal::encrypt_segment(&KEY, &NONCE, &segment, input) {
                Ok(blob) => {
                    assert!(input.len() <= MAX_SEGMENT_PLAINTEXT);
                    let plain = seal::decrypt_segment(&KEY, &segment, &blob).expect("decrypts");
                    assert_eq!(plain, input);
                    assert!(seal::decrypt_segment(&KEY, &Hash([8u8; 32]), &blob).is_err());
                    doc(&plain);
                }
                Err(_) => assert!(input.len() > MAX_SEGMENT_PLAINTEXT),
            }
        }
        1 => {
            if let Ok(sealed) = encoding::decode::<SealedKey>(input) {
                assert_eq!(encoding::encode(&sealed), input);
                let secret = SealingSecret::from_bytes(SEAT_SECRET);
                if let Ok(key) = seal::open_key(&secret, &sealed, CONTEXT) {
                    assert_eq!(key.len(), KEY_LEN);
                }
            }
        }
        _ => {
            if let Ok(plain) = seal::decrypt_segment(&KEY, &segment, input) {
                doc(&plain);
            }
        }
    }
}
