//! The Redis store over TLS (`rediss://`): a real `redis-server` with `--tls-port` and
//! `--requirepass`, its certificate signed by a CA made at test time (rcgen), the store
//! trusting that CA through `RedisStoreBuilder::root_certificate_pem`. Decisions equal
//! the in-memory ones; a wrong password is `FailureKind::Auth`; a server the store does
//! not trust is refused; no password appears in an error or a `Debug`.

mod redis_support;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ratesim::redis::{FailureKind, Now, RedisStore};
use ratesim::{FakeClock, Nanos, RateLimiter, Registry, Rule};

const PASSWORD: &str = "tls-s3cret-pw";

/// PEM texts of a throwaway CA and a server certificate it signed for `localhost` and
/// `127.0.0.1`.
struct Pki {
    ca: String,
    cert: String,
    key: String,
}

fn pki() -> Pki {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ratesim test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut server =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    server
        .distinguished_name
        .push(DnType::CommonName, "ratesim test server");
    let cert = server.signed_by(&key, &ca).unwrap();
    Pki {
        ca: ca.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

/// A `redis-server` listening only on a TLS loopback port, killed on drop.
struct TlsServer {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
    ca: String,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl TlsServer {
    /// A fresh server, or `None` (after a loud SKIPPED line) when `redis-server` is not
    /// installed and RATESIM_REQUIRE_REDIS is unset.
    fn start() -> Option<TlsServer> {
        if !redis_support::installed() {
            assert!(
                std::env::var_os("RATESIM_REQUIRE_REDIS").is_none(),
                "RATESIM_REQUIRE_REDIS is set but redis-server is not on PATH"
            );
            eprintln!("SKIPPED: redis-server not found (apt-get install redis-server)");
            println!("SKIPPED: redis-server not found (apt-get install redis-server)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("ratesim-tls")
            .tempdir()
            .expect("a temp dir");
        let pki = pki();
        for (name, text) in [
            ("ca.pem", &pki.ca),
            ("cert.pem", &pki.cert),
            ("key.pem", &pki.key),
        ] {
            std::fs::write(dir.path().join(name), text).expect("a PEM file");
        }
        let log = dir.path().join("log");
        for _ in 0..3 {
            let port = free_port();
            let mut child = Command::new("redis-server")
                .args(["--port", "0", "--bind", "127.0.0.1 127.0.0.2"])
                .args(["--tls-port", &port.to_string()])
                .arg("--tls-cert-file")
                .arg(dir.path().join("cert.pem"))
                .arg("--tls-key-file")
                .arg(dir.path().join("key.pem"))
                .arg("--tls-ca-cert-file")
                .arg(dir.path().join("ca.pem"))
                .args(["--tls-auth-clients", "no"])
                .args(["--requirepass", PASSWORD])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir.path())
                .arg("--logfile")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break; // exited: the port was taken, or TLS is not built in
                }
                let certs = redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pki.ca.clone().into_bytes()),
                };
                let url = format!("rediss://:{PASSWORD}@localhost:{port}");
                let answers = redis::Client::build_with_tls(url.as_str(), certs)
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(500)))
                    .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                    .is_ok();
                if answers {
                    return Some(TlsServer {
                        dir,
                        port,
                        child,
                        ca: pki.ca,
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "redis-server with --tls-port did not answer over TLS; log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }

    fn url(&self, host: &str, password: &str) -> String {
        format!("rediss://:{password}@{host}:{}", self.port)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.dir;
    }
}

#[test]
fn a_store_over_tls_decides_as_in_memory_trusting_the_test_ca() {
    let Some(server) = TlsServer::start() else {
        return;
    };
    for host in ["localhost", "127.0.0.1"] {
        let store = RedisStore::builder("tls")
            .server(&server.url(host, PASSWORD))
            .root_certificate_pem(server.ca.clone())
            .open()
            .unwrap_or_else(|e| panic!("{host}: {e}"));
        let debug = format!("{store:?}");
        assert!(!debug.contains(PASSWORD), "{debug}");
        let rule = Rule::new(3, Nanos::from_secs(1)).unwrap();
        for name in redis_support::ALGORITHMS {
            // A busy machine must not turn a slow reply into a failure here.
            let redis =
                redis_support::limiter(&store, name, rule).with_timeout(Duration::from_secs(5));
            let clock = FakeClock::new(Nanos::ZERO);
            let memory = RateLimiter::with_clock(
                Registry::default().create(name, rule).unwrap(),
                clock.clone(),
            );
            for step in 0..12u64 {
                let now = Nanos::new(step * 150_000_000);
                clock.set(now);
                let key = format!("{host}-client");
                let want = memory.try_acquire_n(&key, 1).unwrap();
                let got = redis.try_acquire(&key, Now::Caller(now)).unwrap();
                assert_eq!(got, want, "{name} over TLS to {host}, step {step}");
            }
            // And on the server's clock, the production mode.
            let d = redis.try_acquire("fresh", Now::Server).unwrap();
            assert!(d.allowed, "{name}: a fresh key on server time");
        }
    }
}

#[test]
fn a_wrong_password_over_tls_is_an_auth_error_that_shows_no_password() {
    let Some(server) = TlsServer::start() else {
        return;
    };
    let wrong = "not-the-Passw0rd";
    let e = RedisStore::builder("tls")
        .server(&server.url("localhost", wrong))
        .root_certificate_pem(server.ca.clone())
        .open()
        .unwrap_err();
    assert_eq!(e.kind(), FailureKind::Auth, "{e}");
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains(wrong) && !text.contains(PASSWORD), "{text}");
    }
    // No password at all: also Auth.
    let e = RedisStore::builder("tls")
        .server(&format!("rediss://localhost:{}", server.port))
        .root_certificate_pem(server.ca.clone())
        .open()
        .unwrap_err();
    assert_eq!(e.kind(), FailureKind::Auth, "{e}");
    // The builder's Debug shows neither URL nor certificate.
    let builder = RedisStore::builder("tls").server(&server.url("localhost", PASSWORD));
    let debug = format!("{builder:?}");
    assert!(
        !debug.contains(PASSWORD) && !debug.contains("rediss"),
        "{debug}"
    );
}

#[test]
fn a_server_the_store_does_not_trust_is_refused() {
    let Some(server) = TlsServer::start() else {
        return;
    };
    // The operating system's CAs do not include the test CA.
    let e = RedisStore::open(&server.url("localhost", PASSWORD), "tls").unwrap_err();
    assert_eq!(e.kind(), FailureKind::Connection, "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");
    assert!(!e.to_string().contains(PASSWORD), "{e}");
    // Another CA than the one that signed the server's certificate.
    let e = RedisStore::builder("tls")
        .server(&server.url("localhost", PASSWORD))
        .root_certificate_pem(pki().ca)
        .open()
        .unwrap_err();
    assert_eq!(e.kind(), FailureKind::Connection, "{e}");
    // A name the certificate does not carry (127.0.0.2 reaches the same loopback).
    let e = RedisStore::builder("tls")
        .server(&server.url("127.0.0.2", PASSWORD))
        .root_certificate_pem(server.ca.clone())
        .open();
    if let Err(e) = &e {
        assert_eq!(e.kind(), FailureKind::Connection, "{e}");
    } else {
        panic!("a certificate for localhost/127.0.0.1 was accepted for 127.0.0.2");
    }
    // A CA for a URL without TLS is a configuration error, not silently ignored.
    let e = RedisStore::builder("tls")
        .server(&format!("redis://127.0.0.1:{}", server.port))
        .root_certificate_pem(server.ca.clone())
        .open()
        .unwrap_err();
    assert_eq!(e.kind(), FailureKind::InvalidConfig, "{e}");
    // Plain TCP to the TLS port gets no answer it can read.
    let e = RedisStore::open(&format!("redis://127.0.0.1:{}", server.port), "tls").unwrap_err();
    assert_ne!(e.kind(), FailureKind::InvalidConfig, "{e}");
}
