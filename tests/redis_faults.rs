//! `ratesim run --store` under the faults of an operator's week (issue 30): a run either
//! recovers exactly — the same `decisions.csv` as in memory — or stops with a clear
//! error and exit 1. Never a report that differs silently.

mod redis_support;

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn ratesim(args: &[&str], dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratesim"));
    cmd.args(args).current_dir(dir);
    cmd
}

fn describe(out: &Output) -> String {
    format!(
        "exit: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"))
        .to_str()
        .unwrap()
        .to_owned()
}

/// The in-memory run's `decisions.csv` for `name`, written under `work/memory-<name>`.
fn memory_decisions(work: &Path, name: &str) -> Vec<u8> {
    let out_dir = format!("memory-{name}");
    let path = scenario(name);
    let out = ratesim(
        &["run", &path, "--no-charts", "-q", "--out", &out_dir],
        work,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    fs::read(work.join(out_dir).join("decisions.csv")).unwrap()
}

/// Starts `scenario` on the store at `url`, writing to `work/<out_dir>`.
fn spawn_run(work: &Path, name: &str, out_dir: &str, url: &str) -> Child {
    let path = scenario(name);
    ratesim(
        &[
            "run",
            &path,
            "--no-charts",
            "-q",
            "--out",
            out_dir,
            "--store",
            url,
        ],
        work,
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

/// A run that was hit by a fault: it succeeded with exactly memory's decisions, or it
/// failed with exit 1 and a `ratesim: error:` line naming Redis.
fn recovered_exactly_or_stopped(work: &Path, out: &Output, out_dir: &str, memory: &[u8]) {
    match out.status.code() {
        Some(0) => {
            let got = fs::read(work.join(out_dir).join("decisions.csv")).unwrap();
            assert!(
                got == memory,
                "exit 0 with decisions.csv different from memory\n{}",
                describe(out)
            );
        }
        Some(1) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("ratesim: error:") && stderr.contains("redis"),
                "{}",
                describe(out)
            );
            // Fault 7: a failed run leaves no (empty) output folder behind.
            let dir = work.join(out_dir);
            assert!(
                !dir.exists(),
                "a failed run left {}: {:?}\n{}",
                dir.display(),
                fs::read_dir(&dir).map(|d| d.count()),
                describe(out)
            );
        }
        _ => panic!("neither success nor a clean failure\n{}", describe(out)),
    }
}

/// Fault 1: connections killed mid-run (`CLIENT KILL TYPE normal` every 20 ms). A
/// script that ran but whose reply was lost must not be charged again by a resend.
#[test]
fn clients_killed_mid_run_never_give_a_report_that_differs_from_memory() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let memory = memory_decisions(work.path(), "uniform");
    let mut run = spawn_run(work.path(), "uniform", "killed", &server.url());
    let done = AtomicBool::new(false);
    let killed = AtomicU64::new(0);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            let mut admin = server.connection("");
            wait_for_state(&mut admin);
            while !done.load(Ordering::Relaxed) {
                let n: u64 = redis::cmd("CLIENT")
                    .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
                    .query(&mut admin)
                    .unwrap_or(0);
                killed.fetch_add(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let out = run.wait_with_output_ref();
        done.store(true, Ordering::Relaxed);
        out
    });
    assert!(
        killed.load(Ordering::Relaxed) > 0,
        "no connection was killed: the run ended before the fault"
    );
    recovered_exactly_or_stopped(work.path(), &out, "killed", &memory);
}

/// Fault 2: the server is replaced mid-run by an empty one on the same socket.
#[test]
fn a_server_restarted_mid_run_never_gives_a_report_that_differs_from_memory() {
    let Some(mut server) = redis_support::Server::start(&[]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let memory = memory_decisions(work.path(), "uniform");
    let mut con = server.connection("");
    let run = spawn_run(work.path(), "uniform", "restarted", &server.url());
    wait_for_state(&mut con);
    // As an operator would: a new server takes over the socket path, then the old one
    // is killed (its connections break; new ones reach the empty server).
    let replacement = Replacement::start(&server.socket());
    server.kill();
    let out = run.wait_with_output().unwrap();
    drop(replacement);
    recovered_exactly_or_stopped(work.path(), &out, "restarted", &memory);
}

/// Fault 6: a server that stops answering (SIGSTOP) ends the run within the run's
/// timeout (30 s) plus the documented 3 s: one timeout for the whole run, not one per
/// algorithm, and no cleanup waiting on the stalled server (the keys' TTL removes them).
#[test]
fn a_stalled_server_ends_the_run_within_the_timeout_and_a_small_bound() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut con = server.connection("");
    let run = spawn_run(work.path(), "uniform", "stalled", &server.url());
    wait_for_state(&mut con);
    server.pause();
    let started = std::time::Instant::now();
    let out = run.wait_with_output().unwrap();
    let took = started.elapsed();
    server.resume();
    eprintln!("the run ended {took:?} after the server stalled");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("timed out"),
        "{}",
        describe(&out)
    );
    assert!(
        took < Duration::from_secs(30 + 3),
        "the run took {took:?} after the stall\n{}",
        describe(&out)
    );
    assert!(!work.path().join("stalled").exists(), "{}", describe(&out));
}

