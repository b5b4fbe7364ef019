//! Every preset's documented edges, in the light library (no simulator): the states
//! the decision functions reach, read back through `remaining`, `retry_after` and
//! `reset_after`, at inputs where the documented rule and its nearest wrong neighbours
//! (`<` / `<=`, a floor / a ceiling, counted / uncounted) give different answers. The
//! `presets` mutation area (scripts/mutants.sh) runs this file without the `cli` build;
//! tests/edges/presets.rs has the same kind of tests through the simulator.

use ratesim::presets::{
    ALIGNED, EnvoyLocal, EnvoyRateLimit, EpochOffset, Governor, Haproxy,
    LimitsSlidingWindowCounter, Nginx, NginxParams, aligned_entries,
};
use ratesim::{Algorithm, BoxedAlgorithm, Nanos, Outcome, Rule};

fn rule(n: u64, window_ns: u64, burst: u64) -> Rule {
    Rule::new(n, Nanos::new(window_ns))
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

/// governor's `remaining` is how many single requests would pass now: `⌊(t + τ − TAT) /
/// T⌋ + 1`, capped at `B`, and 0 while `t + τ < TAT`. 3 per 3,000 ns, burst 3: T = 1,000,
/// τ = 2,000; three at 0 leave TAT = 3,000. Rules out a count off by one at the edge
/// (1 at 1,000 ns, where the slack is exactly 0), a rounded-up quotient (2 at 1,500),
/// and no cap (5 at 5,000).
#[test]
fn governor_remaining_counts_whole_intervals_of_slack_and_caps_at_the_burst() {
    let g = Governor::new(rule(3, 3_000, 3));
    let mut s = g.new_state(Nanos::ZERO);
    for _ in 0..3 {
        assert!(g.try_acquire(&mut s, Nanos::ZERO, 1));
    }
    let at = |t: u64| g.remaining(&s, Nanos::new(t));
    let got: Vec<u64> = [0, 999, 1_000, 1_500, 1_999, 2_000, 2_500, 5_000]
        .into_iter()
        .map(at)
        .collect();
    assert_eq!(got, [0, 0, 1, 1, 1, 2, 2, 3]);
}

/// A small deterministic generator (xorshift64*), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rules whose windows are whole seconds and milliseconds (envoy's units, nginx's and
/// envoy_local's millisecond clocks) and odd ones (`W / N` not whole), bursts above and
/// below `N`.
fn contract_rules() -> Vec<Rule> {
    let ms = 1_000_000;
    vec![
        rule(3, 1_000 * ms, 1),
        rule(3, 1_000 * ms, 5),
        rule(5, 60_000 * ms, 2),
        rule(2, 100 * ms, 3),
        rule(7, 1_000 * ms + 333_333, 4),
        rule(1, 250 * ms, 1),
    ]
}

/// Times on a stream: gaps of 0, a fraction of the window, about a window, a jump, and
/// now and then a reading 0–2 ms in the past (a backwards clock).
fn stream(rng: &mut Rng, window: u64, len: usize) -> Vec<(Nanos, u64)> {
    let mut t = 1_000_000_000 + rng.below(window);
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        t += match rng.below(10) {
            0..=3 => 0,
            4..=6 => rng.below(window / 3 + 1),
            7 | 8 => window - window / 10 + rng.below(window / 5 + 1),
            _ => rng.below(3 * window),
        };
        let now = if rng.below(12) == 0 {
            t - rng.below(2_000_001)
        } else {
            t
        };
        let cost = match rng.below(9) {
            0 => 0,
            1 | 2 => rng.below(6) + 1,
            _ => 1,
        };
        out.push((Nanos::new(now), cost));
    }
    out
}

/// The number of single requests that pass *at once* (not delayed) one after another
/// at `now`, up to one more than the capacity.
fn passes_at_once(a: &BoxedAlgorithm, s: &<BoxedAlgorithm as Algorithm>::State, now: Nanos) -> u64 {
    let mut probe = s.clone();
    let mut k = 0;
    while k <= a.capacity() && a.acquire(&mut probe, now, 1) == Outcome::Allowed {
        k += 1;
    }
    k
}

