//! Trace timestamps: every [`TimeFormat`] read from its text, exactly to the nanosecond.
//!
//! Numbers are parsed as decimal digits into integers (never through a float), dates
//! through the proleptic Gregorian calendar, and time-zone offsets applied, so
//! `2000-10-10T13:55:36-07:00` and `10/Oct/2000:13:55:36 -0700` are the same instant.
//! This module turns one field's text into a number of nanoseconds and stops: it knows
//! nothing of lines, origins or ordering.

use super::options::TimeFormat;
use crate::time::{NANOS_PER_SEC, ParseTimeError};

/// Nanoseconds: since the Unix epoch for absolute formats, since the start of the run
/// for [`TimeFormat::Seconds`].
pub(crate) type Stamp = i128;

const NS: i128 = NANOS_PER_SEC as i128;

/// `text` in `format`, or what was expected.
pub(crate) fn parse(text: &str, format: TimeFormat) -> Result<Stamp, String> {
    match format {
        TimeFormat::Seconds => seconds(text),
        TimeFormat::EpochS => epoch(text, 9, "seconds"),
        TimeFormat::EpochMs => epoch(text, 6, "milliseconds"),
        TimeFormat::EpochUs => epoch(text, 3, "microseconds"),
        TimeFormat::EpochNs => epoch(text, 0, "nanoseconds"),
        TimeFormat::Rfc3339 => rfc3339(text),
        TimeFormat::Clf => clf(text),
    }
}

/// Decimal seconds since the start of the run (the classic `time_s`).
fn seconds(text: &str) -> Result<Stamp, String> {
    let hint = "expected decimal seconds like 1.5 (no unit)";
    crate::time::Nanos::parse_decimal_secs(text)
        .map(|n| i128::from(n.as_u64()))
        .map_err(|e| match e {
            ParseTimeError::Invalid(t) | ParseTimeError::UnknownUnit(t) => {
                format!("`{t}` is not a number; {hint}")
            }
            ParseTimeError::Empty => format!("empty; {hint}"),
            other => other.to_string(),
        })
}

/// A decimal count of a unit since the epoch; `places` is how many decimals of the
/// unit make a nanosecond (9 for seconds, 0 for nanoseconds).
fn epoch(text: &str, places: u32, unit: &str) -> Result<Stamp, String> {
    let hint = if places == 0 {
        format!("expected whole {unit} since the Unix epoch, like 1700000000000000000")
    } else {
        format!("expected {unit} since the Unix epoch, like 1700000000 or 1700000000.25")
    };
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !digits(whole)
        || !digits(frac)
        || (body.contains('.') && frac.is_empty())
    {
        return Err(format!("`{text}` is not a number; {hint}"));
    }
    let frac_places = u32::try_from(frac.len()).unwrap_or(u32::MAX);
    let (kept, dropped) = frac.split_at(frac.len().min(places as usize));
    if dropped.bytes().any(|b| b != b'0') {
        return Err(format!(
            "`{text}` is finer than a nanosecond ({frac_places} decimal places of {unit})"
        ));
    }
    let too_large = || format!("`{text}` is too large for a time");
    let scale = 10i128.pow(places);
    let mut ns = parse_i128(whole)
        .and_then(|w| w.checked_mul(scale))
        .ok_or_else(too_large)?;
    let pad = places - u32::try_from(kept.len()).unwrap_or(places);
    if !kept.is_empty() {
        let f = parse_i128(kept).ok_or_else(too_large)? * 10i128.pow(pad);
        ns = ns.checked_add(f).ok_or_else(too_large)?;
    }
    Ok(if negative { -ns } else { ns })
}

/// Decimal digits as an `i128`, or `None` when they overflow (the caller checked them).
fn parse_i128(digits: &str) -> Option<i128> {
    // At most 38 digits fit; longer (even with leading zeros) is refused as too large.
    (digits.len() <= 38).then(|| digits.parse().ok()).flatten()
}

