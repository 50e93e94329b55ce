//! The sandbox: the host's CPython under bubblewrap, a seccomp filter and resource limits.

use std::fmt;

use crate::{Abstain, Config, Execute, Outcome, Request};

/// Why a [`Sandbox`] could not start. The node says so at start-up and its seats abstain
/// on tool segments; it never runs code outside the sandbox.
#[derive(Debug)]
pub enum StartError {
    /// bubblewrap (`bwrap`) is not installed or not runnable.
    Bwrap(String),
    /// The interpreter is missing or could not be resolved.
    Interpreter(String),
    /// The probe program did not run as expected inside the sandbox.
    Probe(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Bwrap(m) => write!(f, "the sandbox needs bubblewrap (bwrap): {m}"),
            StartError::Interpreter(m) => write!(f, "the sandbox's Python interpreter: {m}"),
            StartError::Probe(m) => write!(f, "the sandbox's probe run failed: {m}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Runs tool calls inside the sandbox. Built once at start-up by [`Sandbox::start`].
#[derive(Debug)]
pub struct Sandbox {
    enabled: bool,
    interpreter: String,
}

impl Sandbox {
    /// Checks bubblewrap and the interpreter and runs a probe program inside the sandbox.
    /// With `cfg.enabled == false` nothing is checked and every run abstains with
    /// [`Abstain::Off`].
    pub fn start(cfg: &Config) -> Result<Sandbox, StartError> {
        if !cfg.enabled {
            return Ok(Sandbox {
                enabled: false,
                interpreter: "none (execution off)".into(),
            });
        }
        Err(StartError::Probe(
            "the sandbox is not built yet (issue 54, phase 2)".into(),
        ))
    }
}

impl Execute for Sandbox {
    fn execute(&self, _req: &Request) -> Outcome {
        if !self.enabled {
            return Outcome::Abstain(Abstain::Off);
        }
        Outcome::Abstain(Abstain::Failed {
            reason: "the sandbox is not built yet".into(),
        })
    }

    fn interpreter(&self) -> &str {
        &self.interpreter
    }
}
