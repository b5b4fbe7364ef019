//! The limiter's synchronisation primitives, from one place: `std::sync` normally and
//! `loom::sync` under `cfg(loom)`, so the real limiter code is what loom model-checks.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};
// loom's `try_lock` reports std's error type.
pub(crate) use std::sync::TryLockError;

/// Locks `mutex`, ignoring poisoning: the guarded data is plain integers that a
/// panicking holder cannot leave half-updated in any way that matters more than
/// refusing every later request would.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
