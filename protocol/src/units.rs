//! Fixed-point and integer units used in consensus state.
