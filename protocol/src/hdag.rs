//! HDAG types.
