//! Re-execution of a provider's Python tool calls for the Computer tier (issue 54).
//!
//! A transcript reports what a tool returned; a seat re-runs the tool's code and compares.
//! This crate does both halves:
//!
//! - [`Sandbox`] runs the code: the host's CPython inside bubblewrap namespaces with a
//!   seccomp filter and resource limits, so a hostile program can read none of the node's
//!   files, reach no network, leave no process behind and exhaust neither memory, disk nor
//!   the seat's time, also when the node runs as root (docs/security.md, "Running a
//!   provider's code"). It implements [`Execute`], the interface the judging crate uses.
//! - [`compare`] reads a recorded result against a re-run under the recorders' rules:
//!   what a recorder does (truncation, whitespace, a traceback cut to its last line, float
//!   formatting) never makes a `Differs`.
//!
//! Two semantics ([`Mode`]): a fresh program per call whose stdout is the result, and a
//! persistent kernel whose earlier cells are replayed and whose last bare expression is
//! displayed.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod compare;
mod sandbox;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use compare::{Comparison, compare};
pub use sandbox::{Sandbox, StartError};

/// How a tool runs its code, as the transcript's tool definition says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A fresh program per call; the result is its stdout with surrounding whitespace
    /// removed; an uncaught exception shows as the last line of its traceback.
    Script,
    /// One persistent kernel per transcript: the request's `earlier` cells run first, in
    /// order, in the same namespace (their output discarded); the result is what the cell
    /// printed, followed by the plain-text display of the value of its last statement when
    /// that is a bare expression (not `None`), surrounding whitespace removed; an error
    /// shows as its traceback's last line; `<empty_execution>` when there is no output.
    Cell,
}

/// One tool call to re-run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The semantics.
    pub mode: Mode,
    /// In [`Mode::Cell`], the transcript's earlier cells, replayed first in order (their
    /// output is discarded). Ignored in [`Mode::Script`].
    pub earlier: Vec<String>,
    /// The code of the call.
    pub code: String,
}

/// How a [`Mode::Cell`] run displayed the value of its last bare expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Display {
    /// `IPython.lib.pretty.pretty`, as IPython's `PlainTextFormatter` shows it.
    Pretty,
    /// `repr`, because the interpreter has no IPython.
    Repr,
    /// Nothing was displayed (a script, or the cell did not end in a bare expression whose
    /// value is not `None`).
    None,
}

/// A completed re-run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// The result under the request's [`Mode`] (see there).
    pub output: String,
    /// The code raised an uncaught exception (its last traceback line ends `output`).
    pub raised: bool,
    /// How the last value was displayed.
    pub display: Display,
}

/// What a re-run ended in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The code ran to its end (an uncaught exception included).
    Ran(Ran),
    /// The seat cannot say what the tool returns.
    Abstain(Abstain),
}

/// Which cap a run hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitKind {
    /// CPU seconds.
    Cpu,
    /// Wall-clock time.
    Wall,
    /// Memory (address space).
    Memory,
    /// Output bytes.
    Output,
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitKind::Cpu => "CPU time",
            LimitKind::Wall => "wall-clock time",
            LimitKind::Memory => "memory",
            LimitKind::Output => "output size",
        })
    }
}

/// Why a seat cannot vote on a tool call. Each displays as one plain sentence that quotes
/// nothing of the code or its output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Abstain {
    /// The code imports a module this interpreter lacks.
    Unavailable {
        /// The module's name.
        module: String,
    },
    /// The code reached something that differs between runs or machines: a clock,
    /// randomness, the environment, files, the network, processes.
    NonDeterministic {
        /// What it reached, in a few words.
        what: String,
    },
    /// The run hit one of its caps.
    Limit {
        /// Which.
        which: LimitKind,
    },
    /// The sandbox stopped something (a socket, `os.system`, a fork, a file outside the
    /// working directory).
    Refused {
        /// What, in a few words.
        what: String,
    },
    /// The sandbox itself failed (bubblewrap missing, the interpreter crashed).
    Failed {
        /// Why, in a few words.
        reason: String,
    },
    /// The operator turned execution off.
    Off,
}

impl fmt::Display for Abstain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Abstain::Unavailable { module } => {
                write!(
                    f,
                    "The code needs the module {module}, which this seat's interpreter lacks."
                )
            }
            Abstain::NonDeterministic { what } => {
                write!(
                    f,
                    "The code reaches {what}, so its result may differ between runs."
                )
            }
            Abstain::Limit { which } => {
                write!(f, "The run exceeded the sandbox's {which} limit.")
            }
            Abstain::Refused { what } => write!(f, "The sandbox refused {what}."),
            Abstain::Failed { reason } => {
                write!(f, "The sandbox failed: {}.", reason.trim_end_matches('.'))
            }
            Abstain::Off => f.write_str("Code execution is turned off on this seat."),
        }
    }
}

/// Runs tool calls. The judging crate holds one as `dyn Execute`.
pub trait Execute: Send + Sync {
    /// Re-runs one call. Never panics; every failure is an [`Abstain`].
    fn execute(&self, req: &Request) -> Outcome;
    /// The interpreter, e.g. "CPython 3.11.7", recorded in votes' reasons.
    fn interpreter(&self) -> &str;
}

/// The caps of one run (a request's earlier cells and its code together).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds (`RLIMIT_CPU`). Default 10.
    pub cpu_seconds: u64,
    /// Wall-clock time, after which the whole sandbox is killed. Default 20 s.
    pub wall: Duration,
    /// Address space (`RLIMIT_AS`). Default 512 MiB.
    pub memory_bytes: u64,
    /// The result's size (and, separately, the cap on what the process may write to its
    /// standard streams). Default 64 KiB.
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_seconds: 10,
            wall: Duration::from_secs(20),
            memory_bytes: 512 * 1024 * 1024,
            output_bytes: 64 * 1024,
        }
    }
}

/// The sandbox's configuration (the node's `[computer]` section).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The interpreter; `None`: `python3` on `PATH`, resolved to the real executable.
    pub python: Option<PathBuf>,
    /// The caps of each run.
    pub limits: Limits,
    /// `false`: every execute returns [`Abstain::Off`] and nothing is started.
    pub enabled: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            python: None,
            limits: Limits::default(),
            enabled: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_spec_caps() {
        let c = Config::default();
        assert!(c.enabled);
        assert_eq!(c.python, None);
        assert_eq!(c.limits.cpu_seconds, 10);
        assert_eq!(c.limits.wall, Duration::from_secs(20));
        assert_eq!(c.limits.memory_bytes, 512 << 20);
        assert_eq!(c.limits.output_bytes, 64 << 10);
    }

    #[test]
    fn abstentions_read_as_one_sentence() {
        let all = [
            Abstain::Unavailable {
                module: "sympy".into(),
            },
            Abstain::NonDeterministic {
                what: "the clock".into(),
            },
            Abstain::Limit {
                which: LimitKind::Cpu,
            },
            Abstain::Limit {
                which: LimitKind::Wall,
            },
            Abstain::Limit {
                which: LimitKind::Memory,
            },
            Abstain::Limit {
                which: LimitKind::Output,
            },
            Abstain::Refused {
                what: "a socket".into(),
            },
            Abstain::Failed {
                reason: "bwrap is missing".into(),
            },
            Abstain::Off,
        ];
        for a in all {
            let s = a.to_string();
            assert!(s.ends_with('.'), "{s}");
            assert!(!s.contains('\n'), "{s}");
            assert_eq!(s.matches(". ").count(), 0, "one sentence: {s}");
        }
    }
}
