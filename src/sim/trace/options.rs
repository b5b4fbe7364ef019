//! How a trace file is read: its format, which fields make the key, the cost and the
//! time, and what to do with unsorted, whole-second, filtered and bad lines.
//!
//! Plain validated values with their defaults; [`TraceOptions::default`] is today's
//! `time_s,key[,cost]` CSV. The scenario module builds these from `[[traffic]]` fields
//! (and reports mistakes at the field); this module parses only what is self-contained
//! (a key template, a status class) and reads no file.

use crate::time::Nanos;

/// Everything that says how to read one trace file. The default reads the
/// `time_s,key[,cost]` CSV exactly as it always has.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceOptions {
    /// The log format. Default [`TraceFormat::Csv`].
    pub format: TraceFormat,
    /// What identifies a client. Default: the `key` field (CSV), `ip` (combined, JSONL).
    pub key: Option<KeyTemplate>,
    /// The field holding a request's cost. Default: the `cost` column when a CSV row
    /// has one; otherwise none (every request costs the source's `cost`).
    pub cost_field: Option<String>,
    /// The field holding the time (CSV, JSONL). Default `time_s` (CSV), `time` (JSONL).
    pub time_field: Option<String>,
    /// How the time is written (CSV, JSONL). Default [`TimeFormat::Seconds`] (CSV),
    /// [`TimeFormat::Rfc3339`] (JSONL); always [`TimeFormat::Clf`] for combined.
    pub time_format: Option<TimeFormat>,
    /// The instant that becomes t = 0, in ns since the Unix epoch (absolute time
    /// formats only). Default: the earliest request's instant.
    pub origin: Option<i128>,
    /// What to do with the requests of one second. Default [`SameSecond::Keep`].
    pub same_second: SameSecond,
    /// How far out of order a line may be (its time earlier than the latest seen).
    /// Default 0: lines must be sorted.
    pub reorder: Nanos,
    /// Keep only requests whose status matches one of these (empty: keep all).
    pub include_status: Vec<StatusMatch>,
    /// Drop requests whose status matches one of these.
    pub exclude_status: Vec<StatusMatch>,
    /// Skip (and count) lines that are not requests instead of failing. Default false.
    pub skip_bad_lines: bool,
}

impl TraceOptions {
    /// The time format in effect, defaults applied.
    pub fn effective_time_format(&self) -> TimeFormat {
        match self.format {
            TraceFormat::Combined => TimeFormat::Clf,
            TraceFormat::Csv => self.time_format.unwrap_or(TimeFormat::Seconds),
            TraceFormat::Jsonl => self.time_format.unwrap_or(TimeFormat::Rfc3339),
        }
    }

    /// The time field in effect, defaults applied.
    pub fn effective_time_field(&self) -> &str {
        match (&self.time_field, self.format) {
            (Some(f), _) => f,
            (None, TraceFormat::Csv) => "time_s",
            (None, _) => "time",
        }
    }

    /// The key in effect, defaults applied.
    pub fn effective_key(&self) -> KeyTemplate {
        self.key.clone().unwrap_or_else(|| match self.format {
            TraceFormat::Csv => KeyTemplate::field("key"),
            TraceFormat::Combined | TraceFormat::Jsonl => KeyTemplate::field("ip"),
        })
    }
}

/// A trace file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceFormat {
    /// Comma-separated values: `time_s,key[,cost]`, or named columns (default).
    #[default]
    Csv,
    /// nginx/Apache combined (or common) log format.
    Combined,
    /// One JSON object per line.
    Jsonl,
}

impl TraceFormat {
    /// Every format, as written in a scenario.
    pub const NAMES: [&'static str; 3] = ["csv", "combined", "jsonl"];

    /// The format called `name` in a scenario.
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        match name {
            "csv" => Some(TraceFormat::Csv),
            "combined" => Some(TraceFormat::Combined),
            "jsonl" => Some(TraceFormat::Jsonl),
            _ => None,
        }
    }

    /// The name a scenario uses.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Csv => "csv",
            TraceFormat::Combined => "combined",
            TraceFormat::Jsonl => "jsonl",
        }
    }
}

/// How a trace's times are written. Every format is read exactly, to the nanosecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    /// Decimal seconds since the start of the run (`1.5`): t is the value itself.
    Seconds,
    /// Seconds since the Unix epoch, integer or decimal (`1700000000.25`).
    EpochS,
    /// Milliseconds since the Unix epoch, integer or decimal.
    EpochMs,
    /// Microseconds since the Unix epoch, integer or decimal.
    EpochUs,
    /// Nanoseconds since the Unix epoch, an integer.
    EpochNs,
    /// RFC 3339: `2024-05-14T09:00:00.5+02:00` (`Z`, any offset, up to 9 decimals).
    Rfc3339,
    /// Common log format: `10/Oct/2000:13:55:36 -0700` (brackets optional).
    Clf,
}

impl TimeFormat {
    /// Every format a scenario may name, in the order messages list them.
    pub const NAMES: [&'static str; 7] = [
        "seconds", "epoch_s", "epoch_ms", "epoch_us", "epoch_ns", "rfc3339", "clf",
    ];

