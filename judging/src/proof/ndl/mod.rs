//! NDL and NDL_f: the reader, the 24 rules, the meaning of one step, and the whole-proof
//! evaluator over assumption bases.

pub(crate) mod check;
pub(crate) mod eval;
pub(crate) mod rules;
pub(crate) mod syntax;
