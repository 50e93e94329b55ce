//! The one canonical binary encoding of the protocol.
//!
//! bincode 2.0.1 with a single fixed configuration: little-endian, fixed-width integers,
//! and a decode limit of [`MAX_MESSAGE_BYTES`]. [`decode`] additionally rejects trailing
//! bytes and any input that does not re-encode to itself, so every value has exactly one
//! accepted byte string: hashes and signatures over encodings are well defined.

use bincode::config::{Configuration, Fixint, Limit, LittleEndian};
use serde::{Serialize, de::DeserializeOwned};

/// The largest encoded message any node accepts (4 MiB). Segment payloads are far smaller;
/// blocks are bounded by the block size limit, which is below this.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

type Config = Configuration<LittleEndian, Fixint, Limit<MAX_MESSAGE_BYTES>>;

const CONFIG: Config = bincode::config::standard()
    .with_little_endian()
    .with_fixed_int_encoding()
    .with_limit::<MAX_MESSAGE_BYTES>();

/// Why bytes were not accepted as a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input is larger than the limit, before any parsing.
    #[error("message of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Input length.
        len: usize,
        /// The limit that applied.
        limit: usize,
    },
    /// The bytes are not a valid encoding of the expected type.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A valid value was followed by extra bytes.
    #[error("{0} trailing bytes after the message")]
    TrailingBytes(usize),
    /// The bytes decode, but are not the canonical encoding of the value.
    #[error("message is not canonically encoded")]
    NonCanonical,
}

/// Encodes a value canonically.
///
/// Values of the protocol's own types always encode; the only failure is a value larger
/// than [`MAX_MESSAGE_BYTES`] or a type serde cannot express in bincode, which is a bug in
/// the caller, reported as [`DecodeError::Malformed`] rather than a panic.
pub fn try_encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, DecodeError> {
    bincode::serde::encode_to_vec(value, CONFIG).map_err(|e| DecodeError::Malformed(e.to_string()))
}

/// Encodes a value canonically; an unencodable value yields an empty vector, which no
/// decoder accepts. Prefer [`try_encode`] where the caller can report the error.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    try_encode(value).unwrap_or_default()
}

/// Decodes a value with the size limit, rejecting trailing and non-canonical bytes.
pub fn decode<T: Serialize + DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    decode_with_limit(bytes, MAX_MESSAGE_BYTES)
}

/// Like [`decode`] with a tighter limit for a particular channel (e.g. gossip).
pub fn decode_with_limit<T: Serialize + DeserializeOwned>(
    bytes: &[u8],
    limit: usize,
) -> Result<T, DecodeError> {
    let limit = limit.min(MAX_MESSAGE_BYTES);
    if bytes.len() > limit {
        return Err(DecodeError::TooLarge {
            len: bytes.len(),
            limit,
        });
    }
    let (value, read): (T, usize) = bincode::serde::decode_from_slice(bytes, CONFIG)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    if read != bytes.len() {
        return Err(DecodeError::TrailingBytes(bytes.len().saturating_sub(read)));
    }
    if try_encode(&value)?.as_slice() != bytes {
        return Err(DecodeError::NonCanonical);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_trailing() {
        let v: (u32, String) = (7, "x".into());
        let b = encode(&v);
        assert_eq!(b, [7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'x']);
        assert_eq!(decode::<(u32, String)>(&b), Ok(v));
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(
            decode::<(u32, String)>(&longer),
            Err(DecodeError::TrailingBytes(1))
        );
    }

    #[test]
    fn oversized_rejected_before_parsing() {
        let big = vec![0u8; MAX_MESSAGE_BYTES + 1];
        assert!(matches!(
            decode::<Vec<u8>>(&big),
            Err(DecodeError::TooLarge { .. })
        ));
        assert!(matches!(
            decode_with_limit::<u8>(&[1, 2], 1),
            Err(DecodeError::TooLarge { len: 2, limit: 1 })
        ));
    }

    #[test]
    fn huge_length_prefix_does_not_allocate() {
        // A vector claiming u64::MAX elements must fail cleanly.
        let b = u64::MAX.to_le_bytes();
        assert!(matches!(
            decode::<Vec<u8>>(&b),
            Err(DecodeError::Malformed(_))
        ));
    }

    #[test]
    fn bad_bool_and_utf8_rejected() {
        assert!(decode::<bool>(&[2]).is_err());
        assert!(decode::<String>(&[1, 0, 0, 0, 0, 0, 0, 0, 0xff]).is_err());
    }
}
