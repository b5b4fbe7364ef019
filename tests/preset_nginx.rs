//! The `nginx` preset against a real nginx (Debian's 1.22): the test starts nginx on a
//! free loopback port with a generated config in a temp dir, sends requests at planned
//! instants, records each status with the instant it was sent, and replays those
//! instants through the preset (issue 28).
//!
//! nginx decides on a millisecond clock whose phase we do not know, and a request
//! reaches it some microseconds (on a loaded machine, sometimes milliseconds) after it
//! was sent. So the plan keeps every request at least 3 ms from a decision boundary
//! (the preset, fed the instants sent so far, must give the same answer 3 ms earlier
//! and later), and a disagreement counts as explained only when the preset's answer
//! flips within 1.5 ms of the send instant, or when nginx's own log shows that it saw
//! the request more than 2 ms late and the preset agrees at that instant.
//! Skips (loudly) without nginx, unless `RATESIM_REQUIRE_NGINX=1` or `CI=true`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ratesim::presets::{Nginx, NginxParams};
use ratesim::{Algorithm, Nanos, Outcome, Rule};

const MS: u64 = 1_000_000;

fn nginx_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

fn required() -> bool {
    std::env::var("RATESIM_REQUIRE_NGINX").is_ok_and(|v| v == "1")
        || std::env::var("CI").is_ok_and(|v| v == "true")
}

