//! A real `redis-server` for one test: started on a unix socket in its own temp dir, no
//! persistence, killed on drop. When `redis-server` is not installed, `Server::start`
//! prints why and returns `None`, and the test returns (`.ci/run` installs it, so CI
//! never skips).
#![allow(dead_code)] // each test file uses a different part

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every algorithm the Redis store scripts, by registry name.
pub const ALGORITHMS: [&str; 6] = [
    "token_bucket",
    "leaky_bucket",
    "gcra",
    "fixed_window",
    "sliding_window_counter",
    "sliding_window_log",
];

/// The built-in algorithm called `name` on `rule`, as a Redis limiter (refused rules
/// panic: callers pass representable ones).
pub fn limiter(
    store: &ratesim::redis::RedisStore,
    name: &str,
    rule: ratesim::Rule,
) -> ratesim::redis::RedisLimiter {
    let builtin = ratesim::Registry::default()
        .entry(name)
        .ok()
        .and_then(|e| e.builtin())
        .unwrap_or_else(|| panic!("{name} is not a built-in"));
    store.builtin(builtin, rule).unwrap()
}

pub struct Server {
    dir: tempfile::TempDir,
    args: Vec<String>,
    child: Option<Child>,
}

pub fn installed() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Server {
    /// A fresh server with `extra` arguments (e.g. `["--requirepass", "pw"]`), or
    /// `None` (after a loud SKIPPED line) when `redis-server` is not on PATH.
    pub fn start(extra: &[&str]) -> Option<Server> {
        if !installed() {
            // CI installs redis-server and sets this, so a missing server fails there
            // instead of passing as a skip.
            assert!(
                std::env::var_os("RATESIM_REQUIRE_REDIS").is_none(),
                "RATESIM_REQUIRE_REDIS is set but redis-server is not on PATH"
            );
            eprintln!("SKIPPED: redis-server not found (apt-get install redis-server)");
            println!("SKIPPED: redis-server not found (apt-get install redis-server)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("ratesim-redis")
            .tempdir()
            .expect("a temp dir");
        let mut server = Server {
            dir,
            args: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        server.spawn();
        Some(server)
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("r.sock")
    }

    /// `redis+unix:///…/r.sock`, with `query` appended (e.g. `?pass=…`).
    pub fn url_with(&self, query: &str) -> String {
        format!("redis+unix://{}{query}", self.socket().display())
    }

    pub fn url(&self) -> String {
        self.url_with("")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// A plain connection for inspecting keys (`extra` credentials in `query`).
    pub fn connection(&self, query: &str) -> redis::Connection {
        redis::Client::open(self.url_with(query))
            .and_then(|c| c.get_connection())
            .expect("a connection to the test server")
    }

    fn spawn(&mut self) {
        let _ = std::fs::remove_file(self.socket());
        let dir = self.dir.path();
        let child = Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(self.socket())
            .args(["--unixsocketperm", "700"])
            .arg("--dir")
            .arg(dir)
            .arg("--logfile")
            .arg(dir.join("log"))
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        // Ready when it answers PING, not merely when its socket exists: on a busy
        // machine the two can be far apart.
        let url = self.url();
        // Any reply counts, NOAUTH included (a server started with --requirepass).
        let answers = || {
            redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .map_or_else(|e| !e.is_io_error() && !e.is_timeout(), |_| true)
        };
        while !(self.socket().exists() && answers()) {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING in 5 s; log: {}",
                std::fs::read_to_string(dir.join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL: the server dies mid-test, its data with it (no persistence).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A new server on the same socket, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// SIGSTOP / SIGCONT: a server that accepts but does not answer (a slow server).
    pub fn pause(&self) {
        signal("-STOP", self.pid());
    }

    pub fn resume(&self) {
        signal("-CONT", self.pid());
    }
}

fn signal(sig: &str, pid: u32) {
    let ok = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill(); // SIGKILL ends a paused (SIGSTOPped) server too
    }
}
