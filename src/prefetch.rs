//! A hint to the processor to start loading a value's cache line now, for a loop that
//! knows which states it will touch a few iterations ahead (the simulator's chunk of
//! arrivals). It changes no result, only when memory is waited for; on targets without
//! a stable prefetch instruction it does nothing.

/// How far ahead a loop over a known sequence (a chunk of arrivals, the admissions
/// about to expire) asks for the state it will touch: far enough for a load from
/// memory to arrive before the item is reached, near enough to stay in the cache.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) const AHEAD: usize = 8;

/// Starts loading the cache line holding `value` into every cache level.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)] // the crate's one `unsafe`: see below
    // SAFETY: a prefetch is only a hint: it reads nothing the program can observe,
    // cannot fault even on an invalid address, and `value` is a valid reference.
    unsafe {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
