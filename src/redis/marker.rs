//! Noticing that the server lost a store's keys. A state key that is gone looks exactly
//! like one never written (a fresh limit), so the loss needs a witness: a marker key
//! the store writes when it opens and script calls renew and check (`PEXPIRE`, which
//! answers 0 for a missing key) before they write any state: the general script on
//! every call, the fast scripts of one rule deciding only when the rule's state key is
//! missing (after a flush or a restart every state is; `lua/fast_common.lua`). A call that
//! finds it gone answers `STATELOST` having written nothing, so its outcome is known
//! and it may be sent again. One server only: on a cluster a script can reach only its
//! own slot's keys.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{FailureKind, OPEN_TIMEOUT, RedisStore, StoreError};

/// How long the marker outlives the store's opening or its last call at a caller's
/// instant (the keys' safety TTL, [`CALLER_TTL`](super::CALLER_TTL)). A call on the
/// server's clock renews it for [`MARKER_TTL_SERVER`].
pub const MARKER_TTL: Duration = super::CALLER_TTL;

/// How long the marker outlives a call on the server's clock (`lua/main.lua` renews it
/// by this much): a store left without calls longer than this counts one loss at its
/// next call.
pub const MARKER_TTL_SERVER: Duration = Duration::from_secs(24 * 3600);

/// `<prefix>:marker:<token>`, the token unique to one opening of a store (process id,
/// wall-clock ns, a counter), so stores sharing a prefix never share a marker.
pub(super) fn marker_key(prefix: &str) -> String {
    static OPENED: AtomicU64 = AtomicU64::new(0);
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = OPENED.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}:marker:{:x}.{ns:x}.{n}", std::process::id())
}

impl RedisStore {
    /// The marker key script calls check (`None` on a cluster).
    pub(super) fn marker(&self) -> Option<&str> {
        self.inner.marker.as_deref()
    }

    /// Writes the marker (at opening, and again after a loss was counted).
    pub(super) fn mark(&self) -> Result<(), StoreError> {
        let Some(marker) = self.marker() else {
            return Ok(());
        };
        self.with_connection(OPEN_TIMEOUT, |con| {
            redis::cmd("SET")
                .arg(marker)
                .arg("1")
                .arg("PX")
                .arg(MARKER_TTL.as_millis() as u64)
                .query::<()>(con)
        })
    }

    /// How many times a call of this store (any of its limiters) found that the server
    /// had lost its keys: a `FLUSHALL`/`FLUSHDB`, a restart without persistence, or a
    /// failover to a replica that never held the marker — or, harmlessly, a store left
    /// without calls longer than the marker's TTL ([`MARKER_TTL`] after opening or a
    /// call at a caller's instant, [`MARKER_TTL_SERVER`] after one on the server's
    /// clock). For every algorithm a lost state is a fresh limit (a full bucket, an
    /// empty window or log): each key may admit up to one extra burst.
    ///
    /// The call that finds the loss writes the marker again and is sent once more (it
    /// wrote nothing, so it cannot be charged twice): it decides on the fresh state.
    /// A store built with [`stop_after_failure`](super::RedisStoreBuilder::stop_after_failure)
    /// fails instead, with [`FailureKind::StateLost`], and stays stopped. Always 0 on a
    /// cluster, where it is not detected.
    pub fn state_losses(&self) -> u64 {
        self.inner.losses.load(Ordering::Relaxed)
    }

    /// After a call failed with `error`: whether to send it once more, because the
    /// server lost the store's keys, the loss is now counted and the marker written
    /// again. Never for a store that stops at its first failure.
    pub(super) fn recovered(&self, error: &StoreError) -> bool {
        if error.kind() != FailureKind::StateLost || self.inner.stop_after_failure {
            return false;
        }
        self.inner.losses.fetch_add(1, Ordering::Relaxed);
        self.mark().is_ok()
    }
}
