//! SHA-256 hashes with domain separation.
//!
//! Every hash the protocol computes goes through [`Hash::of_parts`], which prefixes a
//! domain tag and length-prefixes each part, so two different tuples of inputs (or the
//! same inputs under two different purposes) can never produce the same preimage.

use sha2::{Digest, Sha256};

crate::bytes::byte_array_newtype!(
    /// A SHA-256 digest.
    Hash,
    32
);

/// The all-zero hash ([`Hash::ZERO`]): where a running digest starts.
impl Default for Hash {
    fn default() -> Self {
        Hash::ZERO
    }
}

impl Hash {
    /// The all-zero hash, used as the parent of the genesis block.
    pub const ZERO: Hash = Hash([0u8; 32]);

    /// `SHA-256(len(tag) || tag || len(p1) || p1 || ...)` with little-endian `u64` lengths.
    pub fn of_parts(tag: &str, parts: &[&[u8]]) -> Hash {
        let mut h = Sha256::new();
        h.update((tag.len() as u64).to_le_bytes());
        h.update(tag.as_bytes());
        for p in parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        Hash(h.finalize().into())
    }

    /// Plain SHA-256 of `data`, without a domain tag (for content addressing).
    pub fn sha256(data: &[u8]) -> Hash {
        Hash(Sha256::digest(data).into())
    }

    /// The first eight bytes as a little-endian integer: a uniform draw for sortition
    /// and slashing when the hash is derived from ledger data.
    pub fn to_u64(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.0.get(..8).unwrap_or(&[0u8; 8]));
        u64::from_le_bytes(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_length_prefixed() {
        assert_ne!(
            Hash::of_parts("t", &[b"ab", b"c"]),
            Hash::of_parts("t", &[b"a", b"bc"])
        );
        assert_ne!(Hash::of_parts("t1", &[b"x"]), Hash::of_parts("t2", &[b"x"]));
        assert_eq!(Hash::of_parts("t", &[b"x"]), Hash::of_parts("t", &[b"x"]));
    }

    #[test]
    fn sha256_known_vector() {
        assert_eq!(
            Hash::sha256(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_round_trip_and_errors() {
        let h = Hash::sha256(b"x");
        assert_eq!(h.to_hex().parse::<Hash>().ok(), Some(h));
        assert!("abcd".parse::<Hash>().is_err());
        assert!("zz".repeat(32).parse::<Hash>().is_err());
    }
}
