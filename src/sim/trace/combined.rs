//! The nginx/Apache combined log format, and the common log format it extends:
//!
//! `ip ident user [10/Oct/2000:13:55:36 -0700] "GET /path HTTP/1.1" status bytes
//! "referer" "user agent"` (common stops after `bytes`; fields after the user agent
//! are ignored). Quoted fields may hold `\"` and `\\` escapes (Apache) or `\x22`
//! (nginx, kept as written). Blank lines are skipped. This file only splits a line into
//! the named [`FIELDS`]; it interprets no value.
//!
//! A line is split as bytes, each field a range of one buffer (no allocation per field):
//! bytes that are not UTF-8 are refused only in a field that is asked for (the key, the
//! time, the status, the cost); a line that has them elsewhere is read and counted
//! ([`Format::lossy`]). The request line is split as servers write it: the method, then
//! the target (which may hold spaces), then the protocol when the last word is `HTTP/…`
//! (HTTP/0.9 lines have none); runs of spaces separate words.

use std::borrow::Cow;
use std::ops::Range;

use super::input::{Input, Lines};
use super::{Fault, Format};

/// The fields of a combined line, as a scenario names them (`key = "ip"`). `request`
/// is the request line; `method`, `target` and `protocol` are its parts (`protocol`
/// absent in an HTTP/0.9 line), `path` the target without its query string. `time` is
/// always in `clf` form.
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

const REQUEST: usize = 4;
const BYTES: usize = 10;

/// The fields of one line: ranges of `text`.
type Spans = [Option<Range<usize>>; FIELDS.len()];

/// A combined or common log being read.
pub(super) struct CombinedLog {
    lines: Lines,
    /// The current line's bytes, followed by the unescaped copies of its quoted fields
    /// that held escapes (and the `0` a byte count of `-` stands for).
    text: Vec<u8>,
    /// The current line's fields, in the order of [`FIELDS`].
    fields: Spans,
    /// Whether the current line holds bytes that are not UTF-8.
    lossy: bool,
}

impl CombinedLog {
    pub(super) fn new(input: Input) -> CombinedLog {
        CombinedLog {
            lines: Lines::new(input),
            text: Vec::new(),
            fields: Default::default(),
            lossy: false,
        }
    }
}

impl Format for CombinedLog {
    fn advance(&mut self) -> Result<Option<usize>, Fault> {
        let text = &mut self.text;
        let Some((number, fields)) = self.lines.next_parsed_bytes(|line| {
            text.clear();
            text.extend_from_slice(line);
            parse(text)
        })?
        else {
            return Ok(None);
        };
        self.fields = fields;
        self.lossy = !self.text.is_ascii() && std::str::from_utf8(&self.text).is_err();
        Ok(Some(number))
    }

    fn field(&self, name: &str) -> Result<Option<Cow<'_, str>>, String> {
        let Some(index) = FIELDS.iter().position(|f| *f == name) else {
            return Ok(None);
        };
        let range = match (index, &self.fields[REQUEST]) {
            (5..9, Some(request)) => request_parts(&self.text, request.clone())[index - 5].clone(),
            _ => self.fields[index].clone(),
        };
        let Some(range) = range else {
            return Ok(None);
        };
        match std::str::from_utf8(&self.text[range]) {
            Ok(text) => Ok(Some(Cow::Borrowed(text))),
            Err(_) => Err(format!("the `{name}` field is not UTF-8 text")),
        }
    }

    fn lossy(&self) -> bool {
        self.lossy
    }
}

/// What a combined line looks like, for messages.
const EXPECTED: &str = "expected a combined log line: ip ident user [time] \"request\" status \
                        bytes \"referer\" \"user agent\"";

/// The fields of the line in `text` (which may grow: unescaped copies are appended), or
/// why it is not a combined (or common) log line.
fn parse(text: &mut Vec<u8>) -> Result<Spans, String> {
    let fail = |what: &str| format!("{what}; {EXPECTED}");
    let mut at = 0;
    let end = text.len();
    let mut fields: Spans = Default::default();
    fields[0] = Some(word(&text[..end], &mut at).ok_or_else(|| fail("no client address"))?);
    fields[1] = Some(word(&text[..end], &mut at).ok_or_else(|| fail("no ident field"))?);
    fields[2] = Some(word(&text[..end], &mut at).ok_or_else(|| fail("no user field"))?);
    fields[3] = Some(bracketed(&text[..end], &mut at).ok_or_else(|| fail("no [time]"))?);
    let request = quoted(text, &mut at, end).ok_or_else(|| fail("no quoted request"))?;
    let status = word(&text[..end], &mut at)
        .filter(|s| s.len() == 3 && text[s.clone()].iter().all(u8::is_ascii_digit))
        .ok_or_else(|| fail("no three-digit status"))?;
    let bytes = word(&text[..end], &mut at)
        .filter(|b| &text[b.clone()] == b"-" || text[b.clone()].iter().all(u8::is_ascii_digit))
        .ok_or_else(|| fail("no byte count"))?;
    // A common-log line ends here; a combined one has the referer and user agent.
    let blank = std::str::from_utf8(&text[at..end]).is_ok_and(|rest| rest.trim().is_empty());
    if !blank {
        fields[11] = Some(quoted(text, &mut at, end).ok_or_else(|| fail("no quoted referer"))?);
        fields[12] = Some(quoted(text, &mut at, end).ok_or_else(|| fail("no quoted user agent"))?);
    }
    fields[REQUEST] = Some(request); // its parts are split when asked for
    fields[9] = Some(status);
    // A byte count of "-" is nginx's and Apache's way of writing 0.
    fields[BYTES] = Some(if &text[bytes.clone()] == b"-" {
        text.push(b'0');
        text.len() - 1..text.len()
    } else {
        bytes
    });
    Ok(fields)
}

