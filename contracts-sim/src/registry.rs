//! Accounts, auditors and stake: transfers, registration, bonding, unbonding, withdrawal.
//!
//! Each handler checks everything before it changes anything, so a rejected transaction
//! leaves the state untouched.
//!
//! Registration bonds at least the tier's minimum stake in the same transaction: an
//! auditor entry is never free, so the registry cannot be flooded with entries that cost
//! nothing, and every auditor that can be drawn has stake to lose. The per-tier index of
//! drawable auditors ([`State::eligible`]) is updated here, by [`reindex`], wherever stake
//! or an auditor's standing changes.

use trust_protocol::{AccountId, Hash, SealingPublicKey, tx::Tier, units::Amount};

use crate::{
    error::TxError,
    events::Event,
    state::{
        Account, Auditor, HoneypotStats, MAX_PENDING_STAKE, MAX_UNBONDINGS, PastAuditor,
        PendingStake, State, Unbonding,
    },
};

/// `Call::Transfer`. One that would create the recipient's account must move at least
/// [`crate::Params::min_new_account`], and its sender pays
/// [`crate::Params::new_account_fee`] on top, burned: accounts are never removed, so each
/// is state the chain keeps for good, and the fee bounds how fast it grows.
pub(crate) fn transfer(
    st: &mut State,
    from: AccountId,
    to: AccountId,
    amount: Amount,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let have = st.accounts.get(&from).map_or(0, |a| a.balance);
    let creates = from != to && !st.accounts.contains_key(&to);
    // Creating an account costs its sender the fee, burned: the state keeps it for good.
    let fee = if creates {
        st.params.new_account_fee
    } else {
        0
    };
    let need = amount.checked_add(fee).ok_or(TxError::Overflow)?;
    let left = have
        .checked_sub(need)
        .ok_or(TxError::InsufficientBalance { have, need })?;
    if from != to {
        let min = st.params.min_new_account;
        if amount < min && creates {
            return Err(TxError::NewAccountTooSmall { amount, min });
        }
        let to_balance = st.accounts.get(&to).map_or(0, |a| a.balance);
        let new_to = to_balance.checked_add(amount).ok_or(TxError::Overflow)?;
        st.accounts.entry(from).or_default().balance = left;
        st.accounts.entry(to).or_default().balance = new_to;
        st.burned = st.burned.saturating_add(fee);
    }
    events.push(Event::Transferred { from, to, amount });
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn register(
    st: &mut State,
    who: AccountId,
    tier: Tier,
    expertise: &[String],
    sealing_key: SealingPublicKey,
    stake: Amount,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    if st.auditors.contains_key(&who) {
        return Err(TxError::AlreadyRegistered);
    }
    // An entry that left the state left its record in the account: an exit and a flag are
    // for good, and a new registration never starts from a better reputation.
    let past = st.accounts.get(&who).and_then(|a| a.past);
    if let Some(p) = past {
        if p.exited {
            return Err(TxError::ExitedForGood);
        }
        if p.flagged {
            return Err(TxError::FlaggedForGood);
        }
    }
    let min = st.params.min_stake(tier);
    if stake < min {
        return Err(TxError::InsufficientStake {
            have: stake,
            need: min,
        });
    }
    let acct = st.accounts.get(&who).cloned().unwrap_or_default();
    let balance = acct
        .balance
        .checked_sub(stake)
        .ok_or(TxError::InsufficientBalance {
            have: acct.balance,
            need: stake,
        })?;
    let bonded = acct.stake.checked_add(stake).ok_or(TxError::Overflow)?;
    let a = st.accounts.entry(who).or_default();
    a.balance = balance;
    a.stake = bonded;
    a.past = None;
    let mut expertise = expertise.to_vec();
    expertise.sort();
    expertise.dedup();
    let mut auditor = new_auditor(&st.params, tier, expertise, sealing_key);
    if let Some(p) = past {
        auditor.reputation = auditor.reputation.min(p.reputation);
    }
    // None of its stake counts in draws before the warm-up ends: the account's whole
    // stake joins then, as a bond would.
    auditor.draw_stake = 0;
    st.auditors.insert(who, auditor);
    defer_stake(st, who, height, bonded, 0);
    events.push(Event::AuditorRegistered { account: who, tier });
    events.push(Event::Bonded {
        account: who,
        amount: stake,
    });
    warm_up(st, who, height, events);
    Ok(())
}

/// Keeps a newly registered `who` out of draws for `expertise_delay` blocks after
/// `height`: a registration changes who may be drawn, and a draw whose seed is known (a
/// proposer knows its own block's, and may propose the next) must not be steerable by
/// choosing such a transaction. The auditor is paused now and resumes at
/// `height + expertise_delay`, as if it had asked to pause ([`ask_pause`]).
fn warm_up(st: &mut State, who: AccountId, height: u64, events: &mut Vec<Event>) {
    let at = height.saturating_add(st.params.expertise_delay);
    if let Some(au) = st.auditors.get_mut(&who) {
        au.paused = true;
        au.pending_pause = Some(crate::state::PendingPause { at, paused: false });
        st.standing_due.entry(at).or_default().insert(who);
        events.push(Event::PauseAsked {
            account: who,
            paused: false,
            at,
        });
    }
    reindex(st, &who);
}

/// Whether `who` can be drawn for a seat: a registered auditor, active, not flagged, not
/// exiting, not paused, with a draw stake ([`Auditor::draw_stake`]) of at least its tier's
/// minimum (and above zero). A bond counts there only from its height plus the delay, and
/// an unbond leaves it only then.
pub(crate) fn drawable(st: &State, who: &AccountId) -> Option<Tier> {
    let au = st.auditors.get(who)?;
    let stake = au.draw_stake;
    (au.active
        && !au.flagged
        && !au.exiting
        && !au.paused
        && stake > 0
        && stake >= st.params.min_stake(au.tier))
    .then_some(au.tier)
}

/// Puts `who` in, or takes it out of, the per-tier index of drawable auditors, and marks
/// its voting power to follow its stake at the end of the block. Every change to an
/// account's stake or an auditor's standing calls it.
pub(crate) fn reindex(st: &mut State, who: &AccountId) {
    st.power_due.insert(*who);
    let now = drawable(st, who);
    for (tier, set) in Tier::ALL.iter().zip(st.eligible.iter_mut()) {
        if now == Some(*tier) {
            set.insert(*who);
        } else {
            set.remove(who);
        }
    }
}

/// Rebuilds every derived index from the state (genesis, restore): the drawable
/// auditors, who sits in which session not yet final, pending expertise, voting power
/// still falling towards stake, and when each failure leaves the state.
pub(crate) fn reindex_all(st: &mut State) {
    st.eligible = Default::default();
    let ids: Vec<AccountId> = st.auditors.keys().copied().collect();
    for id in ids {
        reindex(st, &id);
    }
    st.power_due = st
        .accounts
        .iter()
        .filter(|(_, a)| a.power != a.stake)
        .map(|(id, _)| *id)
        .collect();
    st.seated = Default::default();
    let mut seated: Vec<(AccountId, Hash)> = Vec::new();
    for (id, s) in st.sessions.iter().chain(&st.appealable) {
        for x in s.segments.iter().flat_map(|g| g.seats.iter()) {
            seated.push((x.account, *id));
        }
    }
    for (account, session) in seated {
        st.seated.entry(account).or_default().insert(session);
    }
    st.standing_due = Default::default();
    let pending: Vec<(u64, AccountId)> = st
        .auditors
        .iter()
        .flat_map(|(id, a)| {
            let expertise = a.pending_expertise.as_ref().map(|p| (p.at, *id));
            let pause = a.pending_pause.map(|p| (p.at, *id));
            let stake = a.pending_stake.iter().map(|p| (p.at, *id));
            let retire = a.retire_at.map(|at| (at, *id));
            expertise
                .into_iter()
                .chain(pause)
                .chain(stake)
                .chain(retire)
        })
        .collect();
    for (at, id) in pending {
        st.standing_due.entry(at).or_default().insert(id);
    }
    st.failed_due = Default::default();
    let retention = st.params.failure_retention;
    let failed: Vec<(u64, Hash)> = st
        .failed
        .iter()
        .map(|(id, f)| (f.at.saturating_add(retention), *id))
        .collect();
    for (due, id) in failed {
        st.failed_due.entry(due).or_default().insert(id);
    }
    st.outcomes_due = Default::default();
    let keep = st.params.outcome_retention;
    let finals: Vec<(u64, Hash)> = st
        .outcomes
        .iter()
        .filter_map(|(id, o)| o.appeals.final_at.map(|f| (f.saturating_add(keep), *id)))
        .collect();
    for (due, id) in finals {
        st.outcomes_due.entry(due).or_default().insert(id);
    }
    st.judging = crate::admission::judging_by_scan(st);
}

/// Records that `account` holds a seat in `session` (not final yet).
pub(crate) fn seat_in(st: &mut State, account: AccountId, session: Hash) {
    st.seated.entry(account).or_default().insert(session);
}

/// Forgets every seat of `s` (session `id`): it failed or became final, so its seats hold
/// nobody's stake any more.
pub(crate) fn release_seats(st: &mut State, id: &Hash, s: &crate::state::Session) {
    for x in s.segments.iter().flat_map(|g| g.seats.iter()) {
        if let Some(set) = st.seated.get_mut(&x.account) {
            set.remove(id);
            if set.is_empty() {
                st.seated.remove(&x.account);
            }
        }
    }
}

/// `Call::DeclareExpertise`: the sender's new domains, counting from `expertise_delay`
/// blocks after `height`. Refused while an earlier declaration is pending: replacing it
/// would cancel it at once, and a proposer that knows the next seed could then choose,
/// within the delay, whether its domains change for a draw it has seen.
pub(crate) fn declare_expertise(
    st: &mut State,
    who: AccountId,
    expertise: &[String],
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let at = height.saturating_add(st.params.expertise_delay);
    let au = st.auditors.get_mut(&who).ok_or(TxError::NotAnAuditor)?;
    if au.exiting {
        return Err(TxError::AlreadyExiting);
    }
    if let Some(p) = &au.pending_expertise {
        return Err(TxError::ExpertisePending(p.at));
    }
    let mut domains = expertise.to_vec();
    domains.sort();
    domains.dedup();
    au.pending_expertise = Some(crate::state::PendingExpertise {
        at,
        expertise: domains.clone(),
    });
    st.standing_due.entry(at).or_default().insert(who);
    events.push(Event::ExpertiseDeclared {
        account: who,
        expertise: domains,
        at,
    });
    Ok(())
}

/// Why `who` may not ask to be paused (`paused`) or drawn again now, if it may not: not
/// an auditor, exiting, a change still pending, or nothing to change.
pub fn pause_refused(st: &State, who: &AccountId, paused: bool) -> Option<TxError> {
    let Some(au) = st.auditors.get(who) else {
        return Some(TxError::NotAnAuditor);
    };
    if au.exiting {
        return Some(TxError::AlreadyExiting);
    }
    if let Some(p) = au.pending_pause {
        return Some(TxError::PausePending {
            paused: p.paused,
            at: p.at,
        });
    }
    (au.paused == paused).then_some(TxError::PauseUnchanged { paused })
}

/// `Call::Pause` (`paused`) or `Call::Resume`: the change counts from `expertise_delay`
/// blocks after `height`, the delay that keeps a declaration out of any draw whose seed
/// is known, and cannot be taken back before then ([`pause_refused`]).
pub(crate) fn ask_pause(
    st: &mut State,
    who: AccountId,
    paused: bool,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    if let Some(e) = pause_refused(st, &who, paused) {
        return Err(e);
    }
    let at = height.saturating_add(st.params.expertise_delay);
    let au = st.auditors.get_mut(&who).ok_or(TxError::NotAnAuditor)?;
    au.pending_pause = Some(crate::state::PendingPause { at, paused });
    st.standing_due.entry(at).or_default().insert(who);
    events.push(Event::PauseAsked {
        account: who,
        paused,
        at,
    });
    Ok(())
}

/// What an auditor's due change did at the start of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StandingChange {
    /// Its declared expertise counts now.
    Expertise,
    /// It is paused (true) or drawn again (false) now.
    Pause(bool),
    /// Its pending bonds and unbonds count in draws now: its draw stake.
    Stake(u64),
    /// Its entry left the state ([`retire_if_due`]), paying out what had freed of its
    /// unbondings.
    Retired(u64),
    /// Its removal check found it still held back (or bonded again): only the check's
    /// height on its entry changed.
    RetireChecked,
}

