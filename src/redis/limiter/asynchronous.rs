//! The async side of [`RedisLimiter`] (features `redis` + `tower`): the same script, keys,
//! arguments and reading of the reply as the blocking calls, sent on redis-rs' tokio
//! [`ConnectionManager`] with one timer around the whole call. Only the transport
//! differs; no arithmetic and no script lives here.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::super::{FailureKind, Now, OPEN_TIMEOUT, RedisError, RedisStore, StoreError, Target};
use super::{RedisLimiter, mode_of, script};
use crate::limiter::InsufficientCapacity;
use crate::rule::Decision;

/// A [`RedisStore`]'s server reached without blocking: one multiplexed connection that
/// redis-rs' [`ConnectionManager`] reopens in the background when it breaks. Cheap to
/// clone; clones share the connection. Made by [`RedisStore::connect_async`].
///
/// Failures follow the blocking store's rules: a call that times out or finds the
/// connection broken is never resent (its outcome is unknown), and the limiter's
/// [`FailurePolicy`](super::super::FailurePolicy) answers it.
#[derive(Clone)]
pub struct AsyncRedis {
    store: RedisStore,
    manager: ConnectionManager,
}

impl RedisStore {
    /// Opens an async connection to this store's server (same URL, credentials, TLS
    /// settings and key prefix), waiting at most [`OPEN_TIMEOUT`] for it. Needs a tokio
    /// runtime. A Redis Cluster is not supported asynchronously yet (an
    /// `InvalidConfig` error says so).
    pub async fn connect_async(&self) -> Result<AsyncRedis, StoreError> {
        let client = match &self.inner.target {
            Target::Server(client) => client.clone(),
            Target::Cluster(_) => {
                return Err(StoreError::new(
                    FailureKind::InvalidConfig,
                    "the async store talks to one server; Redis Cluster is not supported \
                     asynchronously yet"
                        .into(),
                ));
            }
        };
        // No response timeout of its own: each call has the limiter's, around the call.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OPEN_TIMEOUT))
            .set_response_timeout(None);
        let connecting = ConnectionManager::new_with_config(client, config);
        let manager = match tokio::time::timeout(OPEN_TIMEOUT, connecting).await {
            Ok(Ok(manager)) => manager,
            Ok(Err(e)) => return Err(self.error(&e)),
            Err(_) => return Err(timed_out(OPEN_TIMEOUT)),
        };
        Ok(AsyncRedis {
            store: self.clone(),
            manager,
        })
    }
}

impl AsyncRedis {
    /// The store whose server this connection reaches.
    pub fn store(&self) -> &RedisStore {
        &self.store
    }
}

impl std::fmt::Debug for AsyncRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncRedis")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl RedisLimiter {
    /// As [`try_acquire_n`](RedisLimiter::try_acquire_n), without blocking: the same
    /// script call on `redis`, bounded by the limiter's timeout (connecting included).
    /// The decision equals the blocking call's for the same instants.
    pub async fn try_acquire_n_async(
        &self,
        redis: &AsyncRedis,
        key: &str,
        cost: u64,
        now: Now,
    ) -> Result<Decision, RedisError> {
        let capacity = self.capacity();
        if cost > capacity {
            return Err(InsufficientCapacity { cost, capacity }.into());
        }
        let mut call = script::script_for_call(&self.parts, mode_of(now), false).prepare_invoke();
        call.key(self.redis_keys(key, now));
        call.arg(script::arguments(&self.parts, cost, mode_of(now), false));
        let mut manager = redis.manager.clone();
        let sent = call.invoke_async::<Vec<i64>>(&mut manager);
        // A timed-out call is dropped, never resent; its late reply is discarded by the
        // multiplexer (matched to the dropped call), never read as another call's.
        let reply = match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return Err(self.unavailable(redis.store.error(&e))),
            Err(_) => return Err(self.unavailable(timed_out(self.timeout))),
        };
        Ok(script::decision(&script::decode(
            &reply,
            self.parts.len(),
            false,
        )))
    }
}

fn timed_out(after: Duration) -> StoreError {
    StoreError::new(
        FailureKind::Timeout,
        format!("no answer within {} ms", after.as_millis()),
    )
}
