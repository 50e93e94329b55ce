//! A scenario builder for multi-node tests: `testnet init` homes, `trust-node run`
//! processes on loopback ports, and waits that poll the HTTP API with a deadline (never a
//! bare sleep standing in for a condition).

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicU16, Ordering},
    time::{Duration, Instant},
};

use serde_json::Value;
use trust_node::{client, keys};
use trust_protocol::{
    Signed, encoding,
    tx::{Call, SignedTx, Tx},
};

/// How long any wait may take before the scenario fails.
pub(crate) const DEADLINE: Duration = Duration::from_secs(90);

static NEXT_BASE: AtomicU16 = AtomicU16::new(0);

/// A distinct port range per network within this test process (and per process).
fn base_port() -> u16 {
    let slot = NEXT_BASE.fetch_add(1, Ordering::SeqCst);
    let pid_slot = u16::try_from(std::process::id() % 40).unwrap_or(0);
    20_000 + pid_slot * 1_000 + slot * 100
}

/// One node process.
pub(crate) struct Node {
    /// Its home.
    pub(crate) home: PathBuf,
    /// Its API address.
    pub(crate) api: String,
    child: Option<Child>,
}

/// A local network.
pub(crate) struct Network {
    /// Temp dir holding every home (kept on failure for the logs).
    _dir: tempfile::TempDir,
    /// The nodes.
    pub(crate) nodes: Vec<Node>,
    rt: tokio::runtime::Runtime,
    block_time_ms: u64,
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trust-node")
}

impl Network {
    /// `testnet init` for `n` validators; nothing runs yet.
    pub(crate) fn new(n: u16) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = base_port();
        let out = Command::new(bin())
            .args(["testnet", "init", "--nodes", &n.to_string(), "--base-port"])
            .arg(base.to_string())
            .arg("--home")
            .arg(dir.path())
            .output()
            .expect("run testnet init");
        assert!(
            out.status.success(),
            "testnet init: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let nodes = (0..n)
            .map(|i| Node {
                home: dir.path().join(format!("node{i}")),
                api: format!("127.0.0.1:{}", base + 10 * i + 2),
                child: None,
            })
            .collect();
        Network {
            _dir: dir,
            nodes,
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            block_time_ms: 300,
        }
    }