/// Fault 4: SIGINT or SIGTERM mid-run: exit 130 and none of the run's keys left.
#[test]
fn an_interrupted_run_removes_its_keys() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut con = server.connection("");
    for signal in ["-INT", "-TERM"] {
        let out_dir = format!("interrupted{signal}");
        let run = spawn_run(work.path(), "uniform", &out_dir, &server.url());
        wait_for_state(&mut con);
        // Every key carries the safety TTL while the run is going (it was none).
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
        for key in &keys {
            let pttl: i64 = redis::cmd("PTTL").arg(key).query(&mut con).unwrap();
            let most = ratesim::redis::CALLER_TTL.as_millis() as i64;
            assert!(pttl > 0 && pttl <= most, "{key}: PTTL {pttl}");
        }
        assert!(!keys.is_empty());
        let sent = Command::new("kill")
            .args([signal, &run.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
        let left: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
        assert_eq!(left, 0, "{signal}: keys left behind\n{}", describe(&out));
    }
}

/// Fault 5: the run is stopped and continued (Ctrl-Z / `fg`: SIGTSTP, SIGCONT) five
/// times mid-run, over the unix socket and over TCP. A read interrupted by the stop
/// (`EINTR`) is retried: the run finishes with memory's decisions. Before issue 30's
/// fix: exit 1, "Interrupted system call (os error 4)", 6 runs of 6.
#[test]
fn a_run_stopped_and_continued_finishes_equal_to_memory() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let Some(server) = redis_support::Server::start(&["--port", &port, "--bind", "127.0.0.1"])
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let memory = memory_decisions(work.path(), "uniform");
    let mut con = server.connection("");
    let tcp = format!("redis://127.0.0.1:{port}");
    for (out_dir, url) in [("stopped-unix", server.url()), ("stopped-tcp", tcp)] {
        let run = spawn_run(work.path(), "uniform", out_dir, &url);
        wait_for_state(&mut con);
        let pid = run.id().to_string();
        let mut stops = 0;
        for _ in 0..5 {
            let stopped = Command::new("kill").args(["-TSTP", &pid]).status().unwrap();
            std::thread::sleep(Duration::from_millis(150));
            let continued = Command::new("kill").args(["-CONT", &pid]).status().unwrap();
            stops += usize::from(stopped.success() && continued.success());
            std::thread::sleep(Duration::from_millis(150));
        }
        let out = run.wait_with_output().unwrap();
        assert!(
            stops > 0,
            "{out_dir}: the run ended before any stop\n{}",
            describe(&out)
        );
        assert_eq!(out.status.code(), Some(0), "{out_dir}: {}", describe(&out));
        let got = fs::read(work.path().join(out_dir).join("decisions.csv")).unwrap();
        assert!(
            got == memory,
            "{out_dir}: decisions.csv differs from memory"
        );
        let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    }
}

/// Fault 2, a flush: `FLUSHALL` mid-run empties the run's keys on the same server and
/// connections (no restart). The run stops with exit 1 and says why; before: exit 0
/// with a report decided partly on fresh states.
#[test]
fn a_flushed_server_stops_the_run_with_a_clear_error() {
    let Some(server) = redis_support::Server::start(&[]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut con = server.connection("");
    let run = spawn_run(work.path(), "uniform", "flushed", &server.url());
    wait_for_state(&mut con);
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ratesim: error:")
            && stderr.contains("state lost")
            && stderr.contains("FLUSHALL"),
        "{}",
        describe(&out)
    );
    assert!(!work.path().join("flushed").exists(), "{}", describe(&out));
    let left: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(left, 0, "keys left behind\n{}", describe(&out));
}

/// Returns once the run has written state (its first decisions are made): the fault
/// must hit mid-run, not while the store is being opened.
fn wait_for_state(con: &mut redis::Connection) {
    for _ in 0..2_000 {
        if redis::cmd("DBSIZE").query::<u64>(con).unwrap_or(0) > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the run wrote no key in 10 s");
}

/// A second `redis-server` bound to another's socket path (it replaces the socket file),
/// killed on drop.
struct Replacement {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Replacement {
    fn start(socket: &Path) -> Replacement {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let child = Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(socket)
            .arg("--dir")
            .arg(dir.path())
            .arg("--logfile")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let replacement = Replacement { child, _dir: dir };
        for _ in 0..1_000 {
            let text = fs::read_to_string(&log).unwrap_or_default();
            if text.contains("eady to accept connections") {
                return replacement;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("the replacement redis-server was not ready in 5 s");
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

trait WaitRef {
    fn wait_with_output_ref(&mut self) -> Output;
}

impl WaitRef for Child {
    /// `wait_with_output` for a child borrowed by a scope.
    fn wait_with_output_ref(&mut self) -> Output {
        use std::io::Read;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let mut err = self.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.read_to_end(&mut buf);
            buf
        });
        let _ = self.stdout.take().unwrap().read_to_end(&mut stdout);
        stderr.extend(reader.join().unwrap());
        let status = self.wait().unwrap();
        Output {
            status,
            stdout,
            stderr,
        }
    }
}
