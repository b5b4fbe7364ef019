//! Time as integer nanoseconds, and the clocks that produce it.
//!
//! Every decision in ratesim is made on [`Nanos`], a `u64` count of nanoseconds since
//! a clock's origin. Floating-point seconds appear only at the edges (display, CSV,
//! charts): a float refill drifts to 0.9999999 tokens where the exact answer is 1, and a
//! limiter that says "no" when the math says "yes" is a bug users cannot debug.
//!
//! This module does no rate limiting; it only measures and parses time.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Nanoseconds per second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// A point in time or a span of time, in whole nanoseconds.
///
/// Arithmetic saturates instead of wrapping or panicking: a limiter must never crash on
/// a clock reading near `u64::MAX`, and a saturated wait is still a correct "not soon".
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(u64);

impl Nanos {
    /// Zero nanoseconds: the clock's origin, or no wait at all.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable instant (about 584 years).
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `n` nanoseconds.
    pub const fn new(n: u64) -> Nanos {
        Nanos(n)
    }

    /// `ms` milliseconds, saturating.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    /// `s` seconds, saturating.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(NANOS_PER_SEC))
    }

    /// The raw count of nanoseconds.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// Seconds as a float, for display and charts only; never decide with it.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// `self + rhs`, saturating at [`Nanos::MAX`].
    pub const fn saturating_add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }

    /// `self - rhs`, or zero if `rhs` is later.
    pub const fn saturating_sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }

    /// Converts a `u128` count (the result of wide arithmetic), saturating.
    pub fn saturating_from_u128(n: u128) -> Nanos {
        Nanos(u64::try_from(n).unwrap_or(u64::MAX))
    }

    /// Exact decimal seconds with no trailing zeros: `0`, `2.5`, `10.000000001`.
    ///
    /// This is how times are written to CSV: no float round-trip, so a notebook reads
    /// back exactly the instant the engine used.
    pub fn to_decimal_secs(self) -> String {
        let secs = self.0 / NANOS_PER_SEC;
        let frac = self.0 % NANOS_PER_SEC;
        if frac == 0 {
            return secs.to_string();
        }
        let digits = format!("{frac:09}");
        format!("{secs}.{}", digits.trim_end_matches('0'))
    }

    /// Parses exact decimal seconds (`"12"`, `"0.25"`, `"1.000000001"`) without floats.
    ///
    /// More than nine decimal places is an error rather than a silent rounding.
    pub fn parse_decimal_secs(text: &str) -> Result<Nanos, ParseTimeError> {
        if text.is_empty() {
            return Err(ParseTimeError::Empty);
        }
        parse_scaled(text, NANOS_PER_SEC)
    }

    /// Parses a duration: a number with a unit (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`)
    /// or a bare number of seconds. Decimals are exact: `"0.1s"` is 100,000,000 ns.
    ///
    /// ```
    /// use ratesim::Nanos;
    /// assert_eq!(Nanos::parse_duration("250ms"), Ok(Nanos::from_millis(250)));
    /// assert_eq!(Nanos::parse_duration("1.5m"), Ok(Nanos::from_secs(90)));
    /// assert_eq!(Nanos::parse_duration("10"), Ok(Nanos::from_secs(10)));
    /// ```
    pub fn parse_duration(text: &str) -> Result<Nanos, ParseTimeError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ParseTimeError::Empty);
        }
        let split = text
            // Not only ASCII: the unit `µs` starts with a non-ASCII letter.
            .find(|c: char| c.is_alphabetic())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let scale = match unit.trim() {
            "" | "s" => NANOS_PER_SEC,
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "m" | "min" => 60 * NANOS_PER_SEC,
            "h" => 3_600 * NANOS_PER_SEC,
            "d" => 86_400 * NANOS_PER_SEC,
            other => return Err(ParseTimeError::UnknownUnit(other.to_string())),
        };
        // Errors quote the whole text, unit included: `-10s`, not `-10`.
        parse_scaled(number.trim(), scale).map_err(|e| e.quoting(text))
    }
}

