//! The limiter's synchronisation primitives, from one place: `std::sync` normally and
//! `loom::sync` under `cfg(loom)`, so the real limiter code is what loom model-checks.

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, ignoring poisoning: the guarded data is plain integers that a
/// panicking holder cannot leave half-updated in any way that matters more than
/// refusing every later request would.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
