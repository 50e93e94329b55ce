//! What the adversarial simulator remembers: of each session, its ground truth and its
//! provider's plan of attacks ([`Case`]); of its actors, the seats they hold and what they
//! wait for between blocks ([`State`]). The chain (`world.rs`) holds both; the actors
//! (`behave.rs`) read and write them.

use std::collections::BTreeMap;

use trust_protocol::{
    AccountId, Hash, Salt, Vote,
    tx::{Call, HoneypotOpening, Tier},
};

use crate::{Contract, Outcome};

/// How the adversary keys the honest seats of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keys {
    /// Every seat, good keys, at once.
    Good,
    /// Keys that do not open.
    Garbage,
    /// No keys at all.
    Withhold,
    /// Good keys, but later than the key lead before the commit deadline.
    Late,
    /// Good keys at once, but the ciphertexts are never served: the honest seats cannot
    /// fetch what the keys open (`withheld-ciphertext`), and its sybils hold their seats
    /// uncommitted as long as they can, to keep the tier's capacity taken.
    Unserved,
}

/// What the adversary does with honeypots in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Honeypots {
    None,
    Genuine,
    False,
    Selective,
    WithConclusion,
    WithRestedOn,
    NeverOpened,
}

/// The attacks an adversary session mounts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) keys: Keys,
    pub(super) honeypots: Honeypots,
    pub(super) self_appeal: bool,
    pub(super) spam: bool,
    pub(super) late_expertise: bool,
    /// `tau` at the tier's ceiling (else at the network's least `tau`).
    pub(super) tau_at_ceiling: bool,
    /// Every extra seat the network allows (else none).
    pub(super) max_extra_seats: bool,
    /// The commit window at the tier's cap (else at its floor).
    pub(super) commit_at_cap: bool,
    /// Its wrong step is a re-braced formal step (`re-braced-proof`).
    pub(super) re_braced: bool,
    /// The session requires [`super::world::FLOOR_DOMAIN`], whose pool its sybils hold
    /// at the floor (`domain-pool-at-floor`).
    pub(super) domain_at_floor: bool,
}

impl Plan {
    pub(super) fn honest() -> Self {
        Self {
            keys: Keys::Good,
            honeypots: Honeypots::None,
            self_appeal: false,
            spam: false,
            late_expertise: false,
            tau_at_ceiling: false,
            max_extra_seats: false,
            commit_at_cap: false,
            re_braced: false,
            domain_at_floor: false,
        }
    }
}

/// What the simulation knows of one session: its ground truth and its provider's plan.
pub(super) struct Case {
    pub(super) provider: usize,
    pub(super) adversary: bool,
    pub(super) plan: Plan,
    /// Per segment: the vote the truth calls for.
    pub(super) truth: Vec<Vote>,
    pub(super) deps: Vec<Vec<u16>>,
    pub(super) ids: Vec<Hash>,
    /// Per segment: the honeypot commitment its entry carries, as its opening.
    pub(super) claims: Vec<Option<HoneypotOpening>>,
    /// The committed honeypot set.
    pub(super) set: Vec<u16>,
    pub(super) set_salt: Salt,
    pub(super) mapping: (Hash, Salt),
    pub(super) opened_at: u64,
    /// The block that drew its first seats.
    pub(super) drawn_at: Option<u64>,
    /// Keys delivered: (seat, segment) -> whether it opens.
    pub(super) keys: BTreeMap<(AccountId, u16), bool>,
    pub(super) disclosed: bool,
    pub(super) decided: bool,
    /// Whether a round that decides one of its wrong steps as no error held an honest
    /// seat (which could appeal: it judged the other side, or was kept from judging a
    /// Valid verdict), as of the last block: a wrong PASS at finality is
    /// `wrong_pass_final` when it did, `wrong_pass_unwatched` when not.
    pub(super) watched: bool,
    /// Who filed the appeal judged in each appeal round.
    pub(super) appellants: BTreeMap<u8, usize>,
}

impl Case {
    /// Whether the trace (opened honeypots aside) has a wrong step, on `o`.
    pub(super) fn wrong_on(&self, o: &Outcome) -> bool {
        self.truth
            .iter()
            .enumerate()
            .any(|(i, t)| !t.is_valid() && o.segments.get(i).is_some_and(|g| g.honeypot.is_none()))
    }
}

/// A seat one of the simulated auditors holds.
pub(super) struct HeldSeat {
    pub(super) actor: usize,
    pub(super) segment: u16,
    pub(super) round: u8,
    pub(super) commit: Option<(Vote, Salt)>,
    pub(super) revealed: bool,
    /// The block it was drawn in.
    pub(super) drawn_at: u64,
}

/// The actors' memory between blocks.
#[derive(Default)]
pub(super) struct State {
    /// Seats held, by session.
    pub(super) seats: BTreeMap<Hash, Vec<HeldSeat>>,
    /// Transactions to send at a later height: (height, sender, call).
    pub(super) delayed: Vec<(u64, usize, Call)>,
    /// Where the appeal state of a session stood when an outvoted seat's appeal of it was
    /// refused, by session and seat.
    pub(super) seat_blocked: BTreeMap<(Hash, usize), AppealState>,
    /// The domain floor, once a refusal named it (the sybils bring their pool up to it).
    pub(super) domain_floor: Option<u64>,
    /// Late-expertise declarations to try to take back: (height, tier).
    pub(super) cancels: Vec<(u64, Tier)>,
    /// The height of each auditor's pending expertise declaration.
    pub(super) declared: BTreeMap<AccountId, u64>,
    /// The height of the declaration each auditor's expertise counts from now.
    pub(super) counting: BTreeMap<AccountId, u64>,
    /// Where the appeal state of a session stood when the re-roller last appealed it.
    pub(super) roller_blocked: BTreeMap<Hash, AppealState>,
}

/// What can change between two appeals of one session: queued appeals, the open round,
/// the rounds decided, the window.
pub(super) type AppealState = (usize, Option<u8>, usize, u64);

pub(super) fn appeal_state(c: &Contract, session: &Hash) -> AppealState {
    let st = c.state();
    let live = st.sessions.get(session);
    let o = st.outcomes.get(session);
    (
        live.map_or(0, |s| s.queued.len()),
        live.and_then(|s| s.appeal.as_ref().map(|a| a.round)),
        o.map_or(0, |o| o.appeals.rounds.len()),
        o.map_or(0, |o| o.appeals.until),
    )
}

impl State {
    /// Seat `actor`'s appeal of `session` was refused: it waits for a change.
    pub(super) fn seat_refused(&mut self, session: Hash, actor: usize, c: &Contract) {
        self.seat_blocked
            .insert((session, actor), appeal_state(c, &session));
    }
}