/// Parses a non-negative decimal `text` and multiplies it by `scale` nanoseconds, exactly.
fn parse_scaled(text: &str, scale: u64) -> Result<Nanos, ParseTimeError> {
    let invalid = || ParseTimeError::Invalid(text.to_string());
    if text.starts_with('-') {
        return Err(ParseTimeError::Negative(text.to_string()));
    }
    let (int_part, frac_part) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty())
        || !all_digits(int_part)
        || !all_digits(frac_part)
    {
        return Err(invalid());
    }
    // value = (int_part + frac_part / 10^len) * scale, computed in u128.
    let int: u128 = if int_part.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| ParseTimeError::TooLarge(text.to_string()))?
    };
    let frac_digits = frac_part.trim_end_matches('0');
    let mut total = int
        .checked_mul(u128::from(scale))
        .ok_or_else(|| ParseTimeError::TooLarge(text.to_string()))?;
    if !frac_digits.is_empty() {
        if frac_digits.len() > 18 {
            return Err(ParseTimeError::TooPrecise(text.to_string()));
        }
        let denom = 10u128.pow(frac_digits.len() as u32);
        let numer: u128 = frac_digits.parse().map_err(|_| invalid())?;
        let scaled = numer * u128::from(scale);
        if !scaled.is_multiple_of(denom) {
            return Err(ParseTimeError::TooPrecise(text.to_string()));
        }
        // The integer part alone may already sit just below u128::MAX.
        total = total
            .checked_add(scaled / denom)
            .ok_or_else(|| ParseTimeError::TooLarge(text.to_string()))?;
    }
    u64::try_from(total)
        .map(Nanos)
        .map_err(|_| ParseTimeError::TooLarge(text.to_string()))
}

/// Why a time or duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseTimeError {
    /// Nothing at all.
    #[error(
        "empty duration; expected a number of seconds or a duration like \"10s\", \"250ms\", \"1m\""
    )]
    Empty,
    /// Not a decimal number.
    #[error(
        "`{0}` is not a duration; expected a number of seconds or a duration like \"10s\", \"250ms\", \"1m\""
    )]
    Invalid(String),
    /// A minus sign: time and durations here are never negative.
    #[error("`{0}` is negative; expected a duration of zero or more")]
    Negative(String),
    /// Finer than one nanosecond.
    #[error("`{0}` is finer than one nanosecond")]
    TooPrecise(String),
    /// Does not fit in `u64` nanoseconds (about 584 years).
    #[error("`{0}` is too large (the limit is about 584 years)")]
    TooLarge(String),
    /// A unit other than ns, us, ms, s, m, h, d.
    #[error("unknown time unit `{0}`; expected one of ns, us, ms, s, m, h, d")]
    UnknownUnit(String),
}

impl ParseTimeError {
    /// The same error about `text` (the whole input) instead of the part that failed.
    fn quoting(self, text: &str) -> ParseTimeError {
        let text = text.to_string();
        match self {
            ParseTimeError::Empty | ParseTimeError::UnknownUnit(_) => self,
            ParseTimeError::Invalid(_) => ParseTimeError::Invalid(text),
            ParseTimeError::Negative(_) => ParseTimeError::Negative(text),
            ParseTimeError::TooPrecise(_) => ParseTimeError::TooPrecise(text),
            ParseTimeError::TooLarge(_) => ParseTimeError::TooLarge(text),
        }
    }
}

impl FromStr for Nanos {
    type Err = ParseTimeError;
    fn from_str(s: &str) -> Result<Nanos, ParseTimeError> {
        Nanos::parse_duration(s)
    }
}

impl fmt::Debug for Nanos {
    /// Prints like a `Duration` (`1.5s`, `250ms`), which is what a reader of a failed
    /// assertion wants to see.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Duration::from_nanos(self.0), f)
    }
}

