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
    hint(std::ptr::from_ref(value).cast());
}

/// [`prefetch`] of every cache line `value` spans: its first byte's and its last
/// byte's, one line when they share it. A value need not sit inside one line: a large
/// vector starts 16 bytes into a line (the allocator's header before it), so every
/// other 32-byte slot of one spans two, and a hint for its first byte alone leaves the
/// second line to be waited for.
#[inline(always)]
pub(crate) fn prefetch_whole<T>(value: &T) {
    let first = std::ptr::from_ref(value).cast::<u8>();
    hint(first);
    // Only hinted at, never read: `wrapping_add` makes the address without a claim.
    hint(first.wrapping_add(size_of::<T>().saturating_sub(1)));
}

/// Starts loading the cache line holding `address` into every cache level.
#[inline(always)]
fn hint(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)] // the crate's one `unsafe`: see below
    // SAFETY: a prefetch is only a hint: it reads nothing the program can observe and
    // cannot fault, even on an invalid address; every caller passes an address inside
    // a live value.
    unsafe {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