/// Every preset keeps the library's contract on streams with off-grid times, costs
/// from 0 to above the capacity and backwards readings: `would_pass` answers what
/// `try_acquire` would, on a state left as it is; `retry_after` is zero exactly when
/// the request passes now, and otherwise the exact wait (it passes then, and not a
/// nanosecond before); `remaining` is how many single requests pass at once, one after
/// another; after `reset_after` the quota is full, a nanosecond before it is not. Rules
/// out a `would_pass` that answers a constant or forgets the window or the count, a
/// wait off by one either way, and a `remaining` off by one or uncapped.
#[test]
fn every_preset_answers_would_pass_remaining_and_its_waits_as_its_decisions_do() {
    let registry = ratesim::Registry::standard();
    let presets = registry.resolve(&["presets"]).unwrap();
    assert!(presets.len() >= 9, "{presets:?}");
    for name in presets {
        for (i, r) in contract_rules().into_iter().enumerate() {
            let a = registry.create(&name, r).unwrap();
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ i as u64);
            let steps = stream(&mut rng, r.window().as_u64(), 300);
            let mut s = a.new_state(steps[0].0);
            for (step, (now, cost)) in steps.into_iter().enumerate() {
                let ctx = format!("{name}, rule {i}, step {step}: cost {cost} at {now}");
                let passes = a.try_acquire(&mut s.clone(), now, cost);
                assert_eq!(a.would_pass(&s, now, cost), passes, "{ctx}");
                let wait = a.retry_after(&s, now, cost);
                assert_eq!(wait == Some(Nanos::ZERO), passes, "{ctx}: {wait:?}");
                if let Some(w) = wait.filter(|w| *w > Nanos::ZERO) {
                    assert!(a.would_pass(&s, now + w, cost), "{ctx}: not after {w}");
                    let early = now + w - Nanos::new(1);
                    assert!(!a.would_pass(&s, early, cost), "{ctx}: 1 ns before {w}");
                }
                let remaining = a.remaining(&s, now);
                assert_eq!(remaining, passes_at_once(&a, &s, now), "{ctx}: remaining");
                let full = a.reset_after(&s, now);
                let cap = a.capacity();
                assert_eq!(a.remaining(&s, now + full), cap, "{ctx}: after {full}");
                if full > Nanos::ZERO {
                    let before = now + full - Nanos::new(1);
                    assert!(a.remaining(&s, before) < cap, "{ctx}: 1 ns before {full}");
                }
                a.try_acquire(&mut s, now, cost);
            }
        }
    }
}

/// Each preset answers to the name it is registered under (the name the scenarios,
/// the reports and the CSV columns use) and keeps the rule it was built with.
#[test]
fn every_preset_keeps_its_registered_name_and_its_rule() {
    let registry = ratesim::Registry::standard();
    for name in registry.resolve(&["presets"]).unwrap() {
        for r in contract_rules() {
            let a = registry.create(&name, r).unwrap();
            assert_eq!(a.name(), name);
            assert_eq!(*a.rule(), r, "{name}");
        }
    }
}

/// governor, envoy, envoy_local and HAProxy treat a backwards clock as the latest
/// instant seen, and a key's state counts the instant it was created as seen, so a
/// reading from before it (another thread's older clock reading) is treated as that
/// instant: every answer (a wait ends at the same instant, the creation at the
/// earliest), and the state a request leaves, are those at the creation instant.
/// Rules out a fresh state that starts at time 0 (or forgets when it was made). (nginx
/// has its own rule for a clock that went back; `limits` and tower keep no such
/// instant.)
#[test]
fn a_reading_from_before_a_keys_creation_is_treated_as_its_creation() {
    let registry = ratesim::Registry::standard();
    let ms = 1_000_000;
    for name in ["governor", "envoy", "envoy_local", "haproxy"] {
        for (i, r) in contract_rules().into_iter().enumerate() {
            let a = registry.create(name, r).unwrap();
            let created = Nanos::new(5_000 * ms + 700 * ms + 12_345);
            for back in [1, 300 * ms + 1, 1_200 * ms] {
                let early = created - Nanos::new(back);
                let ctx = format!("{name}, rule {i}: {back} ns before creation");
                let (mut at, mut before) = (a.new_state(created), a.new_state(created));
                for cost in [1, 2, 1, 3, 1, 1] {
                    assert_eq!(
                        a.remaining(&before, early),
                        a.remaining(&at, created),
                        "{ctx}"
                    );
                    assert_eq!(
                        a.retry_after(&before, early, cost)
                            .map(|w| (early + w).max(created)),
                        a.retry_after(&at, created, cost).map(|w| created + w),
                        "{ctx}: cost {cost}"
                    );
                    assert_eq!(
                        a.acquire(&mut before, early, cost).admitted(),
                        a.acquire(&mut at, created, cost).admitted(),
                        "{ctx}: cost {cost}"
                    );
                }
                let later = created + Nanos::new(400 * ms);
                assert_eq!(
                    a.remaining(&before, later),
                    a.remaining(&at, later),
                    "{ctx}"
                );
                assert_eq!(
                    a.reset_after(&before, later),
                    a.reset_after(&at, later),
                    "{ctx}"
                );
            }
        }
    }
}