/// Makes the expertise declared, and the pauses and resumes asked, for `height` count
/// (start of that block): returns each auditor whose entry changed with what changed, and
/// takes a paused auditor out of the draws' index (a resumed one back in).
pub(crate) fn apply_standing(st: &mut State, height: u64) -> Vec<(AccountId, StandingChange)> {
    let due: Vec<u64> = st.standing_due.range(..=height).map(|(h, _)| *h).collect();
    let mut changed = Vec::new();
    for h in due {
        for who in st.standing_due.remove(&h).unwrap_or_default() {
            let Some(au) = st.auditors.get_mut(&who) else {
                continue;
            };
            if let Some(p) = au.pending_expertise.take_if(|p| p.at <= height) {
                au.expertise = p.expertise;
                changed.push((who, StandingChange::Expertise));
            }
            if let Some(p) = au.pending_pause.take_if(|p| p.at <= height) {
                au.paused = p.paused;
                changed.push((who, StandingChange::Pause(p.paused)));
                reindex(st, &who);
            }
            if let Some(stake) = apply_stake(st, &who, height) {
                changed.push((who, StandingChange::Stake(stake)));
            }
            match retire_if_due(st, &who, height) {
                Some(Some(paid)) => changed.push((who, StandingChange::Retired(paid))),
                Some(None) => changed.push((who, StandingChange::RetireChecked)),
                None => {}
            }
        }
    }
    changed
}

