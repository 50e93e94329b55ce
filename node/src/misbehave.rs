//! What a test build's node does wrong on purpose, selected by [`BEHAVIOUR_ENV`]: its seats
//! or sessions (`crate::audit::misbehave`), spam (`crate::net::spam`), forged proposals
//! (`crate::consensus::forge`). Compiled into test builds only (cargo feature `misbehave`);
//! any other build refuses to start with the variable set.

#[cfg(feature = "misbehave")]
use tracing::warn;

pub use crate::audit::seat::BEHAVIOUR_ENV;

/// Why the behaviour switch stops the node.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BehaviourError(pub String);

/// What a test build's node does wrong on purpose ([`BEHAVIOUR_ENV`]): a
/// comma-separated list, at most one of them a seat (or provider) behaviour
/// (`griefing-provider,spammer,proposal-forger` runs one node as every adversary).
#[cfg(feature = "misbehave")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TestBehaviour {
    /// Its seats (or, for `griefing-provider`, its sessions) misbehave
    /// (`crate::audit::misbehave`).
    pub seat: Option<crate::audit::misbehave::Behaviour>,
    /// It floods the network with unpayable transactions from fresh keys
    /// (`crate::net::spam`).
    pub spammer: bool,
    /// It streams forged proposals in rounds it does not propose
    /// (`crate::consensus::forge`).
    pub forger: bool,
}

#[cfg(feature = "misbehave")]
impl TestBehaviour {
    /// Parses a comma-separated list of behaviour names.
    pub fn parse(names: &str) -> Result<Self, BehaviourError> {
        let mut b = TestBehaviour::default();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "spammer" => b.spammer = true,
                "proposal-forger" => b.forger = true,
                other => {
                    let seat = other.parse().map_err(|e| {
                        BehaviourError(format!(
                            "{e}; or a node behaviour: spammer, proposal-forger"
                        ))
                    })?;
                    if b.seat.replace(seat).is_some() {
                        return Err(BehaviourError(format!(
                            "{names}: at most one seat or provider behaviour at a time"
                        )));
                    }
                }
            }
        }
        if b == TestBehaviour::default() {
            return Err(BehaviourError("no behaviour named".into()));
        }
        Ok(b)
    }
}

/// The test behaviour [`BEHAVIOUR_ENV`] names, announced loudly (test builds only). A
/// name that is not a behaviour stops the node.
#[cfg(feature = "misbehave")]
pub fn from_env() -> Result<Option<TestBehaviour>, BehaviourError> {
    let Ok(name) = std::env::var(BEHAVIOUR_ENV) else {
        return Ok(None);
    };
    let b =
        TestBehaviour::parse(&name).map_err(|e| BehaviourError(format!("{BEHAVIOUR_ENV}: {e}")))?;
    warn!(
        behaviour = %name.trim(),
        "THIS NODE IS SET TO MISBEHAVE ON PURPOSE ({BEHAVIOUR_ENV}={}): a test build, never for a real network",
        name.trim()
    );
    Ok(Some(b))
}

/// A build without test behaviours refuses to start with [`BEHAVIOUR_ENV`] set, rather
/// than run honestly while whoever set it believes otherwise.
#[cfg(not(feature = "misbehave"))]
pub fn refuse() -> Result<(), BehaviourError> {
    match std::env::var_os(BEHAVIOUR_ENV) {
        None => Ok(()),
        Some(v) => Err(BehaviourError(format!(
            "{BEHAVIOUR_ENV}={} is set, but this build of trust-node has no test behaviours: they are compiled only into test builds (cargo feature `misbehave`). Unset it to run this node.",
            v.to_string_lossy()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "misbehave")]
    #[test]
    fn node_and_seat_behaviours_are_named_alike() {
        use crate::audit::misbehave::Behaviour;
        assert_eq!(
            TestBehaviour::parse("spammer"),
            Ok(TestBehaviour {
                spammer: true,
                ..TestBehaviour::default()
            })
        );
        assert_eq!(
            TestBehaviour::parse(" proposal-forger "),
            Ok(TestBehaviour {
                forger: true,
                ..TestBehaviour::default()
            })
        );
        assert_eq!(
            TestBehaviour::parse("rubber-stamp"),
            Ok(TestBehaviour {
                seat: Some(Behaviour::RubberStamp),
                ..TestBehaviour::default()
            })
        );
        // One node can be every adversary at once.
        assert_eq!(
            TestBehaviour::parse("griefing-provider, spammer,proposal-forger"),
            Ok(TestBehaviour {
                seat: Some(Behaviour::GriefingProvider),
                spammer: true,
                forger: true,
            })
        );
        let e = TestBehaviour::parse("forger").unwrap_err().0;
        assert!(
            e.contains("proposal-forger") && e.contains("malicious"),
            "{e}"
        );
        assert!(TestBehaviour::parse("lazy,random").is_err());
        assert!(TestBehaviour::parse(" , ").is_err());
    }
}
