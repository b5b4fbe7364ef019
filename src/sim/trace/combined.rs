//! The nginx/Apache combined log format, and the common log format it extends:
//!
//! `ip ident user [10/Oct/2000:13:55:36 -0700] "GET /path HTTP/1.1" status bytes
//! "referer" "user agent"` (common stops after `bytes`; fields after the user agent
//! are ignored). Quoted fields may hold `\"` and `\\` escapes (Apache) or `\x22`
//! (nginx, kept as written). Blank lines are skipped. This file only splits a line into
//! the named [`FIELDS`]; it interprets no value.

use std::borrow::Cow;

use super::input::{Input, Lines};
use super::{Fault, Format};

/// The fields of a combined line, as a scenario names them (`key = "ip"`). `request`
/// is the request line; `method`, `target` and `protocol` are its three parts, `path`
/// the target without its query string. `time` is always in `clf` form.
pub const FIELDS: [&str; 13] = [
    "ip",
    "ident",
    "user",
    "time",
    "request",
    "method",
    "target",
    "path",
    "protocol",
    "status",
    "bytes",
    "referer",
    "user_agent",
];

/// A combined or common log being read.
pub(super) struct CombinedLog {
    lines: Lines,
    /// The current line's fields, in the order of [`FIELDS`].
    fields: [Option<String>; FIELDS.len()],
}

impl CombinedLog {
    pub(super) fn new(input: Input) -> CombinedLog {
        CombinedLog {
            lines: Lines::new(input),
            fields: Default::default(),
        }
    }
}

impl Format for CombinedLog {
    fn advance(&mut self) -> Result<Option<usize>, Fault> {
        let Some((number, fields)) = self.lines.next_parsed(parse)? else {
            return Ok(None);
        };
        self.fields = fields;
        Ok(Some(number))
    }

    fn field(&self, name: &str) -> Result<Option<Cow<'_, str>>, String> {
        let index = FIELDS.iter().position(|f| *f == name);
        Ok(index
            .and_then(|i| self.fields[i].as_deref())
            .map(Cow::Borrowed))
    }
}

/// What a combined line looks like, for messages.
const EXPECTED: &str = "expected a combined log line: ip ident user [time] \"request\" status \
                        bytes \"referer\" \"user agent\"";

/// The fields of one line, or why it is not a combined (or common) log line.
fn parse(line: &str) -> Result<[Option<String>; FIELDS.len()], String> {
    let mut rest = line;
    let fail = |what: &str| format!("{what}; {EXPECTED}");
    let ip = word(&mut rest).ok_or_else(|| fail("no client address"))?;
    let ident = word(&mut rest).ok_or_else(|| fail("no ident field"))?;
    let user = word(&mut rest).ok_or_else(|| fail("no user field"))?;
    let time = bracketed(&mut rest).ok_or_else(|| fail("no [time]"))?;
    let request = quoted(&mut rest).ok_or_else(|| fail("no quoted request"))?;
    let status = word(&mut rest)
        .filter(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| fail("no three-digit status"))?;
    let bytes = word(&mut rest)
        .filter(|b| *b == "-" || b.bytes().all(|c| c.is_ascii_digit()))
        .ok_or_else(|| fail("no byte count"))?;
    // A common-log line ends here; a combined one has the referer and user agent.
    let (referer, user_agent) = if rest.trim().is_empty() {
        (None, None)
    } else {
        let referer = quoted(&mut rest).ok_or_else(|| fail("no quoted referer"))?;
        let agent = quoted(&mut rest).ok_or_else(|| fail("no quoted user agent"))?;
        (Some(referer), Some(agent))
    };
    let parts: Vec<&str> = request.split(' ').collect();
    let (method, target, protocol) = match parts.as_slice() {
        [m, t, p] if !m.is_empty() && !t.is_empty() => (Some(*m), Some(*t), Some(*p)),
        _ => (None, None, None),
    };
    let path = target.map(|t| t.split_once('?').map_or(t, |(p, _)| p));
    // A byte count of "-" is nginx's and Apache's way of writing 0.
    let bytes = if bytes == "-" { "0" } else { bytes };
    let own = |s: Option<&str>| s.map(str::to_string);
    Ok([
        Some(ip.to_string()),
        Some(ident.to_string()),
        Some(user.to_string()),
        Some(time.to_string()),
        Some(request.clone()),
        own(method),
        own(target),
        own(path),
        own(protocol),
        Some(status.to_string()),
        Some(bytes.to_string()),
        referer,
        user_agent,
    ])
}

/// The next space-separated word of `rest`.
fn word<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let s = rest.trim_start_matches(' ');
    let end = s.find(' ').unwrap_or(s.len());
    let (w, tail) = s.split_at(end);
    *rest = tail;
    (!w.is_empty()).then_some(w)
}

/// The next `[…]` of `rest`, without the brackets.
fn bracketed<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let s = rest.trim_start_matches(' ').strip_prefix('[')?;
    let (inside, tail) = s.split_once(']')?;
    *rest = tail;
    Some(inside)
}

/// The next `"…"` of `rest`, unescaped (`\"` and `\\`), without the quotes.
fn quoted(rest: &mut &str) -> Option<String> {
    let s = rest.trim_start_matches(' ').strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                *rest = &s[i + 1..];
                return Some(out);
            }
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => out.push(e),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => return None,
            },
            _ => out.push(c),
        }
    }
    None // no closing quote: a truncated line
}
