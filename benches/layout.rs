//! Issue 17's untried layout, tried: does keeping a client's six states side by side,
//! decided in one pass over the stream, beat today's six stores fed in turn a chunk at a
//! time? All decide the same stream with the library's own algorithms and the same
//! work per decision as the simulator's store (`try_acquire`, then `remaining`,
//! `reset_after` and, on a denial, `retry_after`); only where the states live differs:
//!
//! - `apart`: what the engine does. One `DenseLimiter` per algorithm; each 1,024-arrival
//!   chunk is fed to the six in turn, each prefetching its own state 8 arrivals ahead.
//! - `interleaved`: the same six stores with the loop turned inside out: each arrival
//!   decided by the six in turn (each store prefetching 8 arrivals ahead), to tell the
//!   loop order's share from the layout's.
//! - `side_by_side`: one `Vec` of clients, each holding its six states next to each
//!   other; each arrival is decided by the six at once (one prefetch 8 arrivals ahead).
//!
//! Before timing, the three are checked to decide alike (the same checksum of every
//! decision's answers).
//!
//! The stream is the newcomer scenario in miniature: Poisson arrivals at 10,000
//! per second, clients of Zipf(1.0) popularity, limit 100 per 10 s, 2^20 arrivals
//! (105 simulated seconds), over 1,000 and 100,000 clients. Each timed iteration decides
//! the whole stream on fresh stores (built outside the timing).
//!
//! Run: `cargo bench --bench layout` (about a minute).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratesim::algorithm::{BucketState, CounterState, GcraState, LogState, WindowState};
use ratesim::{
    Algorithm, DenseLimiter, FixedWindow, Gcra, LeakyBucket, Nanos, Rule, SlidingWindowCounter,
    SlidingWindowLog, TokenBucket,
};

const ARRIVALS: usize = 1 << 20;
const CHUNK: usize = 1024;
const AHEAD: usize = 8;

/// A cheap deterministic generator (xorshift64*), the same stream for both layouts.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `(client, instant)` for every arrival, in time order.
fn stream(clients: u32) -> Vec<(u32, Nanos)> {
    let mut total = 0.0;
    let cumulative: Vec<f64> = (1..=clients)
        .map(|i| {
            total += f64::from(i).recip();
            total
        })
        .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut t = 0u64;
    (0..ARRIVALS)
        .map(|_| {
            // Exponential gaps of mean 100 µs.
            t += (-(1.0 - rng.unit()).ln() * 100_000.0) as u64;
            let u = rng.unit() * total;
            let client = cumulative
                .partition_point(|&c| c <= u)
                .min(clients as usize - 1);
            (client as u32, Nanos::new(t))
        })
        .collect()
}

fn rule() -> Rule {
    Rule::new(100, Nanos::from_secs(10)).unwrap()
}

/// The six algorithms, as the engine builds them for one rule.
struct Six {
    tb: TokenBucket,
    lb: LeakyBucket,
    fw: FixedWindow,
    swl: SlidingWindowLog,
    swc: SlidingWindowCounter,
    gcra: Gcra,
}

impl Six {
    fn new() -> Six {
        Six {
            tb: TokenBucket::new(rule()),
            lb: LeakyBucket::new(rule()),
            fw: FixedWindow::new(rule()),
            swl: SlidingWindowLog::new(rule()),
            swc: SlidingWindowCounter::new(rule()),
            gcra: Gcra::new(rule()),
        }
    }
}

/// What the simulator's store asks of one decision, folded into a checksum so that none
/// of it is optimised away.
#[inline]
fn decide<A: Algorithm>(algo: &A, state: &mut A::State, now: Nanos) -> u64 {
    let allowed = algo.try_acquire(state, now, 1);
    let retry = if allowed {
        0
    } else {
        algo.retry_after(state, now, 1)
            .map_or(u64::MAX, Nanos::as_u64)
    };
    u64::from(allowed) + algo.remaining(state, now) + retry + algo.reset_after(state, now).as_u64()
}

/// [`decide`] on a client's slot, created fresh on its first request.
#[inline]
fn decide_slot<A: Algorithm>(algo: &A, slot: &mut Option<A::State>, now: Nanos) -> u64 {
    decide(algo, slot.get_or_insert_with(|| algo.new_state(now)), now)
}

/// Today's layout: one store per algorithm, each fed every chunk in turn.
struct Apart {
    tb: DenseLimiter<TokenBucket>,
    lb: DenseLimiter<LeakyBucket>,
    fw: DenseLimiter<FixedWindow>,
    swl: DenseLimiter<SlidingWindowLog>,
    swc: DenseLimiter<SlidingWindowCounter>,
    gcra: DenseLimiter<Gcra>,
}

impl Apart {
    /// Six empty stores with room for `clients` slots already made, as the side-by-side
    /// clients are: growing them is left out of the timing for both.
    fn new(clients: u32) -> Apart {
        Apart {
            tb: sized(TokenBucket::new(rule()), clients),
            lb: sized(LeakyBucket::new(rule()), clients),
            fw: sized(FixedWindow::new(rule()), clients),
            swl: sized(SlidingWindowLog::new(rule()), clients),
            swc: sized(SlidingWindowCounter::new(rule()), clients),
            gcra: sized(Gcra::new(rule()), clients),
        }
    }
}

