//! Hard limits of every reader and checker in [`crate::proof`].
//!
//! Whatever a provider or a model writes, no reader recurses deeper, allocates more or
//! searches longer than these numbers allow; past them the text is refused cleanly (an
//! undecided report, or an abstention for one step), never a panic or a hang.

/// Most bytes of proof text read.
pub const MAX_PROOF_BYTES: usize = 4 << 20;
/// Most bytes of problem text read.
pub const MAX_PROBLEM_BYTES: usize = 1 << 20;
/// Deepest formula or term tree.
pub const MAX_FORMULA_DEPTH: usize = 1_000;
/// Most nodes in one formula or term.
pub const MAX_FORMULA_NODES: usize = 50_000;
/// Deepest nesting of parentheses in one formula or term.
pub const MAX_NESTING: usize = 128;
/// Deepest nesting of proof blocks (`{ }`, `assume`, `suppose-absurd`).
pub const MAX_BLOCK_DEPTH: usize = 100;
/// Most primitive steps in one proof.
pub const MAX_STEPS: usize = 200_000;
/// Most justifiers a `from` step may have (the language's own limit).
pub const MAX_FROM_JUSTIFIERS: usize = 5;
/// Most work a structure seat lets [`super::check_structure`] do, in the units of
/// [`super::plan::structure_work`]: an upper bound, computed from the skeleton's sizes
/// before the check runs, on its scope lookups (steps x citations x depth^2 x steps) and
/// formula copies. Over it the structure seat abstains, with the abstention the provider
/// pays for (`Vote::PayloadAbstain`), and never votes Invalid: a skeleton built to blow
/// the check up (a thousand steps of 64 citations under a hundred nested blocks, about
/// 10^13 units) cannot hold a seat. The bound is loose for honest proofs (a right NDL
/// proof at the decomposer's limits, 12 nested blocks around 480 steps, comes to 7 x 10^8
/// units and checks in milliseconds), so the budget sits far above any proof a model
/// writes: the samples and the hand-written proofs need less than a hundredth of it
/// (`judging/src/formal_tests.rs`).
pub const STRUCTURE_WORK_BUDGET: u64 = 20_000_000_000;
/// Most conflicts one SAT call may spend before the step is left undecided.
pub const SAT_CONFLICT_BUDGET: u64 = 2_000_000;
/// Most redex placements tried for one equational step.
pub const MAX_REWRITE_SEARCH: usize = 200_000;
