//! Reasoning traces as providers submit them.

use serde::{Deserialize, Serialize};

/// A reasoning trace: the problem, the model's thinking, and its final output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// The problem statement given to the model.
    pub problem: String,
    /// The model's reasoning.
    pub thinking: String,
    /// The model's final answer.
    pub output: String,
}