/// Envoy refuses a token bucket whose `fill_interval` is under 50 ms and takes 50 ms
/// itself ("must be >= 50ms"): the preset says so for 49.999999 ms and not for exactly
/// 50 ms. Rules out a bound that also flags 50 ms.
#[test]
fn envoy_local_flags_a_fill_interval_under_fifty_ms_and_not_fifty_ms_itself() {
    let note = |ns: u64| EnvoyLocal::new(rule(5, ns, 5)).interval_note();
    assert_eq!(note(50_000_000), None);
    let under = note(49_999_999).expect("under 50 ms is flagged");
    assert!(under.contains(">= 50ms"), "{under}");
}

/// nginx's `rate=` for a rule: `r/s` when `N per W` is a whole number per second, else
/// `r/m`, rounded to the nearest whole one when it is not exact, and the run says so.
/// 5 per 1 s is `5r/s` (5,000 thousandths a second); 3 per 2 s is `90r/m` (1,500); 1 per
/// 7 s is 8.57 r/m, so `9r/m` (150), inexact and noted; 1,000 per 1 s is `1000r/s`,
/// far below the cap of `u64::MAX / 1000` where nginx's parser saturates. Rules out a
/// rate of 0 for a whole `r/s`, a floored `r/m` (`8r/m`), a cap that bites early, and
/// a note that is missing, empty or always there.
#[test]
fn nginx_writes_a_rule_as_whole_r_per_s_or_the_nearest_r_per_m_and_notes_the_rounding() {
    let s = 1_000_000_000;
    let cases = [
        (5, s, "5r/s", 5_000, true),
        (1_000, s, "1000r/s", 1_000_000, true),
        (3, 2 * s, "90r/m", 1_500, true),
        (1, 7 * s, "9r/m", 150, false),
    ];
    for (n, w, text, milli, exact) in cases {
        let nginx = Nginx::new(rule(n, w, 1), NginxParams::default());
        let rate = nginx.rate();
        assert_eq!(
            (rate.text.as_str(), rate.milli_per_sec, rate.exact),
            (text, milli, exact),
            "{n} per {w} ns"
        );
        match nginx.rounding_note() {
            None => assert!(exact, "{n} per {w} ns: no note"),
            Some(note) => {
                assert!(!exact, "{n} per {w} ns: {note}");
                assert!(note.contains("modelled as rate=9r/m"), "{note}");
            }
        }
    }
}

/// HAProxy takes a period under 2³¹ ms: 2³¹ − 1 ms is a period it accepts as written (no
/// note), 2³¹ ms is not (the note says it is too long). Rules out a bound that flags
/// the longest period HAProxy accepts, or only the first one past it.
#[test]
fn haproxy_flags_a_period_of_two_to_the_31_ms_and_not_one_ms_less() {
    let ms = 1_000_000;
    let note = |period_ms: u64| Haproxy::new(rule(5, period_ms * ms, 5)).rounding_note();
    assert_eq!(note(0x7FFF_FFFF), None);
    for long in [0x8000_0000, 0x8000_0001] {
        let said = note(long).expect("2^31 ms or more is flagged");
        assert!(said.contains("longer than HAProxy accepts"), "{said}");
    }
}

