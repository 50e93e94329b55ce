//! Fixed-size byte-array newtypes shared by hashes, keys and signatures.
//!
//! In binary encodings they are written as exactly `N` raw bytes (no length prefix), so
//! their encoding is canonical; in human-readable formats (JSON, TOML) they are lowercase hex.

/// Defines a `Copy` newtype over `[u8; $len]` with hex `Display`/`FromStr`, a short `Debug`,
/// and serde that is raw bytes in binary formats and hex in human-readable ones.
macro_rules! byte_array_newtype {
    ($(#[$meta:meta])* $name:ident, $len:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub [u8; $len]);

        impl $name {
            /// Length of the value in bytes.
            pub const LEN: usize = $len;

            /// The raw bytes.
            pub fn as_bytes(&self) -> &[u8; $len] {
                &self.0
            }

            /// Lowercase hex of the bytes.
            pub fn to_hex(&self) -> String {
                hex::encode(self.0)
            }

            /// Parses lowercase or uppercase hex of exactly the right length.
            pub fn from_hex(s: &str) -> Result<Self, $crate::bytes::HexError> {
                let mut out = [0u8; $len];
                hex::decode_to_slice(s, &mut out).map_err(|_| $crate::bytes::HexError {
                    what: stringify!($name),
                    expected_len: $len,
                })?;
                Ok(Self(out))
            }
        }

        impl From<[u8; $len]> for $name {
            fn from(b: [u8; $len]) -> Self {
                Self(b)
            }
        }

        impl AsRef<[u8]> for $name {
            fn as_ref(&self) -> &[u8] {
                &self.0
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(&self.to_hex())
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let h = self.to_hex();
                write!(f, "{}({}…)", stringify!($name), h.get(..12).unwrap_or(&h))
            }
        }

        impl ::core::str::FromStr for $name {
            type Err = $crate::bytes::HexError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_hex(s)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.serialize_str(&self.to_hex())
                } else {
                    use ::serde::ser::SerializeTuple;
                    let mut t = s.serialize_tuple($len)?;
                    for b in &self.0 {
                        t.serialize_element(b)?;
                    }
                    t.end()
                }
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                        write!(f, "{} bytes or {} hex characters", $len, 2 * $len)
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_hex(v).map_err(E::custom)
                    }
                    fn visit_seq<A: ::serde::de::SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> Result<$name, A::Error> {
                        let mut out = [0u8; $len];
                        for (i, slot) in out.iter_mut().enumerate() {
                            *slot = seq
                                .next_element()?
                                .ok_or_else(|| ::serde::de::Error::invalid_length(i, &self))?;
                        }
                        Ok($name(out))
                    }
                }
                if d.is_human_readable() {
                    d.deserialize_str(V)
                } else {
                    d.deserialize_tuple($len, V)
                }
            }
        }
    };
}

pub(crate) use byte_array_newtype;

/// A hex string that does not decode to a value of the expected length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: expected {expected_len} bytes in hex")]
pub struct HexError {
    /// The type that failed to parse.
    pub what: &'static str,
    /// Its length in bytes.
    pub expected_len: usize,
}
