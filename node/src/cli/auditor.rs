//! `auditor`: an auditor's life from registration to withdrawal, through its node's API.
//!
//! `register`, `bond`, `unbond`, `exit` and `withdraw` sign a transaction with the home's
//! account key, submit it to the node, wait until a block includes it and print what
//! changed; a transaction the node or the contract refuses prints the contract's reason
//! and exits with code 1. `status` prints the account's standing, or with `--json` the
//! node's `GET /v1/auditors/{id}` answer as it is.

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use trust_protocol::{
    AccountId, Signed,
    tx::{Call, Tier, Tx},
};

use super::{
    CliError, CliResult,
    keys::expand_home,
    node::{NodeAddr, api_error, reply_json, runtime},
};
use crate::{
    api::{
        client::{self, Client},
        views::{AuditorView, TxStatus},
    },
    config, keys,
};

/// `auditor`: auditor account actions.
#[derive(Debug, Args)]
pub struct AuditorArgs {
    #[command(subcommand)]
    command: AuditorCommand,
}

#[derive(Debug, Subcommand)]
enum AuditorCommand {
    /// Register this node's account as an auditor of a tier, bonding its stake in the same
    /// transaction (a registered auditor only bonds more), signed with the home's account
    /// key and sent to its node.
    Register(RegisterArgs),
    /// Show an auditor's standing: bonded stake, unbonding stake and the block it frees
    /// at, whether a withdrawal would apply now, tier, domains, reputation, abstention
    /// rate, rewards and slashes to date, and the seats it holds in sessions still open.
    Status(StatusArgs),
    /// Bond more of the balance as stake: more voting weight, more at stake. An exiting
    /// auditor stays out of the draws whatever it bonds.
    Bond(AmountArgs),
    /// Start unbonding stake: it leaves the draws' weight at once and becomes withdrawable
    /// after the network's unbonding delay; until withdrawn it can still be slashed for
    /// the seats already held. Below the tier's minimum the auditor is drawn no more.
    Unbond(AmountArgs),
    /// Leave the network: unbond all bonded stake and never be drawn again (bonding does
    /// not re-admit the account, and it cannot register again; a new account can). Seats
    /// already held stay this auditor's duty: a no-show on one is slashed from the
    /// unbonding stake.
    Exit(SendArgs),
    /// Move unbonded stake whose delay has passed back to the balance. What the seats it
    /// holds in sessions not final yet may still cost (the network's `max_session_loss`
    /// per session) stays behind; nothing frees before the earliest unbonding (the error
    /// names the block).
    Withdraw(SendArgs),
    /// Replace this auditor's expertise domains (repeat --expertise). They count in draws
    /// only after the network's `expertise_delay` blocks, so nobody declares a domain into
    /// a draw whose seed is already known; a later declaration replaces a pending one.
    DeclareExpertise(DeclareArgs),
}

#[derive(Debug, Args)]
struct DeclareArgs {
    /// An expertise domain (repeatable), e.g. --expertise math --expertise medicine.
    #[arg(long, required = true)]
    expertise: Vec<String>,
    #[command(flatten)]
    send: SendArgs,
}

#[derive(Debug, Args)]
struct RegisterArgs {
    /// computer, llm or human.
    #[arg(long)]
    tier: String,
    /// Stake to bond (a registration must bond at least the tier's minimum in the genesis
    /// parameters, or the contract refuses it).
    #[arg(long)]
    stake: u64,
    /// Expertise domains (repeatable), e.g. --expertise math.
    #[arg(long)]
    expertise: Vec<String>,
    #[command(flatten)]
    send: SendArgs,
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// The auditor's account id (64 hex characters); default: this node's own account.
    #[arg(long)]
    account: Option<String>,
    /// Print the node's `GET /v1/auditors/{id}` answer (JSON) instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    addr: NodeAddr,
}

#[derive(Debug, Args)]
struct AmountArgs {
    /// Amount of TRUST.
    amount: u64,
    #[command(flatten)]
    send: SendArgs,
}

#[derive(Debug, Args)]
struct SendArgs {
    /// Seconds to wait for a block to include the transaction.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
    #[command(flatten)]
    addr: NodeAddr,
}

fn parse_tier(s: &str) -> Result<Tier, CliError> {
    match s.to_ascii_lowercase().as_str() {
        "computer" => Ok(Tier::Computer),
        "llm" => Ok(Tier::Llm),
        "human" => Ok(Tier::Human),
        other => Err(CliError::usage(format!(
            "unknown tier {other:?}: use computer, llm or human"
        ))),
    }
}