/// A throwaway nginx: pid, logs and temp paths in its own temp dir; stopped on drop.
struct Server {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl Server {
    fn start(binary: &Path, rate: &str, limit_req: &str) -> Server {
        let dir = tempfile::Builder::new()
            .prefix("ratesim-nginx")
            .tempdir()
            .expect("a temp dir");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let d = dir.path().display();
        std::fs::create_dir_all(dir.path().join("www")).unwrap();
        std::fs::write(dir.path().join("www/f"), "ok\n").unwrap();
        // `return 200` would answer before limit_req runs: serve a file instead.
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log notice;\nevents {{ worker_connections 512; }}\n\
             http {{\n  log_format t '$arg_i $msec $request_time $status';\n\
             access_log {d}/access.log t;\n  client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             limit_req_zone $arg_k zone=z:1m rate={rate};\n  limit_req_status 429;\n\
             server {{\n    listen 127.0.0.1:{port};\n    root {d}/www;\n\
             location / {{ limit_req zone=z {limit_req}; }}\n  }}\n}}\n"
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(binary)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let server = Server { child, dir, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nginx did not listen within 10 s; its log: {}",
                std::fs::read_to_string(server.dir.path().join("error.log")).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// `(id, arrival in wall-clock ns, ns nginx took)` per request, from nginx's access
    /// log: `$msec` (when the request ended) minus `$request_time` (ms resolution).
    fn log(&self) -> Vec<(usize, u64, u64)> {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap();
        text.lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                let ms = |s: &str| -> Option<u64> {
                    let (a, b) = s.split_once('.')?;
                    Some(a.parse::<u64>().ok()? * 1000 + b.parse::<u64>().ok()?)
                };
                let end = ms(f.get(1)?)?;
                let took = ms(f.get(2)?)?;
                Some((f[0].parse().ok()?, (end - took) * MS, took * MS))
            })
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request as sent and answered.
#[derive(Debug, Clone, Copy)]
struct Sent {
    /// ns after the run's origin, taken just before the request's bytes were written.
    at: u64,
    status: u16,
    /// ns from `at` to the response's first bytes.
    took: u64,
}

fn kind(o: Outcome) -> u8 {
    match o {
        Outcome::Allowed => 0,
        Outcome::Delayed(_) => 1,
        Outcome::Denied => 2,
    }
}

/// xorshift64*: reproducible plans.
struct Gen(u64);

impl Gen {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % below.max(1)
    }
}

fn sleep_until(origin: Instant, at: u64) {
    let target = origin + Duration::from_nanos(at);
    loop {
        let now = Instant::now();
        if now >= target {
            return;
        }
        let left = target - now;
        if left > Duration::from_micros(300) {
            thread::sleep(left - Duration::from_micros(200));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Drives `server` with `count` requests planned against `preset`; returns what was
/// sent and the wall-clock instant of the origin.
fn drive(server: &Server, preset: &Nginx, count: usize, seed: u64) -> (Vec<Sent>, u64) {
    let mut plan = Gen(seed | 1);
    let mut state = preset.new_state(Nanos::ZERO);
    let origin_wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let origin = Instant::now();
    let mut readers = Vec::new();
    let mut next = 20 * MS;
    let mut burst_left = 0;
    for i in 0..count {
        // Shift the candidate until the preset answers alike 3 ms either side.
        let mut t = next;
        for _ in 0..50 {
            let at = |x: u64| kind(preset.acquire(&mut { state }, Nanos::new(x), 1));
            if at(t - 3 * MS) == at(t) && at(t) == at(t + 3 * MS) {
                break;
            }
            t += 4 * MS;
        }
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        stream.set_nodelay(true).unwrap();
        let request = format!("GET /f?k=a&i={i} HTTP/1.0\r\nHost: ratesim\r\n\r\n");
        sleep_until(origin, t);
        let sent = origin.elapsed().as_nanos() as u64;
        stream.write_all(request.as_bytes()).expect("send");
        preset.acquire(&mut state, Nanos::new(sent), 1);
        readers.push(thread::spawn(move || {
            let mut first = [0u8; 12];
            stream.read_exact(&mut first).expect("a status line");
            let took = origin.elapsed().as_nanos() as u64 - sent;
            let status = std::str::from_utf8(&first[9..12]).unwrap().parse().unwrap();
            Sent {
                at: sent,
                status,
                took,
            }
        }));
        // Bursts of requests 6 ms apart, between gaps of 10 to 150 ms.
        if burst_left == 0 && plan.next(10) < 3 {
            burst_left = 2 + plan.next(7);
        }
        next = sent.max(t)
            + if burst_left > 0 {
                burst_left -= 1;
                6 * MS
            } else {
                (10 + plan.next(140)) * MS
            };
    }
    let sent = readers.into_iter().map(|r| r.join().unwrap()).collect();
    (sent, origin_wall)
}

struct Verdict {
    compared: usize,
    identical: usize,
    unexplained: Vec<String>,
    delays_checked: usize,
    delays_within: usize,
    worst_delay_error_ms: f64,
    /// Admitted responses that came more than 2 ms before the preset's delay.
    early: usize,
    /// Disagreements explained by nginx seeing the request late.
    stalls: usize,
    kinds: [usize; 3],
}

/// Replays the sent instants through a fresh preset and compares every decision.
fn judge(preset: &Nginx, sent: &[Sent], log: &[(usize, u64, u64)], origin_wall: u64) -> Verdict {
    let mut state = preset.new_state(Nanos::ZERO);
    let mut v = Verdict {
        compared: 0,
        identical: 0,
        unexplained: Vec::new(),
        delays_checked: 0,
        delays_within: 0,
        worst_delay_error_ms: 0.0,
        early: 0,
        stalls: 0,
        kinds: [0; 3],
    };
    for (i, s) in sent.iter().enumerate() {
        let before = state;
        let model = preset.acquire(&mut state, Nanos::new(s.at), 1);
        v.kinds[kind(model) as usize] += 1;
        v.compared += 1;
        let real_admitted = s.status == 200;
        assert!(
            s.status == 200 || s.status == 429,
            "request {i}: unexpected status {}",
            s.status
        );
        if real_admitted == model.admitted() {
            v.identical += 1;
            if model.admitted() {
                // The response comes when nginx's timer fires: its delay (or its
                // absence) shows in the response time.
                // A response late by a client-side stall counts by nginx's own
                // `$request_time` (ms resolution), which the client's scheduling cannot
                // delay; none may come early.
                let d = model.delay().as_u64() as f64 / 1e6;
                v.delays_checked += 1;
                let took = s.took as f64 / 1e6;
                let by_nginx = log.iter().find(|l| l.0 == i).map(|l| l.2 as f64 / 1e6);
                let err = match by_nginx {
                    Some(n) if took - d > 5.0 => n - d,
                    _ => took - d,
                };
                v.worst_delay_error_ms = v.worst_delay_error_ms.max(err.abs());
                if took < d - 2.0 {
                    v.early += 1;
                }
                if err.abs() <= 5.0 {
                    v.delays_within += 1;
                }
            }
            continue;
        }
        let at = |x: u64| preset.acquire(&mut { before }, Nanos::new(x), 1).admitted();
        let near_boundary = at(s.at.saturating_sub(1_500_000)) != at(s.at + 1_500_000);
        let seen = log.iter().find(|(id, _, _)| *id == i).map(|(_, w, _)| *w);
        let late = seen
            .map(|w| w.saturating_sub(origin_wall))
            .filter(|&w| w > s.at + 2 * MS);
        let stall = late.is_some_and(|w| at(w) == real_admitted);
        v.stalls += usize::from(stall && !near_boundary);
        if !(near_boundary || stall) {
            v.unexplained.push(format!(
                "request {i} sent at {:.3} ms: nginx {}, preset {model:?} (nginx saw it at {:?} ms)",
                s.at as f64 / 1e6,
                s.status,
                seen.map(|w| w.saturating_sub(origin_wall) as f64 / 1e6)
            ));
        } else {
            eprintln!(
                "explained: request {i} at {:.3} ms, nginx {}, preset {model:?} ({})",
                s.at as f64 / 1e6,
                s.status,
                if near_boundary {
                    "within 1.5 ms of a boundary"
                } else {
                    "nginx saw it late"
                }
            );
        }
    }
    v
}

/// One nginx at a time: three servers and their clients at once on a loaded 2-core
/// machine only add scheduling noise.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn differential(name: &str, rate: &str, rule: Rule, limit_req: &str, params: NginxParams) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(binary) = nginx_binary() else {
        assert!(
            !required(),
            "RATESIM_REQUIRE_NGINX=1 or CI=true, but nginx is not installed"
        );
        eprintln!("SKIPPED: nginx not found (apt-get install nginx)");
        println!("SKIPPED: nginx not found (apt-get install nginx)");
        return;
    };
    let preset = Nginx::new(rule, params);
    assert_eq!(
        preset.rate().text,
        rate,
        "the preset writes the rate nginx gets"
    );
    let mut attempt = 0;
    let v = loop {
        let server = Server::start(&binary, rate, limit_req);
        let (sent, origin_wall) = drive(&server, &preset, 200, 0x5EED ^ rate.len() as u64);
        thread::sleep(Duration::from_millis(100));
        let log = server.log();
        drop(server);
        let v = judge(&preset, &sent, &log, origin_wall);
        // A machine stall (nginx saw requests late, by its own log) can flip a few
        // decisions in a row, and a stall the log cannot show (a request read late in
        // the same millisecond it was logged) leaves the preset's state one request off
        // for the rest of the burst. Such a run is repeated once, from a fresh server,
        // and says so; the second run must pass on its own.
        attempt += 1;
        let agrees = v.unexplained.is_empty() && v.identical * 1000 >= v.compared * 995;
        if agrees || attempt == 2 {
            break v;
        }
        eprintln!(
            "nginx {name}: {} unexplained of {} ({} requests reached nginx late, a machine \
             stall); running again",
            v.unexplained.len(),
            v.compared,
            v.stalls
        );
    };
    let share = v.identical as f64 / v.compared as f64;
    eprintln!(
        "nginx {name} (rate={rate} {limit_req}): {}/{} identical ({:.1} %); preset said \
         allowed {}, delayed {}, denied {}; response time within 5 ms of the preset's delay: {}/{} (worst {:.2} ms)",
        v.identical,
        v.compared,
        100.0 * share,
        v.kinds[0],
        v.kinds[1],
        v.kinds[2],
        v.delays_within,
        v.delays_checked,
        v.worst_delay_error_ms
    );
    assert!(v.unexplained.is_empty(), "{}", v.unexplained.join("\n"));
    assert!(share >= 0.995, "agreement {share} is under 99.5 %");
    assert!(
        v.early == 0 && v.delays_within * 100 >= v.delays_checked * 75,
        "the response times must show nginx's delays: none early, most within 5 ms \
         (a busy machine makes some late)"
    );
    let denied = v.kinds[2];
    assert!(denied >= 5, "the plan must reach the refusals ({denied})");
}

#[test]
fn nginx_preset_matches_nginx_in_its_default_delaying_mode() {
    let params = NginxParams {
        burst: 4,
        nodelay: false,
        delay: 0,
    };
    let rule = Rule::new(20, Nanos::from_secs(1)).unwrap();
    differential("default (delays)", "20r/s", rule, "burst=4", params);
}

#[test]
fn nginx_preset_matches_nginx_with_nodelay() {
    let params = NginxParams {
        burst: 3,
        nodelay: true,
        delay: 0,
    };
    let rule = Rule::new(25, Nanos::from_secs(1)).unwrap();
    differential("nodelay", "25r/s", rule, "burst=3 nodelay", params);
}

#[test]
fn nginx_preset_matches_nginx_with_delay_n() {
    let params = NginxParams {
        burst: 5,
        nodelay: false,
        delay: 2,
    };
    let rule = Rule::new(1000, Nanos::from_secs(60)).unwrap();
    differential("delay=2", "1000r/m", rule, "burst=5 delay=2", params);
}