/// Records that `bonded` joins, and `unbonded` leaves, `who`'s draw stake at the start
/// of block `height + expertise_delay`: a stake change counts in draws only once no seed
/// known when it was chosen can still draw. Changes due at one height share an entry; the
/// list never exceeds [`MAX_PENDING_STAKE`] (a change past it joins the latest entry,
/// which then counts at the later height).
fn defer_stake(st: &mut State, who: AccountId, height: u64, bonded: Amount, unbonded: Amount) {
    let at = height.saturating_add(st.params.expertise_delay);
    let Some(au) = st.auditors.get_mut(&who) else {
        return;
    };
    let full = au.pending_stake.len() >= MAX_PENDING_STAKE;
    match au.pending_stake.last_mut() {
        Some(last) if last.at == at || full => {
            last.at = last.at.max(at);
            last.bonded = last.bonded.saturating_add(bonded);
            last.unbonded = last.unbonded.saturating_add(unbonded);
        }
        _ => au.pending_stake.push(PendingStake {
            at,
            bonded,
            unbonded,
        }),
    }
    st.standing_due.entry(at).or_default().insert(who);
}

/// Makes `who`'s stake changes due by `height` count in its draw stake; returns the new
/// draw stake when any did.
fn apply_stake(st: &mut State, who: &AccountId, height: u64) -> Option<u64> {
    let au = st.auditors.get_mut(who)?;
    let due = au
        .pending_stake
        .iter()
        .take_while(|p| p.at <= height)
        .count();
    if due == 0 {
        return None;
    }
    for p in au.pending_stake.drain(..due) {
        au.draw_stake = au
            .draw_stake
            .saturating_add(p.bonded)
            .saturating_sub(p.unbonded);
    }
    sync_draw(st, who);
    reindex(st, who);
    st.auditors.get(who).map(|a| a.draw_stake)
}