/// An empty store whose slots reach `clients` (a slot, once made, is kept).
fn sized<A: Algorithm>(algorithm: A, clients: u32) -> DenseLimiter<A> {
    let fresh = algorithm.new_state(Nanos::ZERO);
    let mut store = DenseLimiter::new(algorithm);
    store.set_state(clients - 1, fresh);
    store.reset(clients - 1);
    store
}

/// Feeds `chunk` to one store, prefetching as the engine does.
fn feed<A: Algorithm>(store: &mut DenseLimiter<A>, chunk: &[(u32, Nanos)]) -> u64 {
    let mut sum = 0;
    for (i, &(client, now)) in chunk.iter().enumerate() {
        if let Some(&(ahead, _)) = chunk.get(i + AHEAD) {
            store.prefetch(ahead);
        }
        sum += store.with_state(client, now, decide);
    }
    sum
}

fn run_apart(mut s: Apart, arrivals: &[(u32, Nanos)]) -> u64 {
    let mut sum = 0;
    for chunk in arrivals.chunks(CHUNK) {
        sum += feed(&mut s.tb, chunk);
        sum += feed(&mut s.lb, chunk);
        sum += feed(&mut s.fw, chunk);
        sum += feed(&mut s.swl, chunk);
        sum += feed(&mut s.swc, chunk);
        sum += feed(&mut s.gcra, chunk);
    }
    sum
}

/// The loop turned inside out, the stores kept apart: each arrival decided by the six
/// stores in turn (each prefetching its own state 8 arrivals ahead).
fn run_interleaved(mut s: Apart, arrivals: &[(u32, Nanos)]) -> u64 {
    let mut sum = 0;
    for (i, &(client, now)) in arrivals.iter().enumerate() {
        if let Some(&(ahead, _)) = arrivals.get(i + AHEAD) {
            s.tb.prefetch(ahead);
            s.lb.prefetch(ahead);
            s.fw.prefetch(ahead);
            s.swl.prefetch(ahead);
            s.swc.prefetch(ahead);
            s.gcra.prefetch(ahead);
        }
        sum += s.tb.with_state(client, now, decide);
        sum += s.lb.with_state(client, now, decide);
        sum += s.fw.with_state(client, now, decide);
        sum += s.swl.with_state(client, now, decide);
        sum += s.swc.with_state(client, now, decide);
        sum += s.gcra.with_state(client, now, decide);
    }
    sum
}

/// One client's six states, side by side.
#[derive(Default)]
struct Client {
    tb: Option<BucketState>,
    lb: Option<BucketState>,
    fw: Option<WindowState>,
    swl: Option<LogState>,
    swc: Option<CounterState>,
    gcra: Option<GcraState>,
}

fn run_side_by_side(six: &Six, mut clients: Vec<Client>, arrivals: &[(u32, Nanos)]) -> u64 {
    let mut sum = 0;
    for (i, &(client, now)) in arrivals.iter().enumerate() {
        if let Some(&(ahead, _)) = arrivals.get(i + AHEAD) {
            prefetch(&clients[ahead as usize]);
        }
        let c = &mut clients[client as usize];
        sum += decide_slot(&six.tb, &mut c.tb, now);
        sum += decide_slot(&six.lb, &mut c.lb, now);
        sum += decide_slot(&six.fw, &mut c.fw, now);
        sum += decide_slot(&six.swl, &mut c.swl, now);
        sum += decide_slot(&six.swc, &mut c.swc, now);
        sum += decide_slot(&six.gcra, &mut c.gcra, now);
    }
    sum
}

/// Starts loading the first cache lines of `value` (the engine's hint, for a struct
/// that spans several lines).
#[inline(always)]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = std::ptr::from_ref(value).cast::<i8>();
        for line in (0..size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch is only a hint: it reads nothing the program can
            // observe and cannot fault, even past the value's end.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(line)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

fn layouts(c: &mut Criterion) {
    let six = Six::new();
    for clients in [1_000u32, 100_000] {
        let arrivals = stream(clients);
        let fresh = || (0..clients).map(|_| Client::default()).collect();
        let sums = [
            run_apart(Apart::new(clients), &arrivals),
            run_interleaved(Apart::new(clients), &arrivals),
            run_side_by_side(&six, fresh(), &arrivals),
        ];
        assert!(
            sums.iter().all(|&s| s == sums[0]),
            "the layouts decided differently: {sums:?}"
        );
        let mut group = c.benchmark_group(format!("layout/{clients}_clients"));
        group.bench_function("apart", |b| {
            b.iter_batched(
                || Apart::new(clients),
                |s| black_box(run_apart(s, &arrivals)),
                BatchSize::LargeInput,
            );
        });
        group.bench_function("interleaved", |b| {
            b.iter_batched(
                || Apart::new(clients),
                |s| black_box(run_interleaved(s, &arrivals)),
                BatchSize::LargeInput,
            );
        });
        group.bench_function("side_by_side", |b| {
            b.iter_batched(
                fresh,
                |clients| black_box(run_side_by_side(&six, clients, &arrivals)),
                BatchSize::LargeInput,
            );
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots().sample_size(10);
    targets = layouts
}
criterion_main!(benches);
