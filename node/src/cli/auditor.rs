//! `auditor`: an auditor's life from registration to withdrawal, through its node's API.
//!
//! `register`, `bond`, `unbond`, `exit` and `withdraw` sign a transaction with the home's
//! account key, submit it to the node, wait until a block includes it and print what
//! changed; a transaction the node or the contract refuses prints the contract's reason
//! and exits with code 4 ([`CliError::REFUSED`]). `status` prints the account's standing, or with `--json` the
//! node's `GET /v1/auditors/{id}` answer as it is.

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use trust_protocol::{
    AccountId, Signed,
    tx::{Call, Tier, Tx},
};

use super::{
    CliError, CliResult,
    keys::node_home,
    remote::{NodeAddr, api_error, print_reply, runtime},
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
    /// Show an auditor's history, session by session, newest first: seats drawn, votes
    /// revealed (valid/invalid/ungrounded/abstain), judgements counted, rewards, slashes
    /// and why, appeals filed, and each session's status and verdict; then the totals.
    /// Read from the events the node stores with its blocks (a pruning node has none below
    /// its oldest block).
    History(HistoryArgs),
    /// Bond more of the balance as stake: more voting weight, more at stake. An exiting
    /// auditor stays out of the draws whatever it bonds.
    Bond(AmountArgs),
    /// Start unbonding stake: it leaves the draws' weight at once and becomes withdrawable
    /// after the network's unbonding delay; until withdrawn it can still be slashed for
    /// the seats already held. Below the tier's minimum the auditor is drawn no more.
    Unbond(AmountArgs),
    /// Leave the network for good: unbond all bonded stake and never be drawn again (the
    /// account cannot bond or register again; a new account can). Its voting power as a
    /// validator goes with its stake. Seats already held stay this auditor's duty: a
    /// no-show on one is slashed from the unbonding stake. Asks for confirmation unless
    /// --yes. To stop for a while (a restart, an upgrade), `pause` instead.
    Exit(ExitArgs),
    /// Stop being drawn for new seats, from the network's `expertise_delay` blocks on
    /// (longer than any draw seed is known in advance). Seats already held stay this
    /// auditor's duty, and its stake stays bonded and slashable for them; while paused it
    /// counts in no pool. Use it before a planned stop, then wait until `status` says
    /// "paused" and its seats are done. Cannot be taken back before it counts.
    Pause(SendArgs),
    /// Be drawn for new seats again, after the same delay as `pause` (and under its rule:
    /// cannot be taken back before it counts).
    Resume(SendArgs),
    /// Move unbonded stake whose delay has passed back to the balance, less what the seats
    /// it holds in sessions not final yet (live, or decided and still appealable) may
    /// still cost: the network's `max_session_loss` for each such session, less what that
    /// session has already taken, as far as the bonded stake and the unbondings not yet
    /// due do not cover it. Nothing frees before the earliest unbonding is due (the error
    /// names the block); when the seats hold back all of it, the error names a session.
    Withdraw(SendArgs),
    /// Replace this auditor's expertise domains (repeat --expertise). They count in draws
    /// only after the network's `expertise_delay` blocks, so nobody declares a domain into
    /// a draw whose seed is already known; a declaration is refused while an earlier one is
    /// pending (replacing it would cancel it at once).
    DeclareExpertise(DeclareArgs),
}