/// `Haproxy::rate` reads `sc_http_req_rate` as HAProxy does: inside the first period the
/// hits so far (3 after three hits, whatever the empty previous period); half a period
/// into the next, the previous period weighted by what is left of it, floored (3 · ½ →
/// 1); and HAProxy's low-rate correction, a previous period of 1 hit read as 1 rather
/// than weighted down to 0. Rules out the correction applied while the current period
/// has hits (0 instead of 3), the weighting skipped, and the correction dropped.
#[test]
fn haproxy_reads_its_rate_weighted_with_the_low_rate_correction() {
    let ms = 1_000_000;
    let h = Haproxy::new(rule(5, 1_000 * ms, 5));
    let hits = |n: u64| {
        let mut s = h.new_state(Nanos::ZERO);
        for _ in 0..n {
            assert!(h.try_acquire(&mut s, Nanos::new(2 * ms), 1));
        }
        s
    };
    let (three, one) = (hits(3), hits(1));
    let at = |t_ms: u64| Nanos::new(t_ms * ms);
    assert_eq!(h.rate(&three, at(10)), 3);
    assert_eq!(h.rate(&three, at(600)), 3);
    assert_eq!(h.rate(&three, at(1_500)), 1, "3 weighted by about ½");
    assert_eq!(h.rate(&one, at(1_500)), 1, "the low-rate correction");
    assert_eq!(h.rate(&one, at(2_500)), 0, "two periods on");
}

/// An [`EpochOffset`] gives back the instant it was made from, before the epoch too.
/// Rules out an accessor that answers a constant (0, 1 or −1).
#[test]
fn an_epoch_offset_gives_back_its_instant() {
    for ns in [
        1_700_000_000_123_456_789i128,
        -7,
        2,
        i128::from(u64::MAX) * 3,
    ] {
        assert_eq!(EpochOffset::from_nanos(ns).as_nanos(), ns);
    }
}

/// The entries the simulator puts over the standard ones when a run's t = 0 lies
/// elsewhere on the wall clock (`aligned_entries`): one per preset in `ALIGNED`, under
/// its name, a preset counting refusals as the standard entry does, and built at that
/// origin: on a stream its decisions are those of the preset's `at(rule, origin)`,
/// which differ from the standard entry's (t = 0 at the epoch). The origin lies 0.5 s
/// and one odd millisecond past a whole second, so envoy's and `limits`' windows and
/// HAProxy's millisecond parity all move (for HAProxy, `N` hits at t = 0 and one at
/// t = W: at the origin the second period has begun a millisecond earlier and the
/// first weighs `N · (W − 1 ms) / W`, floored to `N − 1`, so the hit passes; at the
/// epoch it weighs `N` and the hit is refused). Rules out no entries, an entry that is not
/// the preset, and an entry built at the epoch.
#[test]
fn the_aligned_entries_build_each_wall_clock_preset_at_the_origin() {
    let origin = EpochOffset::from_nanos(1_700_000_000_501_000_000);
    let entries = aligned_entries(origin);
    let mut names: Vec<&str> = entries.iter().map(|e| e.name()).collect();
    names.sort_unstable();
    let mut want = ALIGNED.to_vec();
    want.sort_unstable();
    assert_eq!(names, want);
    let standard = ratesim::Registry::standard();
    for e in &entries {
        let name = e.name();
        let at_epoch = standard.entry(name).unwrap();
        assert!(e.is_preset(), "{name}");
        assert_eq!(e.counts_denials(), at_epoch.counts_denials(), "{name}");
        let mut differs = false;
        for (i, r) in contract_rules().into_iter().enumerate() {
            let direct = match name {
                "envoy" => BoxedAlgorithm::new(EnvoyRateLimit::at(r, origin)),
                "haproxy" => BoxedAlgorithm::new(Haproxy::at(r, origin)),
                _ => BoxedAlgorithm::new(LimitsSlidingWindowCounter::at(r, origin)),
            };
            let [a, d, z] = [e.create(r), direct, at_epoch.create(r)];
            let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ i as u64);
            let steps = stream(&mut rng, r.window().as_u64(), 300);
            let start = steps[0].0;
            let (mut sa, mut sd, mut sz) =
                (a.new_state(start), d.new_state(start), z.new_state(start));
            for (step, (now, cost)) in steps.into_iter().enumerate() {
                let got = a.try_acquire(&mut sa, now, cost);
                assert_eq!(
                    got,
                    d.try_acquire(&mut sd, now, cost),
                    "{name}, rule {i}, step {step}"
                );
                differs |= got != z.try_acquire(&mut sz, now, cost);
            }
            // N at t = 0, then one at t = W: HAProxy's period started a millisecond
            // earlier on the odd millisecond, so less of the first period weighs.
            let (mut sa, mut sz) = (a.new_state(Nanos::ZERO), z.new_state(Nanos::ZERO));
            for _ in 0..r.max_requests() {
                a.try_acquire(&mut sa, Nanos::ZERO, 1);
                z.try_acquire(&mut sz, Nanos::ZERO, 1);
            }
            let w = r.window();
            differs |= a.try_acquire(&mut sa, w, 1) != z.try_acquire(&mut sz, w, 1);
        }
        assert!(differs, "{name}: the origin changed no decision");
    }
}

