//! The Redis Cluster link of a [`RedisStore`](super::RedisStore): redis-rs' sync
//! `ClusterConnection` (slot routing by the keys' hash tag, `MOVED`/`ASK` followed,
//! `SCRIPT LOAD` sent to every master) over [`Node`] links that never resend a command
//! after a timeout. It builds connections; it knows nothing of scripts or keys' names.
//!
//! Why the wrapper: redis-rs retries a command whose reply timed out
//! (`RetryMethod::RetryImmediately`), on the same link, up to its retry count. For a
//! decision that is a second `EVALSHA` whose first may already have run — a request
//! charged twice — and a wait of many timeouts instead of one. A [`Node`] that saw a
//! timeout refuses every later command at once with a timeout error, so the cluster's
//! retries end immediately, send nothing, and the caller sees `FailureKind::Timeout`
//! (`tests/redis_cluster.rs` stops a master to prove it).

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection, Connect};
use redis::{ConnectionInfo, ConnectionLike, IntoConnectionInfo, RedisResult, TlsCertificates};

/// How many times one command is re-routed (`MOVED`, `ASK`, `TRYAGAIN`, a reconnect)
/// before its error is returned. A slot migration needs at most two (`ASK` while keys
/// move, `MOVED` once the slot is the other master's).
const RETRIES: u32 = 4;

/// The longest sleep (ms) before a `TRYAGAIN`/`CLUSTERDOWN` retry (redis-rs' default
/// starts at 1.28 s, far beyond any limiter's timeout).
const MAX_RETRY_WAIT_MS: u64 = 20;

/// A cluster's seed nodes and TLS trust: enough to open a connection with any timeout.
#[derive(Clone)]
pub(super) struct Seeds {
    nodes: Vec<ConnectionInfo>,
    certs: Option<TlsCertificates>,
}

/// One connection to a whole cluster: a link per master, opened as slots need them.
pub(super) type Link = ClusterConnection<Node>;

impl Seeds {
    pub(super) fn new(nodes: Vec<ConnectionInfo>, certs: Option<TlsCertificates>) -> Seeds {
        Seeds { nodes, certs }
    }

    /// The seed nodes' addresses (`host:port`; never a credential).
    pub(super) fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.addr().to_string()).collect()
    }

    /// Checks what redis-rs can check without a connection: one password, one TLS mode
    /// and no unix socket among the seeds.
    pub(super) fn check(&self) -> RedisResult<()> {
        self.client(Duration::from_secs(1)).map(drop)
    }

    /// A connection: asks a seed for the slot map (`CLUSTER SLOTS`) and links to every
    /// master, waiting at most `timeout` for each connect and each reply. Links opened
    /// later (a slot moved to a new master) use the same connect timeout.
    pub(super) fn connect(&self, timeout: Duration) -> RedisResult<Link> {
        self.client(timeout)?.get_generic_connection::<Node>()
    }

    fn client(&self, timeout: Duration) -> RedisResult<ClusterClient> {
        let mut builder = ClusterClient::builder(self.nodes.clone())
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(RETRIES)
            .min_retry_wait(0)
            .max_retry_wait(MAX_RETRY_WAIT_MS);
        if let Some(certs) = &self.certs {
            builder = builder.certs(certs.clone());
        }
        builder.build()
    }
}

/// A link to one cluster node that, once a command on it has timed out, refuses every
/// later command with a timeout error instead of sending it: its earlier command may
/// have run, and only the caller may decide what that means.
pub(super) struct Node {
    con: redis::Connection,
    timed_out: bool,
}

impl Node {
    fn guard<T>(
        &mut self,
        f: impl FnOnce(&mut redis::Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        if self.timed_out {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "not resent: an earlier command on this link timed out",
            )
            .into());
        }
        let result = f(&mut self.con);
        if result.as_ref().is_err_and(redis::RedisError::is_timeout) {
            self.timed_out = true;
        }
        result
    }
}

impl Connect for Node {
    fn connect<T: IntoConnectionInfo>(info: T, timeout: Option<Duration>) -> RedisResult<Node> {
        let con = <redis::Connection as Connect>::connect(info, timeout)?;
        // redis-rs clears the socket's timeouts after the handshake, and the cluster
        // sends a PING before setting its own: a stopped node would hold it forever.
        con.set_read_timeout(timeout)?;
        con.set_write_timeout(timeout)?;
        Ok(Node {
            con,
            timed_out: false,
        })
    }

    fn send_packed_command(&mut self, cmd: &[u8]) -> RedisResult<()> {
        self.guard(|con| con.send_packed_command(cmd))
    }

    fn set_write_timeout(&self, dur: Option<Duration>) -> RedisResult<()> {
        self.con.set_write_timeout(dur)
    }

    fn set_read_timeout(&self, dur: Option<Duration>) -> RedisResult<()> {
        self.con.set_read_timeout(dur)
    }

    fn recv_response(&mut self) -> RedisResult<redis::Value> {
        self.guard(redis::Connection::recv_response)
    }
}

impl ConnectionLike for Node {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<redis::Value> {
        self.guard(|con| con.req_packed_command(cmd))
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<redis::Value>> {
        self.guard(|con| con.req_packed_commands(cmd, offset, count))
    }

    fn get_db(&self) -> i64 {
        self.con.get_db()
    }

    fn check_connection(&mut self) -> bool {
        !self.timed_out && self.con.check_connection()
    }

    fn is_open(&self) -> bool {
        !self.timed_out && self.con.is_open()
    }
}