#[derive(Debug, Args)]
struct ExitArgs {
    /// Exit without asking for confirmation.
    #[arg(long)]
    yes: bool,
    #[command(flatten)]
    send: SendArgs,
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
struct HistoryArgs {
    /// The auditor's account id (64 hex characters); default: this node's own account.
    #[arg(long)]
    account: Option<String>,
    /// Print JSON (`{"account", "sessions": [...]}`) instead of a table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV, one line per session after a header line.
    #[arg(long)]
    csv: bool,
    /// Read at most this many sessions (newest first); default: every one the node holds.
    #[arg(long)]
    limit: Option<usize>,
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

/// How a command that sends a transaction reaches its node and how long it waits.
#[derive(Debug, Args)]
pub(super) struct SendArgs {
    /// Seconds to wait for a block to include the transaction.
    #[arg(long, default_value_t = 60)]
    pub(super) timeout_secs: u64,
    #[command(flatten)]
    pub(super) addr: NodeAddr,
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
        AuditorCommand::History(a) => history(a),
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
            let mut s = Session::open(&a.send)?;
            let before = s.auditor()?;
            if !a.yes {
                confirm_exit(&s.me(), &before)?;
            }
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
        AuditorCommand::Pause(a) => pause(a, true),
        AuditorCommand::Resume(a) => pause(a, false),
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

/// `pause` (`paused`) or `resume`.
fn pause(a: SendArgs, paused: bool) -> CliResult {
    let mut s = Session::open(&a)?;
    let call = if paused { Call::Pause } else { Call::Resume };
    let (h, after) = s.send(call)?;
    let from = after.pending_pause.map_or(h, |p| p.from);
    if paused {
        outln!(
            "pausing at block #{h}: not drawn for new seats from block #{from} (now #{})",
            after.height
        );
        if !after.seats.is_empty() {
            outln!(
                "{} seat(s) held stay this auditor's duty: keep the node running until they are \
                 revealed (`trust-node auditor status` lists them)",
                after.seats.len()
            );
        }
    } else {
        outln!(
            "resuming at block #{h}: drawn for new seats again from block #{from} (now #{})",
            after.height
        );
    }
    Ok(())
}

/// Asks the operator, on the terminal, to confirm an exit; refuses when nobody can answer.
fn confirm_exit(me: &AccountId, a: &AuditorView) -> CliResult {
    use std::io::{BufRead, IsTerminal, Write};
    let warning = format!(
        "auditor exit is permanent: {me} unbonds all {} TRUST of its stake, is never drawn \
         again and cannot bond or register again; its voting power as a validator goes with \
         its stake. To stop for a while, `trust-node auditor pause` instead.",
        a.stake
    );
    if !std::io::stdin().is_terminal() {
        return Err(CliError::usage(format!(
            "{warning} Pass --yes to exit without this question."
        )));
    }
    eprint!("{warning}\nType \"exit\" to confirm: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::failed(format!("reading the answer: {e}")))?;
    if answer.trim() == "exit" {
        Ok(())
    } else {
        Err(CliError::usage("not confirmed: nothing was sent"))
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

fn drawn_note(a: &AuditorView) -> String {
    if a.drawable {
        String::new()
    } else if a.exiting {
        "; exiting: not drawn".into()
    } else if let Some(from) = drawn_from(a) {
        format!("; drawn for new seats from block #{from}")
    } else if a.paused {
        "; paused: not drawn for new seats".into()
    } else {
        "; not drawn for new seats".into()
    }
}

/// The block from which a paused auditor is drawn again without asking: a resume that
/// is pending (the network keeps a new registration or bond out of draws for a while, so
/// that nobody steers a draw whose seed is known).
fn drawn_from(a: &AuditorView) -> Option<u64> {
    a.pending_pause.filter(|p| !p.paused).map(|p| p.from)
}

/// What to do when `who` has no account yet: nothing can be signed from it before a
/// funded account sends it tokens, and the least a first transfer must move.
pub(super) fn unfunded(who: &AccountId, params: Option<&trust_contracts::Params>) -> String {
    let needs = params.map_or_else(String::new, |p| {
        format!(
            " (at least {} creates the account; registering needs at least {} for the Computer \
             tier's minimum stake, {} LLM, {} Human)",
            p.min_new_account,
            p.min_stake(Tier::Computer),
            p.min_stake(Tier::Llm),
            p.min_stake(Tier::Human)
        )
    });
    format!(
        "{who} has no account on this network yet: it holds no funds and can sign nothing. \
         From a funded account, `trust-node transfer {who} AMOUNT`{needs}; `trust-node account` \
         then shows the balance"
    )
}

/// This home's key, talking to its node.
pub(super) struct Session {
    keys: keys::NodeKeys,
    home: std::path::PathBuf,
    pub(super) api: Client,
    pub(super) rt: tokio::runtime::Runtime,
    timeout: Duration,
}

impl Session {
    pub(super) fn open(a: &SendArgs) -> Result<Self, CliError> {
        let home = node_home(&a.addr.home)?;
        let keys = keys::load(&home).map_err(|e| CliError::usage(e.to_string()))?;
        Ok(Self {
            keys,
            home,
            api: Client::new(a.addr.resolve()?),
            rt: runtime()?,
            timeout: Duration::from_secs(a.timeout_secs),
        })
    }

    pub(super) fn me(&self) -> AccountId {
        self.keys.account_id()
    }

    /// The genesis parameters of the network, from the home's genesis document (`None`
    /// when the home holds none: the contract's refusal then names the figure).
    pub(super) fn params(&self) -> Option<trust_contracts::Params> {
        config::load_genesis(&self.home)
            .ok()
            .map(|d| d.genesis.params)
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
        let height = self.send_and_wait(call)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(a) = self.auditor_or_none()?
                && a.height >= height
            {
                return Ok((height, a));
            }
            if Instant::now() > deadline {
                return Err(CliError::failed(format!(
                    "the node did not show the state after block #{height} within {} s; \
                     `trust-node auditor status` shows the account's standing",
                    self.timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Signs `call` with the next nonce, submits it and waits until a block includes it;
    /// the block's height.
    pub(super) fn send_and_wait(&mut self, call: Call) -> Result<u64, CliError> {
        let me = self.me();
        let nonce = match self.rt.block_on(self.api.account(&me)) {
            Ok(a) => a.next_nonce,
            Err(client::ClientError::Api { status: 404, .. }) => {
                return Err(CliError::failed(unfunded(&me, self.params().as_ref())));
            }
            Err(e) => return Err(api_error(e)),
        };
        let signed = Signed::sign(&self.keys.account, &self.chain()?, Tx { nonce, call });
        let id = match self.rt.block_on(self.api.submit_tx(&signed)) {
            Ok(r) => r.id,
            Err(client::ClientError::Api {
                status: 422,
                message,
                ..
            }) => return Err(CliError::refused(format!("refused: {message}"))),
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
                    return Err(CliError::refused(format!(
                        "refused: transaction {id} left the mempool without a block including it \
                         (the contract refused it when a block was built); \
                         `trust-node auditor status` shows the account's standing"
                    )));
                }
                Err(e) => return Err(api_error(e)),
            }
            self.wait_a_little(&deadline, &id.to_hex())?;
        };
        Ok(height)
    }

    fn wait_a_little(&self, deadline: &Instant, id: &str) -> CliResult {
        if Instant::now() > *deadline {
            return Err(CliError::failed(format!(
                "transaction {id} not included within {} s; `trust-node account` and \
                 `trust-node auditor status` show whether it landed later",
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
        None if tier == Tier::Llm => {
            // An LLM auditor without an endpoint would only abstain, seat after seat.
            let status = s.rt.block_on(s.api.status()).map_err(api_error)?;
            if status.llm.is_none() {
                return Err(CliError::usage(format!(
                    "the node {} runs no LLM endpoint, so its LLM seats could only abstain: \
                     set [llm] url (and model) in its config.toml, or start it with \
                     `trust-node run --llm-url URL --llm-model NAME`, then register",
                    s.api.addr()
                )));
            }
            Call::RegisterAuditor {
                tier,
                expertise: a.expertise,
                sealing_key: s.keys.sealing_public(),
                stake: a.stake,
            }
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
        if after.drawable {
            // A draw reads the state its block's parent left: block #h's draws were made
            // before this transaction, the next block's see it.
            format!("; drawn for new seats from block #{}", h.saturating_add(1))
        } else {
            drawn_note(&after)
        }
    );
    Ok(())
}

/// `--account`, or the home's own account.
fn account_of(account: Option<&str>, addr: &NodeAddr) -> Result<AccountId, CliError> {
    Ok(match account {
        Some(id) => id
            .parse::<AccountId>()
            .map_err(|_| CliError::usage("--account must be 64 hex characters"))?,
        None => keys::load(&node_home(&addr.home)?)
            .map_err(|e| {
                CliError::usage(format!(
                    "{e} (pass --account ID to ask about another account)"
                ))
            })?
            .account_id(),
    })
}

fn history(a: HistoryArgs) -> CliResult {
    use crate::api::views::SessionHistory;
    let who = account_of(a.account.as_deref(), &a.addr)?;
    let api = Client::new(a.addr.resolve()?);
    let rt = runtime()?;
    let limit = a.limit.unwrap_or(usize::MAX);
    // Pages newest first; a session cut by a page boundary is merged.
    let mut sessions: Vec<SessionHistory> = Vec::new();
    let mut before = None;
    loop {
        let page = match rt.block_on(api.auditor_history(&who, before)) {
            Ok(p) => p,
            Err(client::ClientError::Api { status: 404, .. }) => {
                return Err(not_registered(&who, &api, &rt, &a.addr));
            }
            Err(e) => return Err(api_error(e)),
        };
        for s in page.sessions {
            match sessions.iter_mut().find(|x| x.session == s.session) {
                Some(x) => merge(x, s),
                None => sessions.push(s),
            }
        }
        match page.earlier {
            Some(e) if sessions.len() < limit => before = Some(e),
            _ => break,
        }
    }
    sessions.truncate(limit);
    if a.json {
        let out = serde_json::json!({ "account": who, "sessions": sessions });
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| CliError::failed(e.to_string()))?
        );
        return Ok(());
    }
    if a.csv {
        outln!(
            "session,first_block,last_block,status,verdict,seats,valid,invalid,ungrounded,abstain,counted,rewards,slashed,slash_reasons,restored,appeals"
        );
        for s in &sessions {
            outln!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\",{},{}",
                s.session,
                s.first_block,
                s.last_block,
                s.status,
                s.verdict.as_deref().unwrap_or(""),
                s.seats,
                s.votes.valid,
                s.votes.invalid,
                s.votes.ungrounded,
                s.votes.abstain,
                s.counted,
                s.rewards,
                s.slashed,
                s.slash_reasons.join("; ").replace('"', "'"),
                s.restored,
                s.appeals
            );
        }
        return Ok(());
    }
    outln!("auditor     {who}");
    if sessions.is_empty() {
        outln!("history     no session on record");
        return Ok(());
    }
    outln!(
        "{:<64}  {:>11}  {:<8}  {:<12}  {:>5}  {:>13}  {:>7}  {:>7}  {:>7}  {:>7}",
        "session",
        "blocks",
        "status",
        "verdict",
        "seats",
        "votes v/i/u/a",
        "counted",
        "rewards",
        "slashed",
        "appeals"
    );
    let sum = |f: &dyn Fn(&SessionHistory) -> u64| sessions.iter().map(f).sum::<u64>();
    for s in &sessions {
        outln!(
            "{:<64}  {:>11}  {:<8}  {:<12}  {:>5}  {:>13}  {:>7}  {:>7}  {:>7}  {:>7}",
            s.session.to_hex(),
            format!("{}-{}", s.first_block, s.last_block),
            s.status,
            s.verdict.as_deref().unwrap_or("-"),
            s.seats,
            format!(
                "{}/{}/{}/{}",
                s.votes.valid, s.votes.invalid, s.votes.ungrounded, s.votes.abstain
            ),
            s.counted,
            s.rewards,
            s.slashed,
            s.appeals
        );
        if !s.slash_reasons.is_empty() {
            outln!("    slashed for: {}", s.slash_reasons.join("; "));
        }
        if s.restored > 0 {
            outln!("    given back after an appeal: {}", s.restored);
        }
    }
    outln!(
        "total       {} sessions, {} seats, {} TRUST earned, {} TRUST slashed ({} given back), {} appeals",
        sessions.len(),
        sum(&|s| u64::from(s.seats)),
        sum(&|s| s.rewards),
        sum(&|s| s.slashed),
        sum(&|s| s.restored),
        sum(&|s| u64::from(s.appeals))
    );
    Ok(())
}

/// Adds `more` (the same session, read on a lower page) into `s`.
fn merge(s: &mut crate::api::views::SessionHistory, more: crate::api::views::SessionHistory) {
    s.first_block = s.first_block.min(more.first_block);
    s.last_block = s.last_block.max(more.last_block);
    s.seats = s.seats.saturating_add(more.seats);
    s.rewards = s.rewards.saturating_add(more.rewards);
    s.slashed = s.slashed.saturating_add(more.slashed);
    s.slash_reasons.extend(more.slash_reasons);
    s.restored = s.restored.saturating_add(more.restored);
    s.appeals = s.appeals.saturating_add(more.appeals);
}

fn status(a: StatusArgs) -> CliResult {
    let who = account_of(a.account.as_deref(), &a.addr)?;
    let addr = a.addr.resolve()?;
    let rt = runtime()?;
    let api = Client::new(addr);
    let v = match rt.block_on(api.auditor(&who)) {
        Ok(v) => v,
        Err(client::ClientError::Api { status: 404, .. }) => {
            return Err(not_registered(&who, &api, &rt, &a.addr));
        }
        Err(e) => return Err(api_error(e)),
    };
    if a.json {
        return print_reply(&v);
    }
    print_status(&who, &v);
    Ok(())
}

/// Why `who` has no auditor record, and the next step: fund the account first when it has
/// none, else register it with at least the tier's minimum stake.
fn not_registered(
    who: &AccountId,
    api: &Client,
    rt: &tokio::runtime::Runtime,
    addr: &NodeAddr,
) -> CliError {
    let params = config::load_genesis(&super::keys::expand_home(&addr.home))
        .ok()
        .map(|d| d.genesis.params);
    match rt.block_on(api.account(who)) {
        Err(client::ClientError::Api { status: 404, .. }) => {
            CliError::failed(unfunded(who, params.as_ref()))
        }
        Err(e) => api_error(e),
        Ok(acct) => {
            let min = params.map_or_else(String::new, |p| {
                format!(
                    " (at least the tier's minimum stake: {} Computer, {} LLM, {} Human)",
                    p.min_stake(Tier::Computer),
                    p.min_stake(Tier::Llm),
                    p.min_stake(Tier::Human)
                )
            });
            CliError::failed(format!(
                "{who} is not a registered auditor; its balance is {} TRUST. \
                 `trust-node auditor register --tier computer --stake AMOUNT` registers it, \
                 bonding AMOUNT from the balance{min}",
                acct.balance
            ))
        }
    }
}

fn print_status(who: &AccountId, v: &AuditorView) {
    let standing = if v.flagged {
        "flagged as a rubber-stamper: not drawn".to_string()
    } else if v.exiting {
        "exiting: not drawn for new seats".to_string()
    } else if v.paused {
        "paused: not drawn for new seats (`trust-node auditor resume` ends it)".to_string()
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
    if let Some(p) = &v.pending_pause {
        outln!(
            "{}     from block #{}",
            if p.paused { "pausing " } else { "resuming" },
            p.from
        );
    }
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
