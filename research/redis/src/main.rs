use ratesim::{Algorithm, Nanos, Rule, TokenBucket};
use redis::Script;
use redisproto::*;
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a[1].as_str() {
        "bench" => bench(&a[2], &a[3], a[4].parse().unwrap()),
        "hot" => hot(&a[2], &a[3], a[4].parse().unwrap(), a[5].parse().unwrap()),
        "diff" => diff(&a[2], a[3].parse().unwrap()),
        _ => panic!("bench ADDR MODE N | hot ADDR MODE THREADS SECS | diff ADDR N"),
    }
}

/// Uncontended latency of one decision, 1000 distinct keys, one connection.
fn bench(addr: &str, mode: &str, n: usize) {
    let mut con = connect(addr);
    let (tb_s, read_s, cas_s, log_s) = (Script::new(TB_LUA), Script::new(READ_LUA), Script::new(CAS_LUA), Script::new(LOG_LUA));
    // 1000/s, burst 100, 1 s window: mostly allowed at this request rate per key
    let tb = Tb { max: 1000, unit: 1_000_000_000, burst: 100 };
    let t0 = Instant::now();
    let mut lat = Vec::with_capacity(n);
    let mut cs = CasStats { round_trips: 0, retries: 0 };
    let mut caches: Vec<Option<String>> = vec![None; 1000];
    let keys: Vec<String> = (0..1000).map(|i| format!("b:{{c{i}}}:{mode}")).collect();
    let wall = Instant::now();
    for i in 0..n {
        let k = &keys[i % 1000];
        let now = t0.elapsed().as_nanos() as u64 + 1;
        lat.push(timed(|| match mode {
            "set" => { let _: () = redis::cmd("SET").arg(k).arg("0 1").query(&mut con).unwrap(); }
            "get" => { let _: Option<String> = redis::cmd("GET").arg(k).query(&mut con).unwrap(); }
            "lua_noop" => { let _: i64 = Script::new("return 1").invoke(&mut con).unwrap(); }
            "lua_tb_srv" => { lua_tb(&mut con, &tb_s, &tb, k, 1, None, "abs"); }
            "lua_tb_call" => { lua_tb(&mut con, &tb_s, &tb, k, 1, Some(now), "none"); }
            "cas_tb_srv" => { cas_tb(&mut con, &read_s, &cas_s, &tb, k, 1, None, None, &mut cs); }
            "cas_tb_call" => { cas_tb(&mut con, &read_s, &cas_s, &tb, k, 1, Some(now), None, &mut cs); }
            "cas_tb_call_cached" => { let c = &mut caches[i % 1000]; cas_tb(&mut con, &read_s, &cas_s, &tb, k, 1, Some(now), Some(c), &mut cs); }
            "module_tb" => { let _: Vec<i64> = redis::cmd("RS.TB").arg(k).arg(1000).arg(1_000_000_000u64).arg(100).arg(1).query(&mut con).unwrap(); }
            "lua_log_srv" => {
                let k2 = format!("{k}:h");
                let _: Vec<i64> = log_s.key(k).key(&k2).arg(100).arg(1_000_000_000u64).arg(1).arg("").arg("").arg("abs").invoke(&mut con).unwrap();
            }
            m => panic!("mode {m}"),
        }));
    }
    let secs = wall.elapsed().as_secs_f64();
    let (p50, p99) = stats(lat);
    let rt = if cs.round_trips > 0 { cs.round_trips as f64 / n as f64 } else { 1.0 };
    println!("{addr:<5} {mode:<20} n={n} p50={:.1}us p99={:.1}us ops/s={:.0} rt/decision={rt:.3}",
        p50 as f64 / 1e3, p99 as f64 / 1e3, n as f64 / secs);
}

