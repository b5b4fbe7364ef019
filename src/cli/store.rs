//! `--store`: where a run keeps its algorithms' states. In memory by default; with
//! `--store URL`, in Redis under a prefix of the run's own, emptied when it ends.

#[cfg(feature = "redis")]
use std::sync::{Mutex, PoisonError};

use ratesim::sim::StateBackend;

use super::Failure;

/// The store one run keeps its states in, opened for that run. Dropping it removes
/// the run's keys from Redis (a run decides at simulated instants, so its keys have no
/// TTL and would otherwise stay).
pub(super) struct RunStore {
    state: StateBackend,
    opened: std::time::Instant,
}

impl RunStore {
    /// Memory when `url` is `None`; otherwise connects to Redis now, so a wrong
    /// address or password fails before anything runs.
    pub(super) fn open(url: Option<&str>) -> Result<RunStore, Failure> {
        let state = match url {
            None => StateBackend::Memory,
            Some(url) => redis_store(url)?,
        };
        Ok(RunStore {
            state,
            opened: std::time::Instant::now(),
        })
    }

    /// After a run on Redis: an error when it lasted as long as the keys' safety TTL
    /// (`ratesim::redis::CALLER_TTL`), since a key not written for that long may have
    /// expired mid-run and been decided as fresh. Never for memory.
    pub(super) fn check_duration(&self) -> Result<(), Failure> {
        let took = self.opened.elapsed();
        #[cfg(feature = "redis")]
        if matches!(self.state, StateBackend::Redis(_)) && took >= ratesim::redis::CALLER_TTL {
            return Err(Failure::Other(anyhow::anyhow!(
                "--store: the run took {:?}, as long as the keys' safety TTL ({:?}): a \
                 key left unwritten that long may have expired mid-run, so the report \
                 is not trusted",
                took,
                ratesim::redis::CALLER_TTL
            )));
        }
        let _ = took;
        Ok(())
    }

    /// The store, for `RunOptions`.
    pub(super) fn state(&self) -> &StateBackend {
        &self.state
    }
}

#[cfg(feature = "redis")]
fn redis_store(url: &str) -> Result<StateBackend, Failure> {
    use ratesim::redis::{FailureKind, RedisStore};
    use std::time::{SystemTime, UNIX_EPOCH};

    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let prefix = format!("ratesim:{}:{started}", std::process::id());
    // A run stops at its first store failure: later calls (other algorithms' threads,
    // the next step) fail at once instead of each waiting out its own timeout.
    let opened = RedisStore::builder(&prefix)
        .server(url)
        .stop_after_failure()
        .open();
    match opened {
        Ok(store) => {
            *active().lock().unwrap_or_else(PoisonError::into_inner) = Some(store.clone());
            Ok(StateBackend::Redis(store))
        }
        Err(e) => {
            let bad_url = e.kind() == FailureKind::InvalidConfig;
            let e = anyhow::Error::new(e).context("--store");
            Err(if bad_url {
                super::input(e)
            } else {
                Failure::Other(e)
            })
        }
    }
}

/// The Redis store of the run in progress, for the interrupt handler (which ends the
/// process without running destructors).
#[cfg(feature = "redis")]
fn active() -> &'static Mutex<Option<ratesim::redis::RedisStore>> {
    static ACTIVE: Mutex<Option<ratesim::redis::RedisStore>> = Mutex::new(None);
    &ACTIVE
}

/// Ctrl-C, SIGTERM or SIGHUP during a `--store` run: removes the run's keys from Redis
/// before the process exits (each key also has a safety TTL, the bound after a
/// `kill -9`). Prints what it did; does nothing without a run in progress.
pub fn remove_interrupted_run_keys() {
    #[cfg(feature = "redis")]
    if let Some(store) = active()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        // No decision writes a key after the removal; one already sent may land during
        // it, so a second pass (milliseconds later) takes that too.
        store.stop();
        let first = store.remove_all();
        std::thread::sleep(std::time::Duration::from_millis(20));
        match first.and_then(|n| Ok(n + store.remove_all()?)) {
            Ok(n) => eprintln!("ratesim: interrupted; removed the run's {n} Redis key(s)"),
            Err(e) => eprintln!(
                "ratesim: warning: this run's keys ({}:*) could not be removed from Redis: {e}",
                store.prefix()
            ),
        }
    }
}

#[cfg(not(feature = "redis"))]
fn redis_store(_url: &str) -> Result<StateBackend, Failure> {
    Err(super::input(anyhow::anyhow!(
        "--store: this ratesim was built without Redis support; build it with \
         `cargo build --release --features redis` (or install it with \
         `cargo install --path . --features redis`)"
    )))
}

impl Drop for RunStore {
    fn drop(&mut self) {
        #[cfg(feature = "redis")]
        let _ = active()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        #[cfg(feature = "redis")]
        if let StateBackend::Redis(store) = &self.state {
            let ttl = ratesim::redis::CALLER_TTL.as_secs();
            // A server that timed out is not waited for again: the keys expire on their
            // own (the run then ends within its timeout, not timeout + cleanup).
            let result = match store.stopped() {
                Some(e) if e.kind() == ratesim::redis::FailureKind::Timeout => Err(e),
                _ => store.remove_all().map(drop),
            };
            if let Err(e) = result {
                eprintln!(
                    "ratesim: warning: this run's keys ({}:*) could not be removed from \
                     Redis ({e}); they expire within {ttl} s",
                    store.prefix()
                );
            }
        }
    }
}

/// The command line as run.json records it, with the credentials of any URL (a
/// `--store redis://user:password@host`) replaced by `***`.
pub(super) fn redacted_args() -> Vec<String> {
    std::env::args().map(|a| redact_url(&a)).collect()
}

/// `text` with a URL's user info (`scheme://user:pass@host`) and `pass=`/`password=`
/// query values replaced by `***`; any other text unchanged.
pub(super) fn redact_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_owned();
    };
    let rest = &text[scheme_end + 3..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let mut out = String::from(&text[..scheme_end + 3]);
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            out.push_str("***");
            out.push_str(&rest[at..authority_end]);
        }
        None => out.push_str(&rest[..authority_end]),
    }
    let tail = &rest[authority_end..];
    match tail.split_once('?') {
        None => out.push_str(tail),
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if matches!(k, "pass" | "password") => format!("{k}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn urls_lose_their_credentials_and_nothing_else() {
        let cases = [
            (
                "redis://:s3cret@127.0.0.1:6379/0",
                "redis://***@127.0.0.1:6379/0",
            ),
            ("redis://app:s3cret@host:1", "redis://***@host:1"),
            ("redis://host:6379", "redis://host:6379"),
            (
                "redis+unix:///tmp/r.sock?user=app&pass=s3cret&db=2",
                "redis+unix:///tmp/r.sock?user=app&pass=***&db=2",
            ),
            ("--store", "--store"),
            ("scenarios/burst.toml", "scenarios/burst.toml"),
        ];
        for (given, want) in cases {
            assert_eq!(redact_url(given), want, "{given}");
        }
    }
}