/// Runs `auditor`.
pub fn run(args: AuditorArgs) -> CliResult {
    match args.command {
        AuditorCommand::Register(a) => register(a),
        AuditorCommand::Status(a) => status(a),
        AuditorCommand::Bond(a) => {
            positive(a.amount)?;
            let mut s = Session::open(&a.send)?;
            let (h, after) = s.send(Call::Bond { amount: a.amount })?;
            outln!(
                "bonded {} TRUST at block #{h}; stake now {} TRUST (tier minimum {}){}",
                a.amount,
                after.stake,
                after.min_stake,
                drawn_note(&after)
            );
            Ok(())
        }
        AuditorCommand::Unbond(a) => {
            positive(a.amount)?;
            let mut s = Session::open(&a.send)?;
            let (_, after) = s.send(Call::Unbond { amount: a.amount })?;
            outln!(
                "unbonding {} TRUST; withdrawable at block #{} (now #{})",
                a.amount,
                latest_frees_at(&after),
                after.height
            );
            outln!(
                "stake now {} TRUST (tier minimum {}){}",
                after.stake,
                after.min_stake,
                drawn_note(&after)
            );
            Ok(())
        }
        AuditorCommand::Exit(a) => {
            let mut s = Session::open(&a)?;
            let (_, after) = s.send(Call::Exit)?;
            outln!(
                "exiting: {} TRUST unbonding, withdrawable at block #{} (now #{}); no new seats",
                after.unbonding_total,
                latest_frees_at(&after),
                after.height
            );
            let seats = after.seats.len();
            if seats > 0 {
                outln!(
                    "{seats} seat(s) held stay this auditor's duty until their sessions end; \
                     a no-show is slashed from the unbonding stake"
                );
            }
            Ok(())
        }
        AuditorCommand::DeclareExpertise(a) => {
            if a.expertise.len() > trust_protocol::tx::MAX_EXPERTISE
                || a.expertise
                    .iter()
                    .any(|d| d.trim().is_empty() || d.len() > trust_protocol::tx::MAX_DOMAIN_BYTES)
            {
                return Err(CliError::usage(format!(
                    "--expertise: 1 to {} domains, each 1 to {} bytes",
                    trust_protocol::tx::MAX_EXPERTISE,
                    trust_protocol::tx::MAX_DOMAIN_BYTES
                )));
            }
            let mut s = Session::open(&a.send)?;
            let (h, after) = s.send(Call::DeclareExpertise {
                expertise: a.expertise.clone(),
            })?;
            outln!(
                "declared expertise {} at block #{h}; it counts in draws from block #{} (now: {})",
                a.expertise.join(", "),
                h.saturating_add(after.expertise_delay),
                after.expertise.join(", ")
            );
            Ok(())
        }
        AuditorCommand::Withdraw(a) => {
            let mut s = Session::open(&a)?;
            let before = s.auditor()?;
            let (h, after) = s.send(Call::Withdraw)?;
            let took = before.unbonding_total.saturating_sub(after.unbonding_total);
            outln!(
                "withdrew {took} TRUST at block #{h}; balance now {} TRUST",
                after.balance
            );
            if after.unbonding_total > 0 {
                outln!(
                    "still unbonding {} TRUST, withdrawable from block #{}",
                    after.unbonding_total,
                    earliest_frees_at(&after)
                );
            }
            Ok(())
        }
    }
}

fn positive(amount: u64) -> CliResult {
    if amount == 0 {
        Err(CliError::usage("the amount must be positive"))
    } else {
        Ok(())
    }
}

/// The height the newest unbonding frees at (the one a transaction just started).
fn latest_frees_at(a: &AuditorView) -> u64 {
    a.unbonding.iter().map(|u| u.frees_at).max().unwrap_or(0)
}

fn earliest_frees_at(a: &AuditorView) -> u64 {
    a.unbonding.iter().map(|u| u.frees_at).min().unwrap_or(0)
}

fn drawn_note(a: &AuditorView) -> &'static str {
    if a.drawable {
        ""
    } else if a.exiting {
        "; exiting: not drawn"
    } else {
        "; not drawn for new seats"
    }
}