/// One hot key, THREADS connections in this process, for SECS seconds, server time.
/// Prints admitted, decisions, round trips, CAS retries, and the server-time span.
fn hot(addr: &str, mode: &str, threads: usize, secs: f64) {
    let tb = Tb { max: 2000, unit: 1_000_000_000, burst: 50 }; // 2000/s burst 50
    let handles: Vec<_> = (0..threads).map(|_| {
        let addr = addr.to_string(); let mode = mode.to_string();
        std::thread::spawn(move || {
            let mut con = connect(&addr);
            let (tb_s, read_s, cas_s) = (Script::new(TB_LUA), Script::new(READ_LUA), Script::new(CAS_LUA));
            let mut cs = CasStats { round_trips: 0, retries: 0 };
            let (mut adm, mut dec, mut maxretry, mut cur_retry) = (0u64, 0u64, 0u64, 0u64);
            let mut lat = Vec::new();
            let end = Instant::now() + std::time::Duration::from_secs_f64(secs);
            while Instant::now() < end {
                let before = cs.retries;
                let t = Instant::now();
                let d = match mode.as_str() {
                    "lua" => lua_tb(&mut con, &tb_s, &tb, "hot:{x}", 1, None, "abs"),
                    "cas" => cas_tb(&mut con, &read_s, &cas_s, &tb, "hot:{x}", 1, None, None, &mut cs),
                    "module" => { let v: Vec<i64> = redis::cmd("RS.TB").arg("hot:{x}").arg(2000).arg(1_000_000_000u64).arg(50).arg(1).query(&mut con).unwrap();
                                  Dec { allowed: v[0] == 1, remaining: 0, retry: 0, reset: 0 } }
                    m => panic!("{m}"),
                };
                lat.push(t.elapsed().as_nanos() as u64);
                cur_retry = cs.retries - before; maxretry = maxretry.max(cur_retry);
                dec += 1; if d.allowed { adm += 1; }
            }
            let _ = cur_retry;
            (adm, dec, cs.round_trips, cs.retries, maxretry, lat)
        })
    }).collect();
    let mut con = connect(addr);
    let t_start: (String, String) = redis::cmd("TIME").query(&mut con).unwrap();
    let res: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let t_end: (String, String) = redis::cmd("TIME").query(&mut con).unwrap();
    let (adm, dec, rts, retries): (u64, u64, u64, u64) = res.iter().fold((0, 0, 0, 0), |a, r| (a.0 + r.0, a.1 + r.1, a.2 + r.2, a.3 + r.3));
    let maxr = res.iter().map(|r| r.4).max().unwrap();
    let lat: Vec<u64> = res.into_iter().flat_map(|r| r.5).collect();
    let (p50, p99) = stats(lat);
    println!("mode={mode} threads={threads} admitted={adm} decisions={dec} dec/s={:.0} rt/dec={:.3} retries/dec={:.4} max_retries_one_decision={maxr} p50={:.1}us p99={:.1}us t0={}.{:06} t1={}.{:06}",
        dec as f64 / secs, if rts > 0 { rts as f64 / dec as f64 } else { 1.0 }, retries as f64 / dec as f64, p50 as f64 / 1e3, p99 as f64 / 1e3,
        t_start.0, t_start.1.parse::<u64>().unwrap(), t_end.0, t_end.1.parse::<u64>().unwrap());
}

/// Differential exactness: Lua token bucket vs ratesim::TokenBucket on random streams with
/// caller instants, including rules at the representability bound and instants near u64::MAX.
fn diff(addr: &str, streams: usize) {
    let mut con = connect(addr);
    let sc = Script::new(TB_LUA);
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut rnd = move |m: u64| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; if m == 0 { x } else { x % m } };
    let (mut checked, mut refused) = (0u64, 0u64);
    for si in 0..streams {
        let window = match rnd(4) { 0 => 1 + rnd(1000), 1 => 1 + rnd(10_000_000_000), 2 => 3_600_000_000_000, _ => 86_400_000_000_000 };
        let max = 1 + match rnd(3) { 0 => rnd(10), 1 => rnd(100_000), _ => rnd(1 << 40) };
        let burst = 1 + match rnd(3) { 0 => rnd(10), 1 => rnd(1000), _ => rnd(1 << 30) };
        let cap = window as u128 * burst as u128;
        // the construction rule: refuse what doubles cannot hold exactly
        if cap + max as u128 > 1u128 << 53 || cap.div_ceil(max as u128) > 8_990_000_000_000_000 { refused += 1; continue; }
        let rule = Rule::new(max, Nanos::new(window)).unwrap().with_burst(burst).unwrap();
        let algo = TokenBucket::new(rule);
        let tb = Tb { max: max as u128, unit: window as u128, burst: burst as u128 };
        let key = format!("diff:{si}");
        let mut now: u64 = match rnd(3) { 0 => rnd(1000), 1 => rnd(1 << 62), _ => u64::MAX - rnd(1 << 50) - (1 << 50) };
        let mut state: Option<ratesim::algorithm::BucketState> = None;
        for _ in 0..200 {
            // steps: tiny, around the interval, long, or backwards
            let step = match rnd(5) { 0 => rnd(3), 1 => rnd(window / max.max(1) + 2), 2 => rnd(window.saturating_mul(2).max(1)), 3 => rnd(1 << 55), _ => 0 };
            if rnd(8) == 0 { now = now.saturating_sub(rnd(1 << 40)); } else { now = now.saturating_add(step); }
            let cost = match rnd(4) { 0 => 0, 1 => 1 + rnd(burst + 2), _ => 1 };
            let t = Nanos::new(now);
            let state = state.get_or_insert_with(|| algo.new_state(t));
            let allowed = algo.try_acquire(state, t, cost);
            let want = (allowed, algo.remaining(state, t),
                if allowed { 0 } else { algo.retry_after(state, t, cost).map_or(u64::MAX, |n| n.as_u64()) },
                algo.reset_after(state, t).as_u64());
            let d = lua_tb(&mut con, &sc, &tb, &key, cost, Some(now), "none");
            let got = (d.allowed, d.remaining, d.retry, d.reset);
            assert_eq!(got, want, "stream {si} rule max={max} W={window} burst={burst} now={now} cost={cost}");
            checked += 1;
        }
    }
    println!("diff: {checked} decisions identical (allowed, remaining, retry_after, reset_after) over {} streams; {refused} random rules refused at construction", streams as u64 - refused);
}