/// Keeps `who`'s draw stake within what it has at risk (bonded and unbonding), and equal
/// to its bonded stake once nothing is pending.
fn sync_draw(st: &mut State, who: &AccountId) {
    let Some(a) = st.accounts.get(who) else {
        return;
    };
    let stake = a.stake;
    let at_risk = a
        .unbonding
        .iter()
        .fold(stake, |s, u| s.saturating_add(u.amount));
    if let Some(au) = st.auditors.get_mut(who) {
        au.draw_stake = if au.pending_stake.is_empty() {
            stake
        } else {
            au.draw_stake.min(at_risk)
        };
    }
}

/// Marks `who`'s entry for the removal check once its bonded stake is zero: after its
/// unbondings free, and [`crate::Params::auditor_retention`] blocks more.
fn schedule_retire(st: &mut State, who: &AccountId, height: u64) {
    let Some(a) = st.accounts.get(who) else {
        return;
    };
    if a.stake > 0 {
        return;
    }
    let frees = a.unbonding.iter().map(|u| u.release_at).max().unwrap_or(0);
    let at = height
        .max(frees)
        .saturating_add(st.params.auditor_retention);
    let Some(au) = st.auditors.get_mut(who) else {
        return;
    };
    if au.retire_at.is_none() {
        au.retire_at = Some(at);
        st.standing_due.entry(at).or_default().insert(*who);
    }
}

