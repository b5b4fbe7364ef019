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
//!   each chunk, in order: for the runs of a group that see every arrival at its
//!   instant, by one tracker with a lane per run, so an arrival admitted by several is
//!   counted in one FIFO entry and one cache line (`stream::GroupCount`).
//! - A janitor sweep (every `max(W, duration / 1000)`) evicts idle keys, as a real
//!   deployment would, and samples `peak_keys` and per-key state size.
//! - The window count of each algorithm's worst key is drawn in full. The first pass
//!   draws the first key admitted; when another key turns out the worst, a silent
//!   second pass redraws it. With open clients on one server it looks at that key's
//!   arrivals only, replayed from the first pass's compact history when the stream is
//!   a trace (so no line is parsed twice), drawn again from the seed otherwise.
//!
//! ## Where each concept lives: eleven files, read top-down
//! Each file imports only files listed below it (and this face imports the public
//! items it re-exports), so the folder reads from the run down to plain data with no
//! arrow running back up. One open-client arrival goes `run` → `stream` (its chunk and
//! the reference's decision) → `driver` (the attempt's story) → `server` (the decision
//! and its probe) → `record` (counters and its row).
//! - `sweep`: one stream fanned out to many configurations of the limit, each run as
//!   `run` runs a group.
//! - `run`: the run top-down: [`RunOptions`], the algorithms dealt into groups, one
//!   worker thread per group, each group's passes, the reports in order.
//! - `dispatch`: registry entries to monomorphised drivers (the one place), and
//!   whether a store can run them ([`check_store`]).
//! - `remote` (feature `redis`): the key states in Redis, each decision a script call,
//!   several clients' decisions sent in one pipeline ahead of their turn.
//! - `stream`: what a pass is fed — the stream a chunk at a time, fanned out to several
//!   workers, the history a second pass replays — the exact reference's decisions, and
//!   the window counts a group's runs share (`GroupCount`).
//! - `deployment`: a scenario's `[deployment]`: the balancer, the servers and the store
//!   they share, in true time (a scenario without one never reaches it).
//! - `server`: one server: its key states ([`StateBackend`]: the library's
//!   `DenseLimiter` in memory, or Redis) on its own clock, the idle-key janitor and the
//!   probes that judge each denial's advice.
//! - `driver`: one algorithm's run over any decider (a server, a deployment): the
//!   story of each attempt, written once, the comparison with the reference, the retry
//!   clients and their event queue, and the progress units.
//! - `probe`: the earliest passing instant of each denial, and the advice judged.
//! - `record`: the attempt and its answer, counters, window counts, timeline, decision
//!   rows, and the hint for a `--key` that named no client.

mod deployment;
mod dispatch;
mod driver;
mod probe;
mod record;
#[cfg(feature = "redis")]
mod remote;
mod run;
mod server;
mod stream;
mod sweep;

pub use dispatch::check_store;
pub use driver::PROGRESS_STEPS;
pub use run::{RunOptions, run};
pub use server::StateBackend;
pub use sweep::{check_sweepable, sweep};