impl fmt::Display for Nanos {
    /// The shortest exact duration with a unit that [`Nanos::parse_duration`] reads
    /// back to the same nanosecond: `10s`, `250ms`, `1ns`, `1.5s`, `1m`, `36h`, `0s`.
    /// The number is at least 1 of its unit (`250ms`, not `0.25s`), minutes, hours and
    /// days take at most three decimals (`90s`, `2.5m`, but never `307445734.5618…m`),
    /// and between texts of equal length the larger unit wins (`4.999999999s`, not
    /// `4999999999ns`).
    ///
    /// ```
    /// use ratesim::Nanos;
    /// assert_eq!(Nanos::new(1).to_string(), "1ns");
    /// assert_eq!(Nanos::from_millis(250).to_string(), "250ms");
    /// assert_eq!(Nanos::from_secs(90).to_string(), "90s");
    /// assert_eq!(Nanos::from_secs(3_600).to_string(), "1h");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0s");
        }
        let mut best: Option<String> = None;
        // Largest unit first, so that on a tie in length the larger unit stays.
        for (unit, scale) in DISPLAY_UNITS.iter().rev() {
            if let Some(number) = exact_decimal(self.0, *scale) {
                let text = format!("{number}{unit}");
                if best.as_ref().is_none_or(|b| text.len() < b.len()) {
                    best = Some(text);
                }
            }
        }
        // Nanoseconds always qualify (scale 1), so `best` is set.
        f.write_str(best.as_deref().unwrap_or_default())
    }
}

/// The units [`Nanos`] displays in, smallest first, with their length in ns.
const DISPLAY_UNITS: [(&str, u64); 7] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", NANOS_PER_SEC),
    ("m", 60 * NANOS_PER_SEC),
    ("h", 3_600 * NANOS_PER_SEC),
    ("d", 86_400 * NANOS_PER_SEC),
];

/// `n / scale` as an exact decimal, if it is at least 1 and needs at most three
/// decimals for units above a second (none of them needs more than 9 below).
fn exact_decimal(n: u64, scale: u64) -> Option<String> {
    let most_digits = if scale > NANOS_PER_SEC { 3 } else { 9 };
    let whole = n / scale;
    if whole == 0 {
        return None;
    }
    let (scale, mut rest) = (u128::from(scale), u128::from(n % scale));
    let mut digits = String::new();
    while rest != 0 {
        if digits.len() == most_digits {
            return None; // too long to read, or no end at all (a third of a minute)
        }
        rest *= 10;
        digits.push(char::from(b'0' + (rest / scale) as u8));
        rest %= scale;
    }
    Some(if digits.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{digits}")
    })
}

impl From<Duration> for Nanos {
    fn from(d: Duration) -> Nanos {
        Nanos::saturating_from_u128(d.as_nanos())
    }
}

impl From<Nanos> for Duration {
    fn from(n: Nanos) -> Duration {
        Duration::from_nanos(n.0)
    }
}

impl std::ops::Add for Nanos {
    type Output = Nanos;
    /// Saturating, like [`Nanos::saturating_add`].
    fn add(self, rhs: Nanos) -> Nanos {
        self.saturating_add(rhs)
    }
}

impl std::ops::Sub for Nanos {
    type Output = Nanos;
    /// Saturating at zero, like [`Nanos::saturating_sub`].
    fn sub(self, rhs: Nanos) -> Nanos {
        self.saturating_sub(rhs)
    }
}

/// A source of monotonic time.
///
/// Implementations must never go backwards in normal operation; the algorithms still
/// treat a backwards reading as "no time has passed" so a misbehaving clock can neither
/// drain nor refill anything.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Nanos;
}

/// The real clock: nanoseconds since the clock was created.
///
/// Monotonic, so NTP steps and manual clock changes cannot refill buckets or reopen
/// windows (wall-clock time can jump both ways). It reads the CPU's time-stamp counter
/// through `quanta` (calibrated against the OS monotonic clock once per process, and
/// replaced by that clock where the counter is not invariant): about a third of the
/// cost of [`std::time::Instant::now`], which matters when the clock read is most of
/// a decision.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: quanta::Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            origin: quanta::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> MonotonicClock {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Nanos {
        Nanos::from(self.origin.elapsed())
    }
}

