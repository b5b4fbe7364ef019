//! Prototype helpers: connections, the scripts, a token-bucket mirror with a byte codec
//! (what a library `StateCodec` would give the CAS store), and latency statistics.
use redis::{Connection, Script, Value};
use std::time::Instant;

pub const TB_LUA: &str = include_str!("../lua/token_bucket.lua");
pub const CAS_LUA: &str = include_str!("../lua/cas.lua");
pub const READ_LUA: &str = include_str!("../lua/read_time.lua");
pub const LOG_LUA: &str = include_str!("../lua/sliding_log.lua");

/// "unix:/path" or "tcp:PORT"
pub fn connect(addr: &str) -> Connection {
    let url = if let Some(p) = addr.strip_prefix("unix:") {
        format!("redis+unix://{p}")
    } else {
        format!("redis://127.0.0.1:{}", addr.strip_prefix("tcp:").unwrap())
    };
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// Token bucket in token·ns units, identical to ratesim's (tested against it in `diff`).
#[derive(Clone, Copy)]
pub struct Tb { pub max: u128, pub unit: u128, pub burst: u128 }
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TbState { pub level: u128, pub last: u64 }
pub struct Dec { pub allowed: bool, pub remaining: u64, pub retry: u64, pub reset: u64 }

impl Tb {
    pub fn cap(&self) -> u128 { self.unit * self.burst }
    pub fn fresh(&self, now: u64) -> TbState { TbState { level: self.cap(), last: now } }
    fn wait(&self, units: u128, from: u64, now: u64) -> u64 {
        let at = from as u128 + units.div_ceil(self.max);
        u64::try_from(at.saturating_sub(now as u128)).unwrap_or(u64::MAX)
    }
    pub fn decide(&self, s: &mut TbState, now: u64, cost: u64) -> Dec {
        let t = now.max(s.last);
        let level = s.level.saturating_add((t - s.last) as u128 * self.max).min(self.cap());
        let need = cost as u128 * self.unit;
        let allowed = need <= level;
        let level = if allowed { level - need } else { level };
        *s = TbState { level, last: t };
        let retry = if allowed { 0 } else if cost as u128 > self.burst { u64::MAX } else { self.wait(need - level, t, now) };
        Dec { allowed, remaining: (level / self.unit) as u64, retry, reset: self.wait(self.cap() - level, t, now) }
    }
    /// The absolute instant (ns) at which the state is idle; PEXPIREAT = ceil(that / 1 ms).
    pub fn idle_at(&self, s: &TbState) -> u128 { s.last as u128 + (self.cap() - s.level).div_ceil(self.max) }
}
impl TbState {
    pub fn encode(&self) -> String { format!("{} {}", self.level, self.last) }
    pub fn decode(b: &str) -> TbState {
        let (a, l) = b.split_once(' ').unwrap();
        TbState { level: a.parse().unwrap(), last: l.parse().unwrap() }
    }
}

pub fn split(now: u64) -> (u64, u64) { (now / 1_000_000_000, now % 1_000_000_000) }
pub fn server_ns(s: &str, us: &str) -> u64 { s.parse::<u64>().unwrap() * 1_000_000_000 + us.parse::<u64>().unwrap() * 1000 }

/// Lua token bucket call. `now = None` reads server TIME.
pub fn lua_tb(con: &mut Connection, sc: &Script, tb: &Tb, key: &str, cost: u64, now: Option<u64>, ttl: &str) -> Dec {
    let cost_arg = cost.min(tb.burst as u64 + 1);
    let mut inv = sc.key(key);
    inv.arg(tb.max as u64).arg(tb.unit as u64).arg(tb.burst as u64).arg(cost_arg);
    match now {
        Some(t) => { let (s, n) = split(t); inv.arg(s).arg(n); }
        None => { inv.arg("").arg(""); }
    }
    inv.arg(ttl);
    let v: Vec<i64> = inv.invoke(con).unwrap();
    let from = v[4] as u128 * 1_000_000_000 + v[5] as u128;
    let now_v = now.map(|t| t as u128).unwrap_or(from);
    let back = from.saturating_sub(now_v);
    let add = |w: i64| -> u64 { if w < 0 { u64::MAX } else { u64::try_from(back + w as u128).unwrap_or(u64::MAX) } };
    Dec { allowed: v[0] == 1, remaining: v[1] as u64, retry: if v[0] == 1 { 0 } else { add(v[2]) }, reset: add(v[3]) }
}

pub struct CasStats { pub round_trips: u64, pub retries: u64 }

/// Generic CAS decision: read (state + TIME) then compare-and-set; `cache` holds the
/// last state this client saw (caller-instant mode only: skips the read when it is right).
pub fn cas_tb(con: &mut Connection, read: &Script, cas: &Script, tb: &Tb, key: &str, cost: u64,
              now: Option<u64>, cache: Option<&mut Option<String>>, st: &mut CasStats) -> Dec {
    let (mut cur, mut t): (String, u64);
    let mut cache = cache;
    match (now, cache.as_deref().and_then(|c| c.clone())) {
        (Some(n), Some(c)) => { cur = c; t = n; }
        _ => {
            let v: (String, String, String) = read.key(key).invoke(con).unwrap();
            st.round_trips += 1;
            cur = v.0; t = now.unwrap_or_else(|| server_ns(&v.1, &v.2));
        }
    }
    loop {
        let mut s = if cur.is_empty() { tb.fresh(t) } else { TbState::decode(&cur) };
        let d = tb.decide(&mut s, t, cost);
        let idle = d.reset == 0;
        let new = if idle { String::new() } else { s.encode() };
        let ttl = if now.is_none() && !idle { tb.idle_at(&s).div_ceil(1_000_000).to_string() } else { String::new() };
        let r: Value = cas.key(key).arg(&cur).arg(&new).arg(ttl).invoke(con).unwrap();
        st.round_trips += 1;
        let arr = match r { Value::Array(a) => a, other => panic!("{other:?}") };
        if arr.len() == 1 {
            if let Some(c) = cache.as_deref_mut() { *c = Some(new); }
            return d;
        }
        st.retries += 1;
        let g = |v: &Value| -> String { redis::from_redis_value_ref::<String>(v).unwrap() };
        cur = g(&arr[1]);
        t = now.unwrap_or_else(|| server_ns(&g(&arr[2]), &g(&arr[3])));
    }
}

pub fn stats(mut v: Vec<u64>) -> (u64, u64) {
    v.sort_unstable();
    (v[v.len() / 2], v[v.len() * 99 / 100])
}
pub fn timed(mut f: impl FnMut()) -> u64 { let t = Instant::now(); f(); t.elapsed().as_nanos() as u64 }