/// At its removal check: removes `who`'s entry if it has no bonded stake, nothing pending,
/// no seat in a session not final, and only freed unbondings (paid to its balance, the
/// amount returned as `Some(Some(paid))`), leaving its record in [`Account::past`]. Bonded
/// again, it is no longer marked; held back by anything else, it is checked again a
/// retention later (both `Some(None)`: the entry changed). `None` when no check was due.
fn retire_if_due(st: &mut State, who: &AccountId, height: u64) -> Option<Option<u64>> {
    let au = st.auditors.get(who)?;
    if au.retire_at.is_none_or(|at| at > height) {
        return None;
    }
    let acct = st.accounts.get(who).cloned().unwrap_or_default();
    let seated = st.seated.get(who).is_some_and(|s| !s.is_empty());
    let waiting = !au.pending_stake.is_empty()
        || au.pending_pause.is_some()
        || au.pending_expertise.is_some()
        || seated
        || acct.unbonding.iter().any(|u| u.release_at > height);
    if acct.stake > 0 {
        if let Some(au) = st.auditors.get_mut(who) {
            au.retire_at = None;
        }
        return Some(None);
    }
    if waiting {
        let at = height.saturating_add(st.params.auditor_retention.max(1));
        if let Some(au) = st.auditors.get_mut(who) {
            au.retire_at = Some(at);
        }
        st.standing_due.entry(at).or_default().insert(*who);
        return Some(None);
    }
    let au = st.auditors.remove(who)?;
    let paid = acct
        .unbonding
        .iter()
        .fold(0u64, |s, u| s.saturating_add(u.amount));
    let a = st.accounts.entry(*who).or_default();
    a.balance = a.balance.saturating_add(paid);
    a.unbonding.clear();
    a.past = Some(PastAuditor {
        reputation: au.reputation,
        flagged: au.flagged,
        exited: au.exiting,
    });
    reindex(st, who);
    Some(Some(paid))
}

/// A freshly registered auditor: initial reputation, active, no history.
pub(crate) fn new_auditor(
    params: &crate::params::Params,
    tier: Tier,
    expertise: Vec<String>,
    sealing_key: SealingPublicKey,
) -> Auditor {
    Auditor {
        tier,
        expertise,
        sealing_key,
        reputation: params.initial_reputation,
        active: true,
        earned: 0,
        slashed: 0,
        agreed: 0,
        disagreed: 0,
        votes: 0,
        approvals: 0,
        abstentions: 0,
        honeypots: HoneypotStats::default(),
        flagged: false,
        exiting: false,
        pending_expertise: None,
        paused: false,
        pending_pause: None,
        draw_stake: 0,
        pending_stake: Vec::new(),
        retire_at: None,
    }
}

