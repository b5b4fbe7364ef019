//! The store's own connection to one server over a unix socket or plain TCP: redis-rs'
//! command encoding and reply parser, with a read path that survives an interrupted
//! system call.
//!
//! Why not redis-rs' sync `Connection`: with a read timeout on the socket
//! (`SO_RCVTIMEO`), Linux ends a blocked `read` with `EINTR` whenever the process is
//! stopped and continued (Ctrl-Z / `fg`, `SIGTSTP`/`SIGCONT`) or a signal handler runs,
//! even one installed with `SA_RESTART` (signal(7)). redis-rs 1.8 returns that error and
//! counts the reply as one to skip, so the answer to the command it sent can never be
//! read: the decision's outcome becomes unknown. Here `EINTR` is retried, on the same
//! socket, and the reply is read as if nothing happened: nothing is resent, so at most
//! once holds. Each retried `read` waits the full timeout again; a stop of any length
//! costs no failure. TLS (`rediss://`) stays on redis-rs (a TLS session's read path
//! is rustls'): an interrupted read there is still a connection failure.
//!
//! It speaks RESP2: `AUTH` when the URL has a password, `SELECT` when it names a
//! database, nothing else at connect.

use std::io::{self, Read, Write};
use std::net::TcpStream;
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, ConnectionLike, Parser, RedisResult, Value};

/// One connection to one server, unix socket or TCP without TLS.
pub(super) struct Raw {
    stream: Stream,
    parser: Parser,
    db: i64,
    /// False once a read or write failed: the stream's position in the reply stream is
    /// unknown, so nothing more may be read from it as an answer.
    open: bool,
}

enum Stream {
    #[cfg(unix)]
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Raw {
    /// Connects to `info`'s server if it is a unix socket or plain TCP (`None` for
    /// TLS: redis-rs connects those), authenticates and selects the database, each step
    /// waiting at most `timeout`.
    pub(super) fn connect(info: &ConnectionInfo, timeout: Duration) -> Option<RedisResult<Raw>> {
        let stream = match info.addr() {
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            ConnectionAddr::Tcp(host, port) => tcp(host, *port, timeout, info),
            _ => return None,
        };
        Some(stream.map_err(Into::into).and_then(|stream| {
            let mut raw = Raw {
                stream,
                parser: Parser::new(),
                db: info.redis_settings().db(),
                open: true,
            };
            raw.set_timeout(timeout)?;
            raw.handshake(info)?;
            Ok(raw)
        }))
    }

    fn handshake(&mut self, info: &ConnectionInfo) -> RedisResult<()> {
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password).query::<()>(self)?;
        }
        if self.db != 0 {
            redis::cmd("SELECT").arg(self.db).query::<()>(self)?;
        }
        Ok(())
    }

    /// The read and write timeout of the socket (each `read`/`write` call).
    pub(super) fn set_timeout(&self, timeout: Duration) -> io::Result<()> {
        let timeout = Some(timeout.max(Duration::from_millis(1)));
        match &self.stream {
            #[cfg(unix)]
            Stream::Unix(s) => s
                .set_read_timeout(timeout)
                .and_then(|()| s.set_write_timeout(timeout)),
            Stream::Tcp(s) => s
                .set_read_timeout(timeout)
                .and_then(|()| s.set_write_timeout(timeout)),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> RedisResult<()> {
        if !self.open {
            return Err(closed());
        }
        // `write_all` retries `EINTR` itself.
        let result = match &mut self.stream {
            #[cfg(unix)]
            Stream::Unix(s) => s.write_all(bytes),
            Stream::Tcp(s) => s.write_all(bytes),
        };
        result.map_err(|e| self.broken(e))
    }

    /// The next reply, waiting through interrupted reads.
    fn receive(&mut self) -> RedisResult<Value> {
        let result = self.parser.parse_value(Patient(&mut self.stream));
        // A server's error reply is a value; an error here is a broken stream or reply.
        if result.is_err() {
            self.open = false;
        }
        result
    }

    fn broken(&mut self, e: io::Error) -> redis::RedisError {
        self.open = false;
        e.into()
    }
}

fn tcp(host: &str, port: u16, timeout: Duration, info: &ConnectionInfo) -> io::Result<Stream> {
    use std::net::ToSocketAddrs;
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                s.set_nodelay(info.tcp_settings().nodelay())?;
                return Ok(Stream::Tcp(s));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "the host resolved to no address")
    }))
}

fn closed() -> redis::RedisError {
    io::Error::new(io::ErrorKind::NotConnected, "the connection failed earlier").into()
}

/// A reader that retries a `read` the kernel interrupted (`EINTR`): the reply is still
/// on its way and must be read here, not skipped.
struct Patient<'a>(&'a mut Stream);

impl Read for Patient<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let result = match self.0 {
                #[cfg(unix)]
                Stream::Unix(s) => s.read(buf),
                Stream::Tcp(s) => s.read(buf),
            };
            match result {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

impl ConnectionLike for Raw {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.send(cmd)?;
        self.receive()
    }

    /// Sends a pipeline and reads `offset + count` replies, returning the last `count`
    /// (server errors among them as values, as redis-rs' connection does).
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.send(cmd)?;
        let mut replies = Vec::with_capacity(count);
        for i in 0..offset + count {
            let reply = self.receive()?;
            if i >= offset {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    fn get_db(&self) -> i64 {
        self.db
    }

    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        self.open
    }
}