    /// The format called `name` in a scenario.
    pub fn from_name(name: &str) -> Option<TimeFormat> {
        Some(match name {
            "seconds" => TimeFormat::Seconds,
            "epoch_s" => TimeFormat::EpochS,
            "epoch_ms" => TimeFormat::EpochMs,
            "epoch_us" => TimeFormat::EpochUs,
            "epoch_ns" => TimeFormat::EpochNs,
            "rfc3339" => TimeFormat::Rfc3339,
            "clf" => TimeFormat::Clf,
            _ => return None,
        })
    }

    /// Whether times are absolute instants (so the first one, or `origin`, is t = 0)
    /// rather than offsets from the start of the run.
    pub fn is_absolute(self) -> bool {
        self != TimeFormat::Seconds
    }
}

/// What happens to the requests a whole-second log puts at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SameSecond {
    /// Leave every request at the instant written (default).
    #[default]
    Keep,
    /// Spread the `n` requests of each second evenly over it: the `i`-th (0-based, in
    /// time then file order) at `second + floor(i × 1 s / n)`. Sub-second parts are
    /// replaced, so this is meant for whole-second logs.
    Spread,
}

/// A status code (`404`) or a class of them (`"4xx"`), as an inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusMatch {
    /// The lowest matching status.
    pub low: u16,
    /// The highest matching status.
    pub high: u16,
}

impl StatusMatch {
    /// One status code, from 100 to 599.
    pub fn code(code: u64) -> Result<StatusMatch, String> {
        match u16::try_from(code) {
            Ok(c) if (100..=599).contains(&c) => Ok(StatusMatch { low: c, high: c }),
            _ => Err(format!(
                "`{code}` is not an HTTP status; expected 100 to 599 or a class like \"4xx\""
            )),
        }
    }

    /// A class written `"Nxx"` (N from 1 to 5), or a code written as a string.
    pub fn parse(text: &str) -> Result<StatusMatch, String> {
        let bytes = text.as_bytes();
        if let [d @ b'1'..=b'5', b'x' | b'X', b'x' | b'X'] = bytes {
            let low = u16::from(d - b'0') * 100;
            return Ok(StatusMatch {
                low,
                high: low + 99,
            });
        }
        match text.parse::<u64>() {
            Ok(code) => StatusMatch::code(code),
            Err(_) => Err(format!(
                "`{text}` is not a status; expected a code like 404 or a class like \"4xx\""
            )),
        }
    }

    /// Whether `status` is in this range.
    pub fn matches(self, status: u16) -> bool {
        (self.low..=self.high).contains(&status)
    }
}

/// A client's key made of a line's fields: `"ip"` (one field) or a template such as
/// `"{ip} {path}"`, where `{name}` is a field and `{{` / `}}` are literal braces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    parts: Vec<KeyPart>,
}

/// A piece of a [`KeyTemplate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyPart {
    /// Text copied as is.
    Literal(String),
    /// The value of a field.
    Field(String),
}

impl KeyTemplate {
    /// The key that is one field's value.
    pub fn field(name: &str) -> KeyTemplate {
        KeyTemplate {
            parts: vec![KeyPart::Field(name.to_string())],
        }
    }

    /// Reads `text`: a bare field name, or a template with `{field}` parts.
    ///
    /// ```
    /// use ratesim::sim::KeyTemplate;
    /// assert_eq!(KeyTemplate::parse("{ip} {path}")?.fields().collect::<Vec<_>>(), ["ip", "path"]);
    /// assert_eq!(KeyTemplate::parse("user")?.fields().collect::<Vec<_>>(), ["user"]);
    /// assert!(KeyTemplate::parse("{ip").is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(text: &str) -> Result<KeyTemplate, String> {
        if text.is_empty() {
            return Err(
                "empty key; expected a field name like \"ip\" or a template like \
                        \"{ip} {path}\""
                    .to_string(),
            );
        }
        if !text.contains(['{', '}']) {
            return Ok(KeyTemplate::field(text));
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('{', Some('{')) | ('}', Some('}')) => {
                    chars.next();
                    literal.push(c);
                }
                ('{', _) => {
                    let mut name = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    if !closed {
                        return Err(format!("bad key template `{text}`: a `{{` is not closed"));
                    }
                    if name.is_empty() || name.contains('{') {
                        return Err(format!(
                            "bad key template `{text}`: expected a field name inside each \
                             `{{…}}` (write `{{{{` for a literal brace)"
                        ));
                    }
                    if !literal.is_empty() {
                        parts.push(KeyPart::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(KeyPart::Field(name));
                }
                ('}', _) => {
                    return Err(format!(
                        "bad key template `{text}`: a `}}` closes nothing (write `}}}}` for a \
                         literal brace)"
                    ));
                }
                _ => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(KeyPart::Literal(literal));
        }
        if !parts.iter().any(|p| matches!(p, KeyPart::Field(_))) {
            return Err(format!(
                "bad key template `{text}`: it names no field, so every request would have \
                 the same key"
            ));
        }
        Ok(KeyTemplate { parts })
    }

    /// The fields the key is made of, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            KeyPart::Field(f) => Some(f.as_str()),
            KeyPart::Literal(_) => None,
        })
    }

    /// The template's pieces.
    pub(crate) fn parts(&self) -> &[KeyPart] {
        &self.parts
    }
}