/// Why `who` may not bond, if so: an exiting auditor is never drawn again, so its bond
/// would lock money in an account no draw can use while still adding to its voting power.
pub fn bond_refused(st: &State, who: &AccountId) -> Option<TxError> {
    if st
        .accounts
        .get(who)
        .and_then(|a| a.past)
        .is_some_and(|p| p.exited)
    {
        return Some(TxError::ExitedForGood);
    }
    st.auditors
        .get(who)
        .is_some_and(|au| au.exiting)
        .then_some(TxError::AlreadyExiting)
}

/// `Call::Bond`: the amount is bonded (slashable, voting power) at once, and joins the
/// auditor's draw stake `expertise_delay` blocks later ([`Auditor::draw_stake`]); what it
/// had bonded before keeps counting, so topping up never takes an auditor out of draws.
pub(crate) fn bond(
    st: &mut State,
    who: AccountId,
    amount: Amount,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    if let Some(e) = bond_refused(st, &who) {
        return Err(e);
    }
    let acct = st.accounts.get(&who).cloned().unwrap_or_default();
    let balance = acct
        .balance
        .checked_sub(amount)
        .ok_or(TxError::InsufficientBalance {
            have: acct.balance,
            need: amount,
        })?;
    let stake = acct.stake.checked_add(amount).ok_or(TxError::Overflow)?;
    let a = st.accounts.entry(who).or_default();
    a.balance = balance;
    a.stake = stake;
    // Topping up stake re-admits an auditor that fell below the minimum, unless it was
    // flagged as a rubber-stamper or is exiting (an exit is for good).
    let min = st.auditors.get(&who).map(|au| st.params.min_stake(au.tier));
    if let (Some(au), Some(min)) = (st.auditors.get_mut(&who), min)
        && !au.active
        && !au.flagged
        && !au.exiting
        && stake >= min
    {
        au.active = true;
    }
    if let Some(au) = st.auditors.get_mut(&who) {
        au.retire_at = None;
    }
    defer_stake(st, who, height, amount, 0);
    events.push(Event::Bonded {
        account: who,
        amount,
    });
    reindex(st, &who);
    Ok(())
}

/// `Call::Unbond`: the amount leaves the bonded stake (and voting power) at once, into an
/// unbonding that frees after `unbond_delay`; it leaves the auditor's draw stake only
/// `expertise_delay` blocks later, slashable meanwhile as any unbonding is. (Were it to
/// leave at once, an auditor could move every ticket of a draw whose seed its proposer
/// knows.) Once nothing is bonded, the entry is marked for its removal check.
pub(crate) fn unbond(
    st: &mut State,
    who: AccountId,
    amount: Amount,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let delay = st.params.unbond_delay;
    let acct: &Account = st.accounts.get(&who).ok_or(TxError::InsufficientStake {
        have: 0,
        need: amount,
    })?;
    let stake = acct
        .stake
        .checked_sub(amount)
        .ok_or(TxError::InsufficientStake {
            have: acct.stake,
            need: amount,
        })?;
    let release_at = height.saturating_add(delay);
    let a = st.accounts.entry(who).or_default();
    a.stake = stake;
    add_unbonding(&mut a.unbonding, Unbonding { release_at, amount });
    // It leaves the draw stake only after the delay; until then it is at risk, unbonding.
    defer_stake(st, who, height, 0, amount);
    schedule_retire(st, &who, height);
    reindex(st, &who);
    events.push(Event::UnbondStarted {
        account: who,
        amount,
        release_at,
    });
    Ok(())
}

