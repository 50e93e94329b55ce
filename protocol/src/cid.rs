//! Content ids for segment ciphertexts: CIDv1, raw codec (0x55), sha2-256 multihash.
//!
//! These are exactly the ids IPFS (Kubo) computes for a raw block, written in the
//! multibase base32 lowercase form (`b...`). Only CIDv1 is produced or accepted.

use serde::{Deserialize, Serialize};

use crate::Hash;

/// Multicodec code of raw binary blocks.
pub const RAW_CODEC: u8 = 0x55;
/// Multihash code of sha2-256.
pub const SHA2_256: u8 = 0x12;
/// The largest block a node stores or serves (IPFS's 1 MiB block limit).
pub const MAX_BLOCK_BYTES: usize = 1024 * 1024;

/// A CIDv1 of a raw block hashed with sha2-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Cid(pub Hash);

/// Why a CID string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidError {
    /// Not multibase base32 (`b` prefix, lowercase RFC 4648 alphabet).
    #[error("not a base32 CID (expected a 'b' prefix and a-z2-7): {0}")]
    Encoding(String),
    /// Not a CIDv1 raw sha2-256 id.
    #[error("only CIDv1 raw sha2-256 ids are supported: {0}")]
    Unsupported(String),
}

const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

impl Cid {
    /// The CID of a block's bytes.
    pub fn of(block: &[u8]) -> Cid {
        Cid(Hash::sha256(block))
    }

    /// The binary form: version 1, codec, multihash code, digest length, digest.
    pub fn to_bytes(&self) -> [u8; 36] {
        let mut out = [0u8; 36];
        let (head, digest) = out.split_at_mut(4);
        head.copy_from_slice(&[1, RAW_CODEC, SHA2_256, 32]);
        digest.copy_from_slice(self.0.as_bytes());
        out
    }

    /// Parses the binary form.
    pub fn from_bytes(b: &[u8]) -> Result<Cid, CidError> {
        match b {
            [1, RAW_CODEC, SHA2_256, 32, digest @ ..] if digest.len() == 32 => {
                let mut h = [0u8; 32];
                h.copy_from_slice(digest);
                Ok(Cid(Hash(h)))
            }
            _ => Err(CidError::Unsupported(hex::encode(b))),
        }
    }

    /// Whether `block` has this id.
    pub fn matches(&self, block: &[u8]) -> bool {
        Cid::of(block) == *self
    }
}

/// The base32 symbol for the low five bits of `v`.
fn symbol(v: u32) -> char {
    ALPHABET
        .get((v & 31) as usize)
        .map_or('a', |&c| char::from(c))
}

impl core::fmt::Display for Cid {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut s = String::with_capacity(60);
        s.push('b');
        // Bit accumulator: `bits` (< 13) pending bits in the low end of `acc`.
        let (mut acc, mut bits) = (0u32, 0u32);
        for b in self.to_bytes() {
            acc = (acc << 8) | u32::from(b);
            bits = bits.wrapping_add(8);
            while bits >= 5 {
                bits = bits.wrapping_sub(5);
                s.push(symbol(acc >> bits));
            }
            acc &= (1u32 << bits).wrapping_sub(1);
        }
        if bits > 0 {
            s.push(symbol(acc << 5u32.wrapping_sub(bits)));
        }
        f.write_str(&s)
    }
}

impl core::str::FromStr for Cid {
    type Err = CidError;
    fn from_str(s: &str) -> Result<Cid, CidError> {
        let body = s
            .strip_prefix('b')
            .ok_or_else(|| CidError::Encoding(s.to_string()))?;
        if body.len() > 64 {
            return Err(CidError::Unsupported(s.to_string()));
        }
        let mut out = Vec::with_capacity(36);
        let (mut acc, mut bits) = (0u32, 0u32);
        for c in body.bytes() {
            let v = ALPHABET
                .iter()
                .position(|&a| a == c)
                .ok_or_else(|| CidError::Encoding(s.to_string()))?;
            acc = (acc << 5) | (v as u32);
            bits = bits.wrapping_add(5);
            if bits >= 8 {
                bits = bits.wrapping_sub(8);
                out.push((acc >> bits) as u8);
            }
            acc &= (1u32 << bits).wrapping_sub(1);
        }
        Cid::from_bytes(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_what_ipfs_computes() {
        // `ipfs block put --cid-codec raw` of "hello world" (sha2-256).
        let c = Cid::of(b"hello world");
        assert_eq!(
            c.to_string(),
            "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
        );
        assert_eq!(c.to_string().parse::<Cid>(), Ok(c));
        assert!(c.matches(b"hello world") && !c.matches(b"hello worle"));
    }

    #[test]
    fn other_cids_are_refused() {
        // A CIDv0 (base58 Qm...) and a dag-pb CIDv1 are not ours.
        assert!(matches!(
            "QmWATWQ7fVPP2EFGu71UkfnqhYXDYH566qy47CnJDgvs8u".parse::<Cid>(),
            Err(CidError::Encoding(_))
        ));
        assert!(matches!(
            "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi".parse::<Cid>(),
            Err(CidError::Unsupported(_))
        ));
        assert!("bAFK".parse::<Cid>().is_err());
    }
}