/// RFC 3339: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`, `z` and a space for the
/// `T` are accepted.
fn rfc3339(text: &str) -> Result<Stamp, String> {
    let bad = || {
        format!(
            "`{text}` is not an RFC 3339 time; expected one like 2024-05-14T09:00:00.5Z or \
             2024-05-14T11:00:00+02:00"
        )
    };
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    let date = (num(b, 0, 4), num(b, 5, 2), num(b, 8, 2));
    let (Some(year), Some(month), Some(day)) = date else {
        return Err(bad());
    };
    let (clock, rest) = time_of_day(&b[11..]).ok_or_else(bad)?;
    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            let (Some(h), Some(m)) = (num(&digits, 0, 2), num(&digits, 2, 2)) else {
                return Err(bad());
            };
            offset_secs(*sign, h, m).ok_or_else(bad)?
        }
        _ => return Err(bad()),
    };
    instant(year, month, day, clock, offset).map_err(|why| format!("`{text}`: {why}"))
}

/// Common log format: `10/Oct/2000:13:55:36 -0700`, brackets optional.
fn clf(text: &str) -> Result<Stamp, String> {
    let bad = || {
        format!("`{text}` is not a common-log time; expected one like 10/Oct/2000:13:55:36 -0700")
    };
    let inner = text.strip_prefix('[').unwrap_or(text);
    let inner = inner.strip_suffix(']').unwrap_or(inner);
    let b = inner.as_bytes();
    if b.len() < 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' {
        return Err(bad());
    }
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == &b[3..6]).ok_or_else(bad)?;
    let (Some(day), Some(year)) = (num(b, 0, 2), num(b, 7, 4)) else {
        return Err(bad());
    };
    let (clock, rest) = time_of_day(&b[12..]).ok_or_else(bad)?;
    let [b' ', sign @ (b'+' | b'-'), zone @ ..] = rest else {
        return Err(bad());
    };
    let (Some(h), Some(m), 4) = (num(zone, 0, 2), num(zone, 2, 2), zone.len()) else {
        return Err(bad());
    };
    let offset = offset_secs(*sign, h, m).ok_or_else(bad)?;
    let month = u32::try_from(month + 1).unwrap_or(0);
    instant(year, month, day, clock, offset).map_err(|why| format!("`{text}`: {why}"))
}

/// `HH:MM:SS[.fraction]` at the start of `b`: (nanoseconds into the day, the rest).
fn time_of_day(b: &[u8]) -> Option<(i128, &[u8])> {
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (num(b, 0, 2)?, num(b, 3, 2)?, num(b, 6, 2)?);
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    let mut rest = &b[8..];
    let mut frac_ns = 0i128;
    if let [b'.', tail @ ..] = rest {
        let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
        // More than nine decimals is finer than a nanosecond: refused, not rounded.
        if n == 0 || n > 9 {
            return None;
        }
        let digits = std::str::from_utf8(&tail[..n]).ok()?;
        frac_ns = digits.parse::<i128>().ok()? * 10i128.pow(9 - u32::try_from(n).ok()?);
        rest = &tail[n..];
    }
    let secs = i128::from(h) * 3600 + i128::from(m) * 60 + i128::from(s);
    Some((secs * NS + frac_ns, rest))
}

