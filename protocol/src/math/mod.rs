//! The paper's quorum and economics math.