/// This home's key, talking to its node.
struct Session {
    keys: keys::NodeKeys,
    home: std::path::PathBuf,
    api: Client,
    rt: tokio::runtime::Runtime,
    timeout: Duration,
}

impl Session {
    fn open(a: &SendArgs) -> Result<Self, CliError> {
        let home = expand_home(&a.addr.home);
        let keys = keys::load(&home).map_err(|e| CliError::usage(e.to_string()))?;
        Ok(Self {
            keys,
            home,
            api: Client::new(a.addr.resolve()?),
            rt: runtime()?,
            timeout: Duration::from_secs(a.timeout_secs),
        })
    }

    fn me(&self) -> AccountId {
        self.keys.account_id()
    }

    /// This account's auditor record (`None` when it is not an auditor).
    fn auditor_or_none(&self) -> Result<Option<AuditorView>, CliError> {
        match self.rt.block_on(self.api.auditor(&self.me())) {
            Ok(a) => Ok(Some(a)),
            Err(client::ClientError::Api { status: 404, .. }) => Ok(None),
            Err(e) => Err(api_error(e)),
        }
    }

    fn auditor(&self) -> Result<AuditorView, CliError> {
        self.auditor_or_none()?.ok_or_else(|| {
            CliError::failed(format!(
                "{} is not a registered auditor: `trust-node auditor register` registers it",
                self.me()
            ))
        })
    }

    /// The network the node runs: the home's genesis document names it, else the node says
    /// which (a transaction signed for another network is refused).
    fn chain(&self) -> Result<trust_protocol::Hash, CliError> {
        match config::load_genesis(&self.home) {
            Ok(doc) => Ok(doc.chain_id()),
            Err(_) => Ok(self
                .rt
                .block_on(self.api.status())
                .map_err(api_error)?
                .chain_id),
        }
    }

    /// Signs `call` with the next nonce, submits it, waits until a block includes it and
    /// the node's state has applied that block; the height and the auditor record then.
    fn send(&mut self, call: Call) -> Result<(u64, AuditorView), CliError> {
        let me = self.me();
        let nonce = self
            .rt
            .block_on(self.api.account(&me))
            .map_err(api_error)?
            .next_nonce;
        let signed = Signed::sign(&self.keys.account, &self.chain()?, Tx { nonce, call });
        let id = match self.rt.block_on(self.api.submit_tx(&signed)) {
            Ok(r) => r.id,
            Err(client::ClientError::Api {
                status: 422,
                message,
                ..
            }) => return Err(CliError::failed(format!("refused: {message}"))),
            Err(e) => return Err(api_error(e)),
        };
        outln!("submitted {id}");
        let deadline = Instant::now() + self.timeout;
        let height = loop {
            match self.rt.block_on(self.api.tx_location(&id)) {
                Ok(loc) if loc.status == TxStatus::Included => {
                    break loc.height.ok_or_else(|| {
                        CliError::failed("the node says included but names no height")
                    })?;
                }
                Ok(_) => {}
                Err(client::ClientError::Api { status: 404, .. }) => {
                    return Err(CliError::failed(format!(
                        "refused: transaction {id} left the mempool without a block including it \
                         (the contract refused it when a block was built); \
                         `trust-node auditor status` shows the account's standing"
                    )));
                }
                Err(e) => return Err(api_error(e)),
            }
            self.wait_a_little(&deadline, &id)?;
        };
        loop {
            if let Some(a) = self.auditor_or_none()?
                && a.height >= height
            {
                return Ok((height, a));
            }
            self.wait_a_little(&deadline, &id)?;
        }
    }