/// Adds an unbonding, merging it into the latest one when the account already has
/// [`MAX_UNBONDINGS`] pending (the merged entry frees at the later height): an auditor can
/// always unbond and exit, and the list stays bounded.
fn add_unbonding(list: &mut Vec<Unbonding>, new: Unbonding) {
    if list.len() >= MAX_UNBONDINGS
        && let Some(last) = list.last_mut()
    {
        last.amount = last.amount.saturating_add(new.amount);
        last.release_at = last.release_at.max(new.release_at);
        return;
    }
    list.push(new);
}

/// A session not yet final in which `who` holds a seat, of any round: a live one, or a
/// decided one still in its appeal window (an appeal that overturns a verdict slashes the
/// seats that decided it).
pub fn seat_held(st: &State, who: &AccountId) -> Option<Hash> {
    st.seated.get(who)?.iter().next().copied()
}

/// The stake `who` must keep within a slash's reach: [`crate::Params::max_session_loss`]
/// for each session not yet final in which it holds a seat, less what it has lost in
/// each already (no session can take more than that bound).
pub fn held_stake(st: &State, who: &AccountId) -> Amount {
    let cap = st.params.max_session_loss;
    st.seated.get(who).map_or(0, |sessions| {
        sessions
            .iter()
            .map(|id| {
                let lost = st
                    .sessions
                    .get(id)
                    .or_else(|| st.appealable.get(id))
                    .and_then(|s| s.losses.get(who))
                    .copied()
                    .unwrap_or(0);
                cap.saturating_sub(lost)
            })
            .fold(0u64, u64::saturating_add)
    })
}

/// What `who` could withdraw in a block at `height`, or why it cannot: the unbondings
/// released by `height`, less what must stay within a slash's reach for the seats it
/// holds in sessions not final yet ([`held_stake`], covered first by its bonded stake and
/// then by what is still unbonding).
pub fn withdrawable(st: &State, who: &AccountId, height: u64) -> Result<Amount, TxError> {
    let acct = st.accounts.get(who).ok_or(TxError::NothingToWithdraw)?;
    let frees_at = acct
        .unbonding
        .iter()
        .map(|u| u.release_at)
        .min()
        .ok_or(TxError::NothingToWithdraw)?;
    if frees_at > height {
        return Err(TxError::NotYetWithdrawable { frees_at });
    }
    let released = acct
        .unbonding
        .iter()
        .filter(|u| u.release_at <= height)
        .try_fold(0u64, |s, u| s.checked_add(u.amount))
        .ok_or(TxError::Overflow)?;
    let still = acct
        .unbonding
        .iter()
        .filter(|u| u.release_at > height)
        .fold(acct.stake, |s, u| s.saturating_add(u.amount));
    let short = held_stake(st, who).saturating_sub(still);
    let amount = released.saturating_sub(short);
    if amount == 0 {
        return Err(match seat_held(st, who) {
            Some(session) => TxError::SeatHeld { session },
            None => TxError::NothingToWithdraw,
        });
    }
    Ok(amount)
}

pub(crate) fn withdraw(
    st: &mut State,
    who: AccountId,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let amount = withdrawable(st, &who, height)?;
    let acct = st.accounts.get(&who).ok_or(TxError::NothingToWithdraw)?;
    let balance = acct.balance.checked_add(amount).ok_or(TxError::Overflow)?;
    // Take the released unbondings, oldest first; what must stay held stays in the last
    // one taken from, still released.
    let mut left = amount;
    let mut unbonding = Vec::with_capacity(acct.unbonding.len());
    for u in &acct.unbonding {
        if u.release_at > height || left == 0 {
            unbonding.push(u.clone());
            continue;
        }
        let take = left.min(u.amount);
        left = left.saturating_sub(take);
        if u.amount > take {
            unbonding.push(Unbonding {
                release_at: u.release_at,
                amount: u.amount.saturating_sub(take),
            });
        }
    }
    let a = st.accounts.entry(who).or_default();
    a.balance = balance;
    a.unbonding = unbonding;
    // Only a network whose `unbond_delay` is shorter than `expertise_delay` frees stake
    // that still counts in draws: it leaves them now.
    sync_draw(st, &who);
    reindex(st, &who);
    events.push(Event::Withdrawn {
        account: who,
        amount,
    });
    Ok(())
}