/// HAProxy's milliseconds are the wall clock's, parity included: t = 0 lies `origin mod
/// 2 ms` past an even millisecond (`Haproxy::at`), and an instant's millisecond counts
/// that phase in, to the nanosecond. 3 per 1 s, three hits at t = 0 start a period at
/// the even millisecond at or before t = 0; one more is room again once the second
/// period has begun and less than all of the first weighs, i.e. from millisecond 1,001
/// of that count. From an even millisecond (origin 0, 2 ms, or the Unix time
/// 1,700,000,000 s) that is t = 1,001 ms; from an odd one (1 ms, 3 ms, 1,700,000,000.001
/// s) a millisecond earlier, t = 1,000 ms; from 1.5 ms past an even one, t = 999.5 ms.
/// Rules out a phase taken modulo anything but 2 ms, a phase rounded to whole
/// milliseconds, and a phase not added to the instant's own fraction of a millisecond.
#[test]
fn haproxy_counts_its_milliseconds_from_the_wall_clocks_phase() {
    let ms = 1_000_000;
    let cases = [
        (0, 1_001 * ms),
        (2 * ms, 1_001 * ms),
        (1_700_000_000_000 * ms, 1_001 * ms),
        (ms, 1_000 * ms),
        (3 * ms, 1_000 * ms),
        (1_700_000_000_001 * ms, 1_000 * ms),
        (3 * ms / 2, 999 * ms + ms / 2),
    ];
    for (origin, room_at) in cases {
        let h = Haproxy::at(
            rule(3, 1_000 * ms, 3),
            EpochOffset::from_nanos(i128::from(origin)),
        );
        let mut s = h.new_state(Nanos::ZERO);
        for _ in 0..3 {
            assert!(h.try_acquire(&mut s, Nanos::ZERO, 1), "origin {origin}");
        }
        let room = |t: u64| h.remaining(&s, Nanos::new(t));
        assert_eq!(
            (room(room_at - 1), room(room_at)),
            (0, 1),
            "origin {origin} ns: room from {room_at} ns"
        );
    }
}

/// nginx's clock going back lets no time pass and does not move `last` back: 1 r/s,
/// burst 5 (six in a burst). One request at 1,000 ms and one at 0 ms (a step back) are
/// two requests at the same instant, so at 1,000 ms four more fit. Rules out moving
/// `last` back to 0 ms (the second request would then have leaked a whole second:
/// five left), and a step back refused or counted as elapsed time.
#[test]
fn nginx_lets_no_time_pass_when_the_clock_steps_back() {
    let ms = 1_000_000;
    let params = NginxParams {
        burst: 5,
        ..NginxParams::default()
    };
    let nginx = Nginx::new(rule(1, 1_000 * ms, 1), params);
    let mut s = nginx.new_state(Nanos::new(1_000 * ms));
    assert!(nginx.try_acquire(&mut s, Nanos::new(1_000 * ms), 1));
    assert!(nginx.try_acquire(&mut s, Nanos::ZERO, 1));
    assert_eq!(nginx.remaining(&s, Nanos::new(1_000 * ms)), 4);
    assert_eq!(nginx.remaining(&s, Nanos::new(2_000 * ms)), 5);
}

/// A key nginx has not seen is a new node: its first request is free and `burst` more
/// follow, so a request of the whole capacity (`burst + 1`) passes now and the state
/// is already fresh. Rules out reading an unseen state as one seen at its creation
/// with no excess (a wait of one request's leak, 1 s at 1 r/s, before it is "fresh").
#[test]
fn nginx_answers_an_unseen_key_as_a_new_node() {
    let ms = 1_000_000;
    let params = NginxParams {
        burst: 3,
        ..NginxParams::default()
    };
    let nginx = Nginx::new(rule(1, 1_000 * ms, 1), params);
    let now = Nanos::new(5_000 * ms);
    let s = nginx.new_state(now);
    assert_eq!(nginx.capacity(), 4);
    assert_eq!(nginx.reset_after(&s, now), Nanos::ZERO);
    assert_eq!(nginx.retry_after(&s, now, 4), Some(Nanos::ZERO));
    assert_eq!(nginx.retry_after(&s, now, 5), None);
    let mut taken = s;
    assert!(nginx.try_acquire(&mut taken, now, 4));
}
