//! `appeal`: this node appeals decided segments of a session from its own account, through
//! its API (`POST /v1/sessions/{id}/appeals`, with the operator token: the node signs with
//! its own outbox, so its nonces never race its seats' transactions).
//!
//! It prints the bond escrowed and the appeal's round, waits until a block includes the
//! appeal, and with `--wait` follows the session until the appeal round is decided: each
//! appealed segment's previous and new verdict, overturned or upheld, the slashes, the
//! appellant's refund and the new appeal window. A refusal (the node's, the contract's)
//! prints its reason and exits with code 1.
//!
//! The lines that describe finality and appeal rounds ([`finality_line`], [`round_line`])
//! are shared with `query`.

use std::time::{Duration, Instant};

use clap::Args;
use trust_contracts::{AppealResult, AppealRound, LocalVerdict, Outcome};
use trust_protocol::{AccountId, Hash};

use super::{
    CliError, CliResult,
    remote::{NodeAddr, api_error, api_token, runtime},
};
use crate::api::{
    client::{self, Client},
    views::{AppealBody, FinalityView, SessionStatus, SessionView, TxStatus},
};

/// `appeal`: appeal decided segments of a session.
#[derive(Debug, Args)]
pub struct AppealArgs {
    /// The session id (64 hex characters).
    pub session: String,
    /// The segments to appeal, by their index in `trust-node query SESSION`
    /// (comma-separated, e.g. `--segments 3,4`).
    #[arg(long, value_delimiter = ',', required = true, num_args = 1..)]
    pub segments: Vec<u16>,
    /// Follow the session until the appeal round is decided and print what it changed.
    #[arg(long)]
    pub wait: bool,
    /// Seconds to wait for the appeal's inclusion, and with `--wait` for its decision.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
    /// The node's operator token (an appeal escrows the node's funds). Default: read from
    /// the home's token file.
    #[arg(long, env = "TRUST_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// The node to send it to.
    #[command(flatten)]
    pub addr: NodeAddr,
}

/// Runs `appeal`.
pub fn run(a: AppealArgs) -> CliResult {
    let sid = Hash::from_hex(&a.session).map_err(|_| {
        CliError::usage(format!(
            "session id must be 64 hex characters, got {:?}",
            a.session
        ))
    })?;
    let token = api_token(a.api_token.as_deref(), &a.addr)?;
    let api = Client::new(a.addr.resolve()?);
    let rt = runtime()?;
    let deadline = Instant::now() + Duration::from_secs(a.timeout_secs);
    let body = AppealBody {
        segments: a.segments.clone(),
    };
    // The appellant is the node's account: its balance before the bond is escrowed.
    let balance_before = rt
        .block_on(api.status())
        .ok()
        .and_then(|s| rt.block_on(api.account(&s.node_id)).ok())
        .map(|v| v.balance);
    let accepted = match rt.block_on(api.appeal(&sid, &body, token.as_deref())) {
        Ok(r) => r,
        Err(client::ClientError::Api {
            status: 404 | 422 | 400,
            message,
            ..
        }) => return Err(CliError::refused(format!("refused: {message}"))),
        Err(e) => return Err(api_error(e)),
    };
    outln!(
        "appeal of session {sid} by {}: segments {}; bond {} TRUST escrowed; judged in round {}",
        accepted.appellant,
        list(&accepted.segments),
        accepted.bond,
        accepted.round
    );
    let Some(tx) = accepted.tx else {
        outln!(
            "the Appeal waits behind this node's earlier transactions; `trust-node query {sid}` shows when it is open"
        );
        return Ok(());
    };
    outln!("submitted {tx}");
    let included = loop {
        match rt.block_on(api.tx_location(&tx)) {
            Ok(loc) if loc.status == TxStatus::Included => break loc.height.unwrap_or(0),
            Ok(_) => {}
            Err(client::ClientError::Api { status: 404, .. }) => {
                return Err(CliError::failed(format!(
                    "refused: the Appeal {tx} left the mempool without a block including it \
                     (the contract refused it when a block was built; the window may have closed)"
                )));
            }
            Err(e) => return Err(api_error(e)),
        }
        pause(&deadline, "the appeal's inclusion")?;
    };
    outln!(
        "opened at block #{included}: fresh seats (2k + 1 per segment at least, more for a verdict many reached) are drawn at the start of the next block, from the state before it"
    );
    if !a.wait {
        outln!("`trust-node query {sid}` shows the round; `--wait` follows it to its decision");
        return Ok(());
    }
    let mut seen_open = false;
    let (view, round) = loop {
        let v = rt.block_on(api.session(&sid)).map_err(api_error)?;
        if let Some(o) = &v.outcome {
            if let Some(r) = o.appeals.rounds.iter().find(|r| r.round == accepted.round) {
                let r = r.clone();
                break (v, r);
            }
            if o.appeals.open == Some(accepted.round) {
                seen_open = true;
            } else if seen_open && v.status == SessionStatus::Decided {
                return Err(CliError::failed(
                    "the appeal was cancelled (too few fresh auditors when its seats were drawn); its bond went back",
                ));
            }
        }
        pause(&deadline, "the appeal round's decision")?;
    };
    let Some(o) = &view.outcome else {
        return Err(CliError::failed("the node returned no outcome"));
    };
    outln!(
        "decided at block #{}: trace {:?} -> {:?}",
        round.decided_at,
        round.trace_before,
        round.trace_after
    );
    for s in &round.segments {
        outln!("  {}", segment_text(o, &round, s));
    }
    if let (Some(before), Ok(after)) = (
        balance_before,
        rt.block_on(api.account(&accepted.appellant)),
    ) {
        let back: u64 = round.segments.iter().map(|s| s.refunded).sum();
        outln!(
            "appellant   balance {before} -> {} TRUST (bond {} escrowed, {back} back)",
            after.balance,
            accepted.bond
        );
    }
    if let Some(f) = &view.finality {
        outln!("{}", finality_line(f, &sid));
    }
    Ok(())
}