/// Why `who` cannot exit, if so: it must be a registered auditor that is not exiting
/// already. (A full list of unbondings never stops it: the new one merges into the last.)
pub fn exit_refused(st: &State, who: &AccountId) -> Option<TxError> {
    let Some(au) = st.auditors.get(who) else {
        return Some(TxError::NotAnAuditor);
    };
    if au.exiting {
        return Some(TxError::AlreadyExiting);
    }
    None
}

/// `Call::Exit`: unbonds all bonded stake and marks the auditor as exiting, so that it is
/// never drawn again. Its seats stay its duty: a slash for one of them takes from the
/// unbonding, and it cannot withdraw while it holds one.
pub(crate) fn exit(
    st: &mut State,
    who: AccountId,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    if let Some(e) = exit_refused(st, &who) {
        return Err(e);
    }
    let stake = st.accounts.get(&who).map_or(0, |a| a.stake);
    if stake > 0 {
        unbond(st, who, stake, height, events)?;
    }
    if let Some(au) = st.auditors.get_mut(&who) {
        au.exiting = true;
    }
    reindex(st, &who);
    events.push(Event::AuditorExiting { account: who });
    Ok(())
}

/// Takes up to `amount` from an account's stake, then from its pending unbondings (newest
/// first, so unbonding cannot dodge a slash), burns it and returns what was taken.
pub(crate) fn slash(st: &mut State, who: &AccountId, amount: Amount) -> Amount {
    let Some(a) = st.accounts.get_mut(who) else {
        return 0;
    };
    let from_stake = amount.min(a.stake);
    a.stake = a.stake.saturating_sub(from_stake);
    let mut taken = from_stake;
    for u in a.unbonding.iter_mut().rev() {
        let want = amount.saturating_sub(taken);
        if want == 0 {
            break;
        }
        let t = want.min(u.amount);
        u.amount = u.amount.saturating_sub(t);
        taken = taken.saturating_add(t);
    }
    a.unbonding.retain(|u| u.amount > 0);
    st.burned = st.burned.saturating_add(taken);
    if let Some(au) = st.auditors.get_mut(who) {
        au.slashed = au.slashed.saturating_add(taken);
        au.draw_stake = au.draw_stake.saturating_sub(taken);
    }
    sync_draw(st, who);
    let height = st.height;
    schedule_retire(st, who, height);
    reindex(st, who);
    taken
}

/// Gives back `amount` an earlier [`slash`] of `who` burned, to its stake (an appeal
/// decided the segment the way it had judged). Returns what was given back: at most what
/// is burned.
pub(crate) fn restore(st: &mut State, who: &AccountId, amount: Amount) -> Amount {
    let amount = amount.min(st.burned);
    if amount == 0 {
        return 0;
    }
    st.burned = st.burned.saturating_sub(amount);
    let a = st.accounts.entry(*who).or_default();
    a.stake = a.stake.saturating_add(amount);
    if let Some(au) = st.auditors.get_mut(who) {
        au.slashed = au.slashed.saturating_sub(amount);
        au.draw_stake = au.draw_stake.saturating_add(amount);
        au.retire_at = None;
    }
    sync_draw(st, who);
    reindex(st, who);
    amount
}

/// Takes up to `amount` from an account's balance (what it holds, if less); returns what
/// was taken.
pub(crate) fn debit_up_to(st: &mut State, who: &AccountId, amount: Amount) -> Amount {
    let Some(a) = st.accounts.get_mut(who) else {
        return 0;
    };
    let taken = amount.min(a.balance);
    a.balance = a.balance.saturating_sub(taken);
    taken
}

/// Pays `amount` to an account's balance.
pub(crate) fn credit(st: &mut State, who: &AccountId, amount: Amount) {
    let a = st.accounts.entry(*who).or_default();
    a.balance = a.balance.saturating_add(amount);
}