    fn wait_a_little(&self, deadline: &Instant, id: &trust_protocol::Hash) -> CliResult {
        if Instant::now() > *deadline {
            return Err(CliError::failed(format!(
                "transaction {id} not included within {} s; `trust-node auditor status` shows \
                 whether it landed later",
                self.timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
        Ok(())
    }
}

fn register(a: RegisterArgs) -> CliResult {
    let tier = parse_tier(&a.tier)?;
    positive(a.stake)?;
    let mut s = Session::open(&a.send)?;
    let me = s.me();
    let registered = s.auditor_or_none()?;
    let call = match &registered {
        Some(existing) if existing.tier != tier => {
            // The tier in quotes, as its JSON string.
            return Err(CliError::usage(format!(
                "{me} is already an auditor of tier \"{:?}\"; only bonding more stake is possible",
                existing.tier
            )));
        }
        Some(_) => {
            outln!("{me} is already registered; bonding {} more", a.stake);
            Call::Bond { amount: a.stake }
        }
        None => Call::RegisterAuditor {
            tier,
            expertise: a.expertise,
            sealing_key: s.keys.sealing_public(),
            stake: a.stake,
        },
    };
    let (h, after) = s.send(call)?;
    let what = if registered.is_some() {
        "bonded"
    } else {
        "registered and bonded"
    };
    outln!(
        "auditor {me}: {what} {} TRUST at block #{h}; stake now {} TRUST (tier minimum {}){}",
        a.stake,
        after.stake,
        after.min_stake,
        drawn_note(&after)
    );
    Ok(())
}

fn status(a: StatusArgs) -> CliResult {
    let who = match &a.account {
        Some(id) => id
            .parse::<AccountId>()
            .map_err(|_| CliError::usage("--account must be 64 hex characters"))?,
        None => keys::load(&expand_home(&a.addr.home))
            .map_err(|e| {
                CliError::usage(format!(
                    "{e} (pass --account ID to ask about another account)"
                ))
            })?
            .account_id(),
    };
    let addr = a.addr.resolve()?;
    let rt = runtime()?;
    let v = match rt.block_on(Client::new(addr).auditor(&who)) {
        Ok(v) => v,
        Err(client::ClientError::Api { status: 404, .. }) => {
            return Err(CliError::failed(format!(
                "{who} is not a registered auditor: `trust-node auditor register` registers it"
            )));
        }
        Err(e) => return Err(api_error(e)),
    };
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&reply_json(&v)?)
                .map_err(|e| CliError::failed(e.to_string()))?
        );
        return Ok(());
    }
    print_status(&who, &v);
    Ok(())
}

fn print_status(who: &AccountId, v: &AuditorView) {
    let standing = if v.flagged {
        "flagged as a rubber-stamper: not drawn".to_string()
    } else if v.exiting {
        "exiting: not drawn for new seats".to_string()
    } else if v.drawable {
        "drawn for seats".to_string()
    } else {
        format!(
            "not drawn: bonded stake below the tier minimum {}",
            v.min_stake
        )
    };
    outln!("auditor     {who}");
    outln!("at block    #{}", v.height);
    outln!(
        "tier        {:?} (domains: {})",
        v.tier,
        if v.expertise.is_empty() {
            "any".to_string()
        } else {
            v.expertise.join(", ")
        }
    );
    if let Some(p) = &v.pending_expertise {
        outln!(
            "declared    {} (counts in draws from block #{})",
            p.expertise.join(", "),
            p.from
        );
    }
    outln!("standing    {standing}");
    outln!(
        "stake       {} TRUST bonded (tier minimum {}), balance {} TRUST",
        v.stake,
        v.min_stake,
        v.balance
    );
    if v.held_stake > 0 {
        outln!(
            "held        {} TRUST stays within a slash's reach until the sessions its seats sit in are final",
            v.held_stake
        );
    }
    if v.unbonding.is_empty() {
        outln!("unbonding   none");
    } else {
        for u in &v.unbonding {
            outln!(
                "unbonding   {} TRUST, withdrawable at block #{}",
                u.amount,
                u.frees_at
            );
        }
    }
    match &v.withdraw.refused {
        Some(why) => outln!("withdraw    not now: {why}"),
        None => outln!(
            "withdraw    {} TRUST can be withdrawn now",
            v.withdraw.amount
        ),
    }
    outln!("reputation  {:.4}", v.reputation);
    outln!(
        "votes       {} revealed ({} approvals, {} abstentions: abstention rate {:.1}%); agreed {}, disagreed {}",
        v.votes,
        v.approvals,
        v.abstentions,
        v.abstention_rate * 100.0,
        v.agreed,
        v.disagreed
    );
    outln!(
        "rewards     {} TRUST earned, {} TRUST slashed to date",
        v.earned,
        v.slashed
    );
    if v.seats.is_empty() {
        outln!("seats       none open");
    }
    for x in &v.seats {
        let state = if x.revealed {
            "revealed"
        } else if x.committed {
            "committed"
        } else {
            "not committed"
        };
        let deadline = x
            .deadline
            .map(|d| format!(" until block #{d}"))
            .unwrap_or_default();
        outln!(
            "seat        session {} segment {} round {}: {}{deadline}, {state}",
            x.session,
            x.segment,
            x.round,
            x.phase.as_str()
        );
    }
}
