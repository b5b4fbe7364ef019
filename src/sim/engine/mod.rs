//! The discrete-event engine: feeds each algorithm its stream through the library's
//! own state store for numbered clients, [`DenseLimiter`](crate::DenseLimiter), at the
//! instants of a fake clock, and measures what it decides.
//!
//! The engine owns event order and client behaviour; it never decides a request
//! itself (the limiter does) and never writes files (sinks do).
//!
//! ## How a run works
//! - Algorithms are dealt round-robin to the worker threads. The arrival stream is
//!   generated from the seed once, a chunk at a time (by the only worker, or by the
//!   calling thread for all of them), and each worker feeds each chunk to every
//!   algorithm it owns in turn: every algorithm sees the identical stream, the stream
//!   is never held in memory whole, and a thread's results do not depend on which
//!   other algorithms share it, so a threaded run equals a sequential one.
//! - Open clients: the sliding log (the exact reference) decides each chunk once, and
//!   every other algorithm counts `false_allow` / `false_deny` against it. When the
//!   log is one of the algorithms run, its own decisions are the reference, and the
//!   thread running it sends them to the other threads chunk by chunk.
//! - Retry clients: a denied request is queued at `now + retry_after + U[0, jitter]`.
//!   Retries due at the same instant as a new arrival go first (they were scheduled
//!   earlier); retries at the same instant keep FIFO order (an insertion counter, as in
//!   nexosim's queue). A retry that would fall at or after `duration` is `unfinished`.
//! - Every denial is judged: the key's state is asked, at later instants, whether the
//!   request would pass (`Algorithm::would_pass`, nothing consumed), to find the exact
//!   earliest instant and judge `retry_after` against it. This assumes passing is
//!   monotone in time when nothing else happens, which holds for all six built-in
//!   algorithms. The instant found is remembered per key until the key's next
//!   admission (see `probe::Probes`).
//! - The engine owns its limiters and numbers its clients, so a client's state is one
//!   index away (no hashing, no lock); the trailing-window counts are updated after
//!   each chunk, in order.
//! - A janitor sweep (every `max(W, duration / 1000)`) evicts idle keys, as a real
//!   deployment would, and samples `peak_keys` and per-key state size.
//! - The window count of each algorithm's worst key is drawn in full. The first pass
//!   draws the first key admitted; when another key turns out the worst, a silent
//!   second pass redraws it. With open clients on one server it looks at that key's
//!   arrivals only, replayed from the first pass's compact history when the stream is
//!   a trace (so no line is parsed twice), drawn again from the seed otherwise.
//!
//! ## Where each concept lives (each file imports only those below it)
//! - `sweep`: one stream fanned out to many configurations of the limit, each run as
//!   `run` runs a group.
//! - `run`: the run top-down: [`RunOptions`], the algorithms dealt into groups, one
//!   worker thread per group, each group's passes, the reports in order.
//! - `dispatch`: registry entries to monomorphised drivers (the one place).
//! - `reference`: the exact reference and where a group gets its decisions.
//! - `stream`: the stream a chunk at a time, fanned out to several workers, and the
//!   history a second pass replays.
//! - `deployment`: a scenario's `[deployment]`: several servers, a balancer and a
//!   store, in true time (a scenario without one never reaches it).
//! - `server`: one server: its key states on its own clock, the idle-key janitor and
//!   the probes that judge each denial's advice.
//! - `driver`: one algorithm's run over any decider (a server, a deployment): the
//!   story of each attempt, written once, and the comparison with the reference.
//! - `retry`: the retry clients and their event queue.
//! - `states`: where one algorithm's key states live ([`StateBackend`]: the library's
//!   `DenseLimiter` in memory, or Redis) and what a run asks of them.
//! - `probe`: the earliest passing instant of each denial, and the advice judged.
//! - `record`: counters, window counts, timeline and decision rows.
//! - `chart_key`, `progress`, `attempt`: the `--key` hint, progress units, and the
//!   attempt and answer the others pass each other.

mod attempt;
mod chart_key;
mod deployment;
mod dispatch;
mod driver;
mod probe;
mod progress;
mod record;
mod reference;
mod retry;
mod run;
mod server;
mod states;
mod stream;
mod sweep;

pub use dispatch::check_store;
pub use progress::PROGRESS_STEPS;
pub use run::{RunOptions, run};
pub use states::StateBackend;
pub use sweep::{check_sweepable, sweep};