fn pause(deadline: &Instant, what: &str) -> CliResult {
    if Instant::now() > *deadline {
        return Err(CliError::failed(format!(
            "gave up waiting for {what}; `trust-node query SESSION` shows where it stands"
        )));
    }
    std::thread::sleep(Duration::from_millis(250));
    Ok(())
}

fn list(segments: &[u16]) -> String {
    segments
        .iter()
        .map(|s| format!("#{s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn short(a: &AccountId) -> String {
    let hex = a.to_hex();
    hex.get(..8).unwrap_or(&hex).to_string()
}

/// The `query` line of a decided session's finality: `final       at block H`,
/// `appealable  until block H (trust-node appeal SESSION --segments ...)` or `appealing
/// round r`.
pub(super) fn finality_line(f: &FinalityView, session: &Hash) -> String {
    match f {
        FinalityView::Final { at } => format!("final       at block {at}"),
        FinalityView::Appealable { until } => {
            format!("appealable  until block {until} (trust-node appeal {session} --segments ...)")
        }
        FinalityView::Appealing { round } => format!("appealing   round {round}"),
    }
}

/// Seats of the round that had decided `s` before the appeal and voted with that
/// verdict: the ones an overturn slashes (the latest earlier round with counted votes).
fn majority_seats(o: &Outcome, round: &AppealRound, s: &trust_contracts::AppealedSegment) -> usize {
    let Some(seg) = o.segments.get(usize::from(s.segment)) else {
        return 0;
    };
    let before = seg
        .votes_cast
        .iter()
        .filter(|v| v.round < round.round && v.counted)
        .map(|v| v.round)
        .max();
    let was_valid = s.previous == LocalVerdict::Valid;
    seg.votes_cast
        .iter()
        .filter(|v| Some(v.round) == before && v.counted)
        .filter(|v| !v.vote.is_abstain() && v.vote.is_valid() == was_valid)
        .count()
}

/// One appealed segment of a decided round: `#3 Valid -> Invalid overturned, 1 seat
/// slashed 54, appellant refunded 60 + 30`.
pub(super) fn segment_text(
    o: &Outcome,
    round: &AppealRound,
    s: &trust_contracts::AppealedSegment,
) -> String {
    let share = u64::try_from(round.segments.len())
        .ok()
        .and_then(|n| round.bond.checked_div(n))
        .unwrap_or(0);
    let head = format!("#{} {:?} -> {:?}", s.segment, s.previous, s.verdict);
    match s.result {
        AppealResult::Overturned => {
            let n = majority_seats(o, round, s);
            let seats = if n == 1 { "seat" } else { "seats" };
            // An overturn's slashes wait for finality and fall only if it stands; one
            // decided too close to the horizon for an answer slashes nobody.
            let slashes = if s.pending.is_some() {
                format!("{n} {seats} to be slashed at finality if the overturn stands")
            } else if s.slashed == 0 {
                "nobody slashed".to_string()
            } else {
                format!("{n} {seats} slashed {}", s.slashed)
            };
            format!(
                "{head} overturned, {slashes}, appellant refunded {} + {}{}",
                share.min(s.refunded),
                s.refunded.saturating_sub(share),
                paid(s.paid)
            )
        }
        AppealResult::Upheld => format!(
            "{head} upheld, bond {share} paid to the appeal seats ({} paid, {} burned)",
            s.paid, s.burned
        ),
        AppealResult::Undecided => format!(
            "{head} undecided: the verdict stands{}",
            if s.refunded > 0 {
                format!(", appellant refunded {}", s.refunded)
            } else {
                format!(", bond paid to the seats that judged ({})", s.paid)
            }
        ),
        AppealResult::Starved => format!(
            "{head} starved: the provider did not key the appeal seats{}{}",
            if s.previous == trust_contracts::LocalVerdict::Valid {
                ", so its Valid verdict no longer stands"
            } else {
                ", the verdict stands"
            },
            if s.refunded > 0 {
                format!(", appellant refunded {}", s.refunded)
            } else if round.appellant == o.provider {
                ", the provider's own bond burned".to_string()
            } else {
                // A stranger's bond: it repays the provider for the starved seats first.
                format!(
                    ", the appellant's bond forfeit (it repays the provider for the starved seats; {} burned)",
                    s.burned
                )
            }
        ),
    }
}

fn paid(n: u64) -> String {
    if n > 0 {
        format!(", appeal seats paid {n}")
    } else {
        String::new()
    }
}

/// The `query` line of appeal round number `n` (from 1): `appeal 1 (round 2, by <account>,
/// block H): #3 Valid -> Invalid overturned, 3 seats slashed 54, appellant refunded 60 +
/// 30`.
pub(super) fn round_line(o: &Outcome, n: usize, round: &AppealRound) -> String {
    let segments: Vec<String> = round
        .segments
        .iter()
        .map(|s| segment_text(o, round, s))
        .collect();
    let trace = if round.trace_before == round.trace_after {
        String::new()
    } else {
        format!(
            "; trace {:?} -> {:?}",
            round.trace_before, round.trace_after
        )
    };
    format!(
        "appeal {n} (round {}, by {}, block {}): {}{trace}",
        round.round,
        short(&round.appellant),
        round.decided_at,
        segments.join("; ")
    )
}

/// The `query` lines of a decided session's appeals: each decided round, then the one
/// being judged.
pub(super) fn appeal_lines(v: &SessionView) -> Vec<String> {
    let Some(o) = &v.outcome else {
        return Vec::new();
    };
    let mut out: Vec<String> = o
        .appeals
        .rounds
        .iter()
        .enumerate()
        .map(|(i, r)| round_line(o, i.saturating_add(1), r))
        .collect();
    if let Some(r) = o.appeals.open {
        out.push(format!(
            "appeal {} (round {r}): being judged",
            o.appeals.rounds.len().saturating_add(1)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use trust_contracts::{AppealedSegment, PendingIncoherence, TraceVerdict, VoteCounts};
    use trust_protocol::{Keypair, tx::Tier};

    use super::*;

    fn appealed(result: AppealResult) -> AppealedSegment {
        AppealedSegment {
            segment: 0,
            previous: LocalVerdict::Valid,
            verdict: LocalVerdict::Invalid,
            result,
            tier: Tier::Computer,
            k: 7,
            q: 5,
            votes: VoteCounts::default(),
            slashed: 0,
            paid: 0,
            refunded: 0,
            burned: 40,
            pending: None,
        }
    }

    fn round(appellant: AccountId, s: AppealedSegment) -> AppealRound {
        AppealRound {
            round: 2,
            appellant,
            appellants: vec![appellant],
            opened_at: 10,
            decided_at: 20,
            bond: 60,
            segments: vec![s],
            trace_before: TraceVerdict::Pass,
            trace_after: TraceVerdict::Fail,
        }
    }

    /// What a line says about money follows who paid it: an overturn's slashes are owed
    /// until finality (not "slashed 0"), and a starved appeal burns the provider's own
    /// bond only when the provider filed it; a stranger's bond is forfeit and repays the
    /// provider first.
    #[test]
    fn an_appeal_line_says_whose_money_moved_and_when() {
        let provider = Keypair::from_label("appeal-line-provider").public();
        let stranger = Keypair::from_label("appeal-line-stranger").public();
        let seats = [0, 1, 2].map(|i| Keypair::from_label(&format!("appeal-line-{i}")).public());
        let o = super::super::bench_chain::finished(provider, seats);

        let mut owed = appealed(AppealResult::Overturned);
        owed.pending = Some(PendingIncoherence {
            overturned: 0,
            backers: vec![stranger],
        });
        let line = segment_text(&o, &round(stranger, owed.clone()), &owed);
        assert!(
            line.contains("to be slashed at finality if the overturn stands"),
            "{line}"
        );
        assert!(!line.contains("slashed 0"), "{line}");

        let mut taken = appealed(AppealResult::Overturned);
        taken.slashed = 54;
        let line = segment_text(&o, &round(stranger, taken.clone()), &taken);
        assert!(line.contains("slashed 54"), "{line}");

        let starved = appealed(AppealResult::Starved);
        let line = segment_text(&o, &round(provider, starved.clone()), &starved);
        assert!(line.contains("the provider's own bond burned"), "{line}");
        let line = segment_text(&o, &round(stranger, starved.clone()), &starved);
        assert!(!line.contains("provider's own bond"), "{line}");
        assert!(
            line.contains("the appellant's bond forfeit") && line.contains("40 burned"),
            "{line}"
        );
    }
}