/// `method`, `target`, `path` and `protocol` of the request line at `r`, as servers log
/// it: `GET /a HTTP/1.0` has three parts; `GET /a b HTTP/1.0` the target `/a b`;
/// `GET /ksc.html` (HTTP/0.9) no protocol; runs of spaces separate parts. A line that
/// does not start with a method followed by a target has none of them.
fn request_parts(text: &[u8], r: Range<usize>) -> [Option<Range<usize>>; 4] {
    let line = &text[r.clone()];
    let at = |a: usize, b: usize| Some(r.start + a..r.start + b);
    let space = |from: usize| {
        line[from..]
            .iter()
            .position(|&b| b == b' ')
            .map(|i| from + i)
    };
    let Some(m) = space(0).filter(|&m| m > 0) else {
        return [None, None, None, None];
    };
    let (target, protocol) = match space(m + 1) {
        // Exactly three parts, one space apart: the common case, whatever the protocol.
        Some(t) if t > m + 1 && space(t + 1).is_none() => ((m + 1, t), at(t + 1, line.len())),
        _ => {
            let start = m + 1 + line[m + 1..].iter().take_while(|&&b| b == b' ').count();
            let end = line.len() - line.iter().rev().take_while(|&&b| b == b' ').count();
            let last = line[start..end]
                .iter()
                .rposition(|&b| b == b' ')
                .map(|i| start + i);
            match last {
                Some(l) if line[l + 1..end].starts_with(b"HTTP/") => {
                    let t_end = l - line[start..l]
                        .iter()
                        .rev()
                        .take_while(|&&b| b == b' ')
                        .count();
                    ((start, t_end), at(l + 1, end))
                }
                None if line[start..end].starts_with(b"HTTP/") => ((start, start), None),
                _ => ((start, end), None),
            }
        }
    };
    if target.0 >= target.1 {
        return [None, None, None, None];
    }
    let query = line[target.0..target.1].iter().position(|&b| b == b'?');
    let path_end = query.map_or(target.1, |q| target.0 + q);
    [
        at(0, m),
        at(target.0, target.1),
        at(target.0, path_end),
        protocol,
    ]
}

/// The next space-separated word from `at`.
fn word(text: &[u8], at: &mut usize) -> Option<Range<usize>> {
    let start = *at + text[*at..].iter().take_while(|&&b| b == b' ').count();
    let len = memchr::memchr(b' ', &text[start..]).unwrap_or(text.len() - start);
    *at = start + len;
    (len > 0).then_some(start..start + len)
}

/// The next `[…]` from `at`, without the brackets.
fn bracketed(text: &[u8], at: &mut usize) -> Option<Range<usize>> {
    let start = *at + text[*at..].iter().take_while(|&&b| b == b' ').count();
    if text.get(start) != Some(&b'[') {
        return None;
    }
    let len = memchr::memchr(b']', &text[start + 1..])?;
    *at = start + 1 + len + 1;
    Some(start + 1..start + 1 + len)
}

/// The next `"…"` from `at` (before `end`, the line's end), without the quotes: its
/// range in the line, or of an unescaped copy (`\"` and `\\`) appended to `text`.
fn quoted(text: &mut Vec<u8>, at: &mut usize, end: usize) -> Option<Range<usize>> {
    let start = *at + text[*at..end].iter().take_while(|&&b| b == b' ').count();
    if text.get(start) != Some(&b'"') || start >= end {
        return None;
    }
    let open = start + 1;
    let mut i = open;
    loop {
        i += memchr::memchr2(b'"', b'\\', &text[i..end])?;
        if text[i] == b'"' {
            break;
        }
        i += 2; // an escape and the byte it escapes
        if i > end {
            return None;
        }
    }
    *at = i + 1;
    if !text[open..i].contains(&b'\\') {
        return Some(open..i);
    }
    // Unescape into a copy after everything else.
    let copy = text.len();
    let mut j = open;
    while j < i {
        let b = text[j];
        if b == b'\\' && matches!(text[j + 1], b'"' | b'\\') {
            text.push(text[j + 1]);
            j += 2;
        } else if b == b'\\' {
            text.push(b'\\');
            text.push(text[j + 1]);
            j += 2;
        } else {
            text.push(b);
            j += 1;
        }
    }
    Some(copy..text.len())
}
