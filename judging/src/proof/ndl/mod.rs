//! NDL and NDL_f: the reader, the 24 rules, the meaning of one step, and the whole-proof
//! evaluator over assumption bases.
//!
//! The verdict to match is the one ProofGrid's checker gives, and that checker is Athena,
//! which parses NDL as its own infix syntax and evaluates it. Where the prompts and Athena
//! differ, Athena wins; where it is not known what Athena does, the step abstains:
//!
//! - the rules negate literally (`dm`, `mt` included: see [`rules`]);
//! - redundant parentheses inside a formula are dropped, a whole formula in two pairs and a
//!   name of a compound formula in parentheses are refused (see the formula reader);
//! - a deduction (`assume`, `suppose-absurd`, a block) may be a rule's argument: it runs in
//!   the rule's scope and its conclusion holds for that rule only; a rule application is
//!   not a deduction there, and a block in parentheses is refused (see [`syntax`]);
//! - `p from ...` in NDL, and rule applications or `suppose-absurd` in NDL_f, are Athena
//!   syntax whose acceptance by ProofGrid is not known: no verdict.

pub(crate) mod check;
pub(crate) mod eval;
pub(crate) mod rules;
pub(crate) mod syntax;