    /// Starts node `i`, appending its log to `<home>/node.log`.
    pub(crate) fn start(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        assert!(node.child.is_none(), "node{i} already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.home.join("node.log"))
            .expect("log file");
        let child = Command::new(bin())
            .arg("run")
            .arg("--home")
            .arg(&node.home)
            .arg("--block-time-ms")
            .arg(self.block_time_ms.to_string())
            .env("RUST_LOG", "info,libp2p=warn,malachitebft=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn trust-node run");
        node.child = Some(child);
    }

    /// `n` nodes started, each past its first block.
    pub(crate) fn running(n: u16) -> Self {
        let mut net = Self::new(n);
        net.start_all();
        for i in 0..usize::from(n) {
            net.wait_height(i, 1);
        }
        net
    }

    /// Starts every node.
    pub(crate) fn start_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.start(i);
        }
    }

    /// Kills node `i` with SIGKILL (no graceful stop) and reaps it.
    pub(crate) fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Sends SIGTERM to node `i` and waits (up to [`DEADLINE`]) for it to exit; returns
    /// how it exited.
    pub(crate) fn terminate(&mut self, i: usize) -> std::process::ExitStatus {
        let mut child = self.nodes[i].child.take().expect("node running");
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM node{i} failed");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("wait for node") {
                return status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "node{i} still running {DEADLINE:?} after SIGTERM\n{}",
                    self.logs_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Node `i`'s whole log.
    pub(crate) fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.nodes[i].home.join("node.log")).unwrap_or_default()
    }

    /// GET on node `i`'s API; `None` while it is not answering.
    pub(crate) fn get(&self, i: usize, path: &str) -> Result<Value, client::ClientError> {
        self.rt.block_on(client::get(&self.nodes[i].api, path))
    }

    /// POST JSON to node `i`'s API.
    pub(crate) fn post_json(
        &self,
        i: usize,
        path: &str,
        body: &Value,
    ) -> Result<Value, client::ClientError> {
        self.rt
            .block_on(client::post(&self.nodes[i].api, path, body))
    }

    /// POST a signed transaction to node `i`.
    pub(crate) fn send_tx(&self, i: usize, tx: &SignedTx) -> Result<Value, client::ClientError> {
        let body = serde_json::json!({"tx": hex::encode(encoding::encode(tx))});
        self.rt
            .block_on(client::post(&self.nodes[i].api, "/v1/tx", &body))
    }

    /// A raw HTTP exchange with node `i` (status line, headers and body as text).
    pub(crate) fn raw(&self, i: usize, method: &str, path: &str, body: &[u8]) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&self.nodes[i].api).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).expect("write");
        s.write_all(body).expect("write");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// POSTs raw bytes as a transaction to node `i`.
    pub(crate) fn rt_post_raw(&self, i: usize, body: &[u8]) -> String {
        self.raw(i, "POST", "/v1/tx", body)
    }

    /// Node `i`'s Prometheus text.
    pub(crate) fn metrics(&self, i: usize) -> String {
        self.raw(i, "GET", "/metrics", b"")
    }

    /// Node `i`'s height, if it answers.
    pub(crate) fn height(&self, i: usize) -> Option<u64> {
        self.get(i, "/v1/status").ok()?["height"].as_u64()
    }

    /// Polls until `cond` holds, failing the test with `what` and the logs at the deadline.
    pub(crate) fn wait_for(&self, what: &str, mut cond: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while !cond(self) {
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}\n{}",
                self.logs_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until node `i` reports at least `h`.
    pub(crate) fn wait_height(&self, i: usize, h: u64) {
        self.wait_for(&format!("node{i} to reach height {h}"), |n| {
            n.height(i).is_some_and(|x| x >= h)
        });
    }

    /// The block at `h` on node `i`: (hash, state_root).
    pub(crate) fn block(&self, i: usize, h: u64) -> (String, String) {
        let b = self.get(i, &format!("/v1/blocks/{h}")).expect("block");
        (
            b["hash"].as_str().expect("hash").to_string(),
            b["header"]["state_root"]
                .as_str()
                .expect("root")
                .to_string(),
        )
    }

    /// A node's account keys.
    pub(crate) fn keys(&self, i: usize) -> keys::NodeKeys {
        keys::load(&self.nodes[i].home).expect("keys")
    }

    /// A transfer from node `from`'s account, signed with its next nonce (as node `via`
    /// reports it).
    pub(crate) fn transfer(
        &self,
        from: usize,
        via: usize,
        to: &keys::NodeKeys,
        amount: u64,
    ) -> SignedTx {
        let k = self.keys(from);
        let acct = self
            .get(via, &format!("/v1/accounts/{}", k.account_id()))
            .expect("account");
        let nonce = acct["next_nonce"].as_u64().expect("nonce");
        Signed::sign(
            &k.account,
            Tx {
                nonce,
                call: Call::Transfer {
                    to: to.account_id(),
                    amount,
                },
            },
        )
    }

    /// Runs `trust-node ledger verify` on a stopped node's home.
    pub(crate) fn verify_ledger(&self, i: usize) -> (bool, String) {
        let out = Command::new(bin())
            .args(["ledger", "verify", "--home"])
            .arg(&self.nodes[i].home)
            .output()
            .expect("run ledger verify");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// The last lines of every node's log.
    pub(crate) fn logs_tail(&self) -> String {
        let mut s = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let log = std::fs::read_to_string(n.home.join("node.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            s.push_str(&format!("--- node{i} ---\n{tail}\n"));
        }
        s
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}