/// The `len` ASCII digits of `b` at `at`, or `None`.
fn num(b: &[u8], at: usize, len: usize) -> Option<u32> {
    let digits = b.get(at..at + len)?;
    digits.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

/// A zone offset in seconds east of UTC, if its hours and minutes are in range.
fn offset_secs(sign: u8, hours: u32, minutes: u32) -> Option<i128> {
    if hours > 23 || minutes > 59 {
        return None;
    }
    let secs = i128::from(hours * 3600 + minutes * 60);
    Some(if sign == b'-' { -secs } else { secs })
}

/// The instant of a local date and time at a zone `offset` (seconds east of UTC).
fn instant(year: u32, month: u32, day: u32, clock: i128, offset: i128) -> Result<Stamp, String> {
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(format!("no such date ({year:04}-{month:02}-{day:02})"));
    }
    let days = days_from_civil(i128::from(year), i128::from(month), i128::from(day));
    Ok(days * 86_400 * NS + clock - offset * NS)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i128, m: i128, d: i128) -> i128 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_is_zero_in_every_absolute_format() {
        assert_eq!(parse("1970-01-01T00:00:00Z", TimeFormat::Rfc3339), Ok(0));
        assert_eq!(parse("01/Jan/1970:00:00:00 +0000", TimeFormat::Clf), Ok(0));
        assert_eq!(parse("0", TimeFormat::EpochMs), Ok(0));
    }

    #[test]
    fn a_leap_day_exists_only_in_leap_years() {
        assert!(parse("2024-02-29T00:00:00Z", TimeFormat::Rfc3339).is_ok());
        assert!(parse("2023-02-29T00:00:00Z", TimeFormat::Rfc3339).is_err());
        assert!(parse("2000-02-29T00:00:00Z", TimeFormat::Rfc3339).is_ok());
        assert!(parse("1900-02-29T00:00:00Z", TimeFormat::Rfc3339).is_err());
    }

    #[test]
    fn garbage_is_an_error_in_every_format_never_a_panic() {
        for text in [
            "",
            "-",
            ".",
            "1e9",
            "é",
            "[",
            "10/Oct/2000:13:55:36 -07",
            "🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂",
        ] {
            for name in TimeFormat::NAMES {
                let format = TimeFormat::from_name(name).unwrap();
                assert!(parse(text, format).is_err(), "{text:?} as {name}");
            }
        }
        assert!(
            parse("1.", TimeFormat::EpochS).is_err(),
            "a dot needs decimals"
        );
    }

    /// `text` as RFC 3339, in whole seconds since the epoch.
    fn rfc_secs(text: &str) -> Result<i128, String> {
        parse(text, TimeFormat::Rfc3339).map(|ns| ns.div_euclid(NS))
    }

    #[test]
    fn absolute_times_are_unix_times_across_centuries_and_before_1970() {
        // Checked against Python's `calendar.timegm`.
        let cases: [(&str, i128); 10] = [
            ("1969-12-31T23:59:59Z", -1),
            ("0001-01-01T00:00:00Z", -62_135_596_800),
            ("1600-02-29T00:00:00Z", -11_670_998_400),
            ("1900-02-28T00:00:00Z", -2_203_977_600),
            ("1900-03-01T00:00:00Z", -2_203_891_200),
            ("2000-02-29T12:00:00Z", 951_825_600),
            ("2000-03-01T00:00:00Z", 951_868_800),
            ("2024-05-14T09:00:00Z", 1_715_677_200),
            ("2100-03-01T00:00:00Z", 4_107_542_400),
            ("9999-12-31T23:59:59Z", 253_402_300_799),
        ];
        for (text, secs) in cases {
            assert_eq!(rfc_secs(text), Ok(secs), "{text}");
        }
    }

    #[test]
    fn every_common_log_month_name_is_its_month() {
        let names = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        for (i, name) in names.iter().enumerate() {
            let clf = format!("01/{name}/2023:00:00:00 +0000");
            let rfc = format!("2023-{:02}-01T00:00:00Z", i + 1);
            assert_eq!(
                parse(&clf, TimeFormat::Clf),
                parse(&rfc, TimeFormat::Rfc3339),
                "{clf}"
            );
        }
        assert!(parse("01/Foo/2023:00:00:00 +0000", TimeFormat::Clf).is_err());
    }

    #[test]
    fn each_month_ends_on_its_last_day() {
        let last = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        for (month, days) in (1..).zip(last) {
            let day = |d: u32| rfc_secs(&format!("2023-{month:02}-{d:02}T00:00:00Z"));
            assert!(day(days).is_ok(), "2023-{month:02}-{days}");
            let err = day(days + 1).unwrap_err();
            assert!(err.contains("no such date"), "{err}");
        }
        for text in [
            "2023-01-00T00:00:00Z",
            "2023-00-10T00:00:00Z",
            "2023-13-10T00:00:00Z",
        ] {
            let err = rfc_secs(text).unwrap_err();
            assert!(err.contains("no such date"), "{text}: {err}");
        }
        let err = parse("00/Jan/2023:00:00:00 +0000", TimeFormat::Clf).unwrap_err();
        assert!(err.contains("no such date"), "{err}");
    }

    #[test]
    fn a_clock_or_zone_out_of_range_or_misspelled_is_an_error() {
        let latest = rfc_secs("2024-05-14T23:59:59.999999999+23:59");
        assert_eq!(latest, Ok(1_715_731_199 - (23 * 3600 + 59 * 60)));
        for text in [
            "2024-05-14T24:00:00Z",
            "2024-05-14T23:60:00Z",
            "2024-05-14T23:59:60Z",
            "2024-05-14T24:60:00Z",
            "2024-05-14T09x00:00Z",
            "2024-05-14T09:00x00Z",
            "2024-05-14T09:00:00.Z",
            "2024-05-14T09:00:00+24:00",
            "2024-05-14T09:00:00+00:60",
            "2024-05-14T09:00:00+0000",
            "2024-05-14T09:00:00",
        ] {
            assert!(rfc_secs(text).is_err(), "{text}");
        }
        assert_eq!(
            parse("14/May/2024:23:59:59 -2359", TimeFormat::Clf).map(|ns| ns / NS),
            Ok(1_715_731_199 + 23 * 3600 + 59 * 60)
        );
        for text in [
            "14/May/2024:09:00:00 +2400",
            "14/May/2024:09:00:00 -0060",
            "14/May/2024:24:00:00 +0000",
            "14/May/2024:09:00:00 +00:00",
        ] {
            assert!(parse(text, TimeFormat::Clf).is_err(), "{text}");
        }
    }

    #[test]
    fn a_clock_is_read_from_the_start_of_its_bytes() {
        assert_eq!(time_of_day(b"23:59:59"), Some((86_399 * NS, &b""[..])));
        assert_eq!(
            time_of_day(b"00:00:01.5 +0100"),
            Some((NS + NS / 2, &b" +0100"[..]))
        );
        assert_eq!(time_of_day(b"23:59"), None);
    }

    #[test]
    fn an_epoch_before_1970_is_negative() {
        assert_eq!(parse("-1.5", TimeFormat::EpochS), Ok(-1_500_000_000));
        assert_eq!(parse("-1500", TimeFormat::EpochMs), Ok(-1_500_000_000));
        assert_eq!(parse("-7", TimeFormat::EpochNs), Ok(-7));
    }

    #[test]
    fn an_epoch_time_that_is_not_a_number_says_which_unit_was_expected() {
        for text in ["", ".5", "1e9", "1.x", "x.5"] {
            let err = parse(text, TimeFormat::EpochMs).unwrap_err();
            assert_eq!(
                err,
                format!(
                    "`{text}` is not a number; expected milliseconds since the Unix epoch, \
                     like 1700000000 or 1700000000.25"
                )
            );
        }
        let err = parse("1e9", TimeFormat::EpochNs).unwrap_err();
        assert_eq!(
            err,
            "`1e9` is not a number; expected whole nanoseconds since the Unix epoch, like \
             1700000000000000000"
        );
        let err = parse("1000000000000000000000000000000", TimeFormat::EpochS).unwrap_err();
        assert!(err.ends_with("is too large for a time"), "{err}");
    }

    #[test]
    fn a_date_and_time_need_their_separators() {
        assert!(rfc_secs("2024-05-14T09:00:00Z").is_ok());
        for text in [
            "2024x05-14T09:00:00Z",
            "2024-05x14T09:00:00Z",
            "2024-05-14x09:00:00Z",
        ] {
            assert!(rfc_secs(text).is_err(), "{text}");
        }
        assert!(parse("14/May/2024:09:00:00 +0000", TimeFormat::Clf).is_ok());
        for text in [
            "14xMay/2024:09:00:00 +0000",
            "14/Mayx2024:09:00:00 +0000",
            "14/May/2024x09:00:00 +0000",
        ] {
            assert!(parse(text, TimeFormat::Clf).is_err(), "{text}");
        }
    }
}
