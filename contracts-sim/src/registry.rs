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
    state::{Account, Auditor, HoneypotStats, MAX_UNBONDINGS, State, Unbonding},
};

pub(crate) fn transfer(
    st: &mut State,
    from: AccountId,
    to: AccountId,
    amount: Amount,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let have = st.accounts.get(&from).map_or(0, |a| a.balance);
    let left = have
        .checked_sub(amount)
        .ok_or(TxError::InsufficientBalance { have, need: amount })?;
    if from != to {
        let to_balance = st.accounts.get(&to).map_or(0, |a| a.balance);
        let new_to = to_balance.checked_add(amount).ok_or(TxError::Overflow)?;
        st.accounts.entry(from).or_default().balance = left;
        st.accounts.entry(to).or_default().balance = new_to;
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
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    if st.auditors.contains_key(&who) {
        return Err(TxError::AlreadyRegistered);
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
    let mut expertise = expertise.to_vec();
    expertise.sort();
    expertise.dedup();
    let auditor = new_auditor(&st.params, tier, expertise, sealing_key);
    st.auditors.insert(who, auditor);
    reindex(st, &who);
    events.push(Event::AuditorRegistered { account: who, tier });
    events.push(Event::Bonded {
        account: who,
        amount: stake,
    });
    Ok(())
}

/// Whether `who` can be drawn for a seat: a registered auditor, active, not flagged, not
/// exiting, with bonded stake of at least its tier's minimum (and above zero). Unbonding
/// stake has left `stake`, so it never counts.
pub(crate) fn drawable(st: &State, who: &AccountId) -> Option<Tier> {
    let au = st.auditors.get(who)?;
    let stake = st.accounts.get(who).map_or(0, |a| a.stake);
    (au.active && !au.flagged && !au.exiting && stake > 0 && stake >= st.params.min_stake(au.tier))
        .then_some(au.tier)
}

/// Puts `who` in, or takes it out of, the per-tier index of drawable auditors.
pub(crate) fn reindex(st: &mut State, who: &AccountId) {
    let now = drawable(st, who);
    for (tier, set) in Tier::ALL.iter().zip(st.eligible.iter_mut()) {
        if now == Some(*tier) {
            set.insert(*who);
        } else {
            set.remove(who);
        }
    }
}

/// Rebuilds the whole index (genesis, restore).
pub(crate) fn reindex_all(st: &mut State) {
    st.eligible = Default::default();
    let ids: Vec<AccountId> = st.auditors.keys().copied().collect();
    for id in ids {
        reindex(st, &id);
    }
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
    }
}

pub(crate) fn bond(
    st: &mut State,
    who: AccountId,
    amount: Amount,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
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
    reindex(st, &who);
    events.push(Event::Bonded {
        account: who,
        amount,
    });
    Ok(())
}

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
    if acct.unbonding.len() >= MAX_UNBONDINGS {
        return Err(TxError::TooManyUnbondings);
    }
    let release_at = height.saturating_add(delay);
    let a = st.accounts.entry(who).or_default();
    a.stake = stake;
    a.unbonding.push(Unbonding { release_at, amount });
    reindex(st, &who);
    events.push(Event::UnbondStarted {
        account: who,
        amount,
        release_at,
    });
    Ok(())
}

/// The first session not final in which `who` holds a seat, of any round: a live one, or
/// a decided one still in its appeal window (an appeal that overturns a verdict slashes
/// the seats that decided it, so their stake must stay where the slash can reach it).
pub fn seat_held(st: &State, who: &AccountId) -> Option<Hash> {
    st.sessions
        .iter()
        .chain(&st.appealable)
        .find_map(|(id, s)| {
            s.segments
                .iter()
                .any(|g| g.seats.iter().any(|x| x.account == *who))
                .then_some(*id)
        })
}

/// What `who` could withdraw in a block at `height`, or why it cannot: a seat in a session
/// not decided yet keeps all its stake (bonded or unbonding) where a slash can reach it;
/// then something must be released by `height`.
pub fn withdrawable(st: &State, who: &AccountId, height: u64) -> Result<Amount, TxError> {
    if let Some(session) = seat_held(st, who) {
        return Err(TxError::SeatHeld { session });
    }
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
    acct.unbonding
        .iter()
        .filter(|u| u.release_at <= height)
        .try_fold(0u64, |s, u| s.checked_add(u.amount))
        .ok_or(TxError::Overflow)
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
    let pending: Vec<Unbonding> = acct
        .unbonding
        .iter()
        .filter(|u| u.release_at > height)
        .cloned()
        .collect();
    let a = st.accounts.entry(who).or_default();
    a.balance = balance;
    a.unbonding = pending;
    events.push(Event::Withdrawn {
        account: who,
        amount,
    });
    Ok(())
}

/// Why `who` cannot exit, if so: it must be a registered auditor that is not exiting
/// already, with room for one more unbonding when it has stake bonded.
pub fn exit_refused(st: &State, who: &AccountId) -> Option<TxError> {
    let Some(au) = st.auditors.get(who) else {
        return Some(TxError::NotAnAuditor);
    };
    if au.exiting {
        return Some(TxError::AlreadyExiting);
    }
    let acct = st.accounts.get(who);
    if acct.is_some_and(|a| a.stake > 0 && a.unbonding.len() >= MAX_UNBONDINGS) {
        return Some(TxError::TooManyUnbondings);
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
    }
    reindex(st, who);
    taken
}

/// Pays `amount` to an account's balance.
pub(crate) fn credit(st: &mut State, who: &AccountId, amount: Amount) {
    let a = st.accounts.entry(*who).or_default();
    a.balance = a.balance.saturating_add(amount);
}
