//! The transaction set applied by the audit contract.