/// A deterministic clock for tests and the simulator. Clones share one time.
///
/// ```
/// use ratesim::{Clock, FakeClock, Nanos};
/// let clock = FakeClock::new(Nanos::ZERO);
/// let seen_by_limiter = clock.clone();
/// clock.advance(Nanos::from_millis(1500));
/// assert_eq!(seen_by_limiter.now(), Nanos::from_millis(1500));
/// ```
#[derive(Debug, Clone, Default)]
pub struct FakeClock {
    now: Arc<AtomicU64>,
}

impl FakeClock {
    /// A clock reading `start`.
    pub fn new(start: Nanos) -> FakeClock {
        FakeClock {
            now: Arc::new(AtomicU64::new(start.0)),
        }
    }

    /// Moves time forward by `by` (saturating).
    pub fn advance(&self, by: Nanos) {
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(by.0))
            });
    }

    /// Sets the time to `to`; may move backwards (tests use that on purpose).
    pub fn set(&self, to: Nanos) {
        self.now.store(to.0, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Nanos {
        Nanos(self.now.load(Ordering::SeqCst))
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Nanos {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fraction_finer_than_a_nanosecond_is_too_precise_however_many_digits() {
        // 10 digits is one past a nanosecond; 40 no longer fits the exact arithmetic.
        for digits in [10, 18, 19, 30, 40, 60] {
            let text = format!("1.{}1s", "0".repeat(digits - 1));
            assert_eq!(
                Nanos::parse_duration(&text),
                Err(ParseTimeError::TooPrecise(text.clone()))
            );
        }
    }

    #[test]
    fn conversions_to_durations_seconds_and_text_are_exact() {
        let n = Nanos::new(1_500_000_001);
        assert_eq!(Duration::from(n), Duration::new(1, 500_000_001));
        assert_eq!(Nanos::from(Duration::new(1, 500_000_001)), n);
        assert_eq!(Nanos::new(1_500_000_000).as_secs_f64(), 1.5);
        assert_eq!(Nanos::new(250_000_000).as_secs_f64(), 0.25);
        assert_eq!("1.5s".parse::<Nanos>(), Ok(Nanos::new(1_500_000_000)));
        assert!("1.5 parsecs".parse::<Nanos>().is_err());
        assert_eq!(format!("{:?}", Nanos::new(1_500_000_000)), "1.5s");
    }

    #[test]
    fn display_uses_the_largest_unit_with_few_decimals() {
        // The shortest text, the larger unit on a tie; minutes and above take at most
        // three decimals (so not `1.0001m`), smaller units up to nine.
        assert_eq!(Nanos::new(60_006_000_000).to_string(), "60.006s");
        assert_eq!(Nanos::new(150 * NANOS_PER_SEC).to_string(), "2.5m");
        assert_eq!(Nanos::new(1_000_100).to_string(), "1.0001ms");
    }

    #[test]
    fn the_monotonic_clock_moves_forward_and_an_arc_reads_the_same_clock() {
        let clock = Arc::new(MonotonicClock::new());
        let before = (*clock).now();
        std::thread::sleep(Duration::from_millis(2));
        let through_arc = clock.now();
        assert!(through_arc >= Nanos::new(2_000_000), "{through_arc:?}");
        assert!(through_arc > before, "{before:?} then {through_arc:?}");
    }

    #[test]
    fn durations_parse_exactly_with_every_unit() {
        let cases = [
            ("10s", 10 * NANOS_PER_SEC),
            ("250ms", 250_000_000),
            ("1m", 60 * NANOS_PER_SEC),
            ("1h", 3_600 * NANOS_PER_SEC),
            ("1d", 86_400 * NANOS_PER_SEC),
            ("0.5", 500_000_000),
            ("0.1s", 100_000_000),
            ("1.000000001", 1_000_000_001),
            ("7ns", 7),
            ("3us", 3_000),
            (".5", 500_000_000),
            ("2.", 2 * NANOS_PER_SEC),
        ];
        for (text, ns) in cases {
            assert_eq!(Nanos::parse_duration(text), Ok(Nanos(ns)), "{text}");
        }
    }

    #[test]
    fn bad_durations_are_rejected_with_a_reason() {
        assert!(matches!(
            Nanos::parse_duration("-1s"),
            Err(ParseTimeError::Negative(_))
        ));
        assert!(matches!(
            Nanos::parse_duration("1.0000000001"),
            Err(ParseTimeError::TooPrecise(_))
        ));
        assert!(matches!(
            Nanos::parse_duration("1000y"),
            Err(ParseTimeError::UnknownUnit(_))
        ));
        assert!(matches!(
            Nanos::parse_duration("99999999999d"),
            Err(ParseTimeError::TooLarge(_))
        ));
        for junk in ["", "s", "abc", "1e3", "1.2.3", "NaN", "inf", "+5"] {
            assert!(
                Nanos::parse_duration(junk).is_err(),
                "{junk:?} should not parse"
            );
        }
    }

    #[test]
    fn decimal_seconds_round_trip_without_floats() {
        for ns in [0, 1, 500_000_000, 2_500_000_000, 10_000_000_001, u64::MAX] {
            let text = Nanos(ns).to_decimal_secs();
            assert_eq!(Nanos::parse_decimal_secs(&text), Ok(Nanos(ns)), "{text}");
        }
        assert_eq!(Nanos(2_500_000_000).to_decimal_secs(), "2.5");
        assert_eq!(Nanos(3 * NANOS_PER_SEC).to_decimal_secs(), "3");
    }

    #[test]
    fn durations_display_in_the_shortest_exact_unit() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (999, "999ns"),
            (1_000, "1us"),
            (1_500, "1.5us"),
            (250_000_000, "250ms"),
            (NANOS_PER_SEC, "1s"),
            (1_500_000_000, "1.5s"),
            (10 * NANOS_PER_SEC, "10s"),
            (60 * NANOS_PER_SEC, "1m"),
            (90 * NANOS_PER_SEC, "90s"),
            (150 * NANOS_PER_SEC, "2.5m"),
            (3_600 * NANOS_PER_SEC, "1h"),
            (36 * 3_600 * NANOS_PER_SEC, "36h"),
            (86_400 * NANOS_PER_SEC, "1d"),
            (4_999_999_999, "4.999999999s"),
            (10_000_000_001, "10.000000001s"),
            (u64::MAX, "18446744073.709551615s"),
        ];
        for (ns, text) in cases {
            assert_eq!(Nanos(ns).to_string(), text, "{ns} ns");
        }
    }

    #[test]
    fn displayed_durations_parse_back_to_the_same_nanosecond() {
        let mut values = vec![
            0,
            1,
            2,
            999,
            1_001,
            NANOS_PER_SEC - 1,
            NANOS_PER_SEC + 1,
            20 * NANOS_PER_SEC, // a third of a minute: not exact in minutes
            86_400 * NANOS_PER_SEC - 1,
            86_400 * NANOS_PER_SEC + 1,
            1 << 63,
            u64::MAX - 1,
            u64::MAX,
        ];
        // Plus every multiple of each unit near the top, and a spread of others.
        for (_, scale) in DISPLAY_UNITS {
            values.extend([scale, scale * 3, scale * 7 / 2, u64::MAX / scale * scale]);
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            // xorshift64: deterministic, spread over the whole range and its bit widths.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for ns in values {
            let text = Nanos(ns).to_string();
            assert_eq!(
                Nanos::parse_duration(&text),
                Ok(Nanos(ns)),
                "{ns} ns as {text}"
            );
        }
    }

    #[test]
    fn fake_clock_clones_share_one_time() {
        let a = FakeClock::new(Nanos(5));
        let b = a.clone();
        a.advance(Nanos(10));
        assert_eq!(b.now(), Nanos(15));
        b.set(Nanos(3));
        assert_eq!(a.now(), Nanos(3));
        a.set(Nanos::MAX);
        a.advance(Nanos(1));
        assert_eq!(b.now(), Nanos::MAX, "advance saturates");
    }

    #[test]
    fn monotonic_clock_never_goes_backwards() {
        let clock = MonotonicClock::new();
        let mut last = clock.now();
        for _ in 0..1000 {
            let now = clock.now();
            assert!(now >= last, "{now:?} < {last:?}");
            last = now;
        }
    }
}
