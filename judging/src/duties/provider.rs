//! The provider's duties on a decided block: a pure function of the block's events.

use std::collections::{BTreeMap, BTreeSet};

use trust_contracts::Event;
use trust_protocol::{AccountId, Hash};

/// One of the provider's duties on a decided block ([`plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderDuty {
    /// Seal keys to these seats of `session`, drawn in the block: (segment, seat, round), in
    /// event order.
    DeliverKeys {
        /// The session.
        session: Hash,
        /// (segment, seat, round).
        seats: Vec<(u16, AccountId, u8)>,
    },
    /// Open the segment-to-trace mapping of `session` (its reveal window closed).
    RevealMapping {
        /// The session.
        session: Hash,
    },
    /// `session` is final (its appeal window passed with no appeal open) or failed:
    /// release its ciphertexts and forget its record.
    Done {
        /// The session.
        session: Hash,
    },
}

/// The provider's duties on a decided block with `events` (pure): for the sessions it keeps
/// records of (`provided`), in event order, mapping openings and releases, then one key
/// delivery per session for the seats the block drew. The node's duties planner
/// ([`super::plan`]) takes them into its plan.
pub fn plan(provided: &BTreeSet<Hash>, events: &[Event]) -> Vec<ProviderDuty> {
    let mut out = Vec::new();
    let mut drawn: BTreeMap<Hash, Vec<(u16, AccountId, u8)>> = BTreeMap::new();
    // One mapping duty per session and block, whichever window closed.
    let mut mapped = BTreeSet::new();
    for e in events {
        match e {
            Event::SeatAssigned {
                session,
                segment,
                seat,
                round,
                ..
            } if provided.contains(session) => {
                drawn
                    .entry(*session)
                    .or_default()
                    .push((*segment, *seat, *round));
            }
            // When the votes are bound (a commit window closed), a provider with no
            // honeypot to open opens its mapping, so the last reveal can decide the
            // session; one with honeypots opens them and then the mapping once the reveal
            // window closed (`Provider::reveal_mapping` tells the two apart), unless its
            // node opened them already, with the last reveals it saw pooled.
            Event::CommitWindowClosed { session, .. }
            | Event::RevealWindowClosed { session, .. }
                if provided.contains(session) && mapped.insert(*session) =>
            {
                out.push(ProviderDuty::RevealMapping { session: *session });
            }
            // Not at the decision: until its appeal window passes, an appeal may draw
            // fresh seats that need the keys and the ciphertexts again.
            Event::SessionFinal { session } | Event::SessionFailed { session, .. }
                if provided.contains(session) =>
            {
                out.push(ProviderDuty::Done { session: *session });
            }
            _ => {}
        }
    }
    out.extend(
        drawn
            .into_iter()
            .map(|(session, seats)| ProviderDuty::DeliverKeys { session, seats }),
    );
    out
}
