//! A trace's bytes: plain or gzip-compressed (recognised by its magic bytes, whatever
//! the file is called), streamed, and cut into bounded lines.
//!
//! Nothing here is ever held whole: gzip is decompressed as it is read, and a line
//! longer than [`MAX_LINE`] is consumed without being stored (and reported as not a
//! request). This module knows nothing of formats or fields.

use std::io::{self, BufRead, BufReader, Read};

use flate2::bufread::MultiGzDecoder;

use super::Fault;

/// The first two bytes of every gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The longest line kept, in bytes: far beyond any real log line, small enough that
/// garbage without newlines cannot exhaust memory.
pub(super) const MAX_LINE: usize = 1 << 20;

type Boxed = Box<dyn Read + Send>;

/// A trace's decoded bytes: gzip is detected on the first read and decompressed
/// (every member of a multi-member file, as `zcat` does).
pub(super) struct Input {
    inner: Inner,
}

enum Inner {
    /// Not read yet: whether it is gzip is decided by its first bytes.
    Pending(BufReader<Boxed>),
    Plain(BufReader<Boxed>),
    Gzip(Box<MultiGzDecoder<BufReader<Boxed>>>),
}

impl Input {
    /// The bytes of `reader`, decompressed if they are gzip.
    pub(super) fn new(reader: impl Read + Send + 'static) -> Input {
        Input {
            inner: Inner::Pending(BufReader::new(Box::new(reader))),
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Inner::Pending(reader) = &mut self.inner {
            let gzip = reader.fill_buf()?.starts_with(&GZIP_MAGIC);
            let empty: Boxed = Box::new(io::empty());
            let reader = std::mem::replace(reader, BufReader::new(empty));
            self.inner = if gzip {
                Inner::Gzip(Box::new(MultiGzDecoder::new(reader)))
            } else {
                Inner::Plain(reader)
            };
        }
        match &mut self.inner {
            Inner::Pending(_) => Ok(0),
            Inner::Plain(r) => r.read(buf),
            Inner::Gzip(r) => r.read(buf),
        }
    }
}

/// One line of text, or why it is not one.
pub(super) enum Line<'a> {
    /// The line without its `\n` (or `\r\n`).
    Text(&'a str),
    /// Not UTF-8, or longer than [`MAX_LINE`]: not a request in any format.
    Bad(String),
}

/// A line's bytes, or why it is not kept.
type RawLine<'a> = Result<&'a [u8], String>;

/// An [`Input`] read one bounded line at a time, counting lines from 1.
pub(super) struct Lines {
    reader: BufReader<Input>,
    buf: Vec<u8>,
    number: usize,
}

impl Lines {
    /// The lines of `input`.
    pub(super) fn new(input: Input) -> Lines {
        Lines {
            reader: BufReader::new(input),
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next line that is not blank, split by `parse`, with its number; `None` at
    /// the end. A line that is not text, or that `parse` refuses, is a [`Fault::Bad`]
    /// naming it; an unreadable input is fatal. What every line-per-request format
    /// (combined, JSON lines) does before looking at its fields.
    pub(super) fn next_parsed<T>(
        &mut self,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<(usize, T)>, Fault> {
        loop {
            let next = self
                .next_line()
                .map_err(|e| Fault::Fatal(None, format!("cannot read trace: {e}")))?;
            let Some((number, line)) = next else {
                return Ok(None);
            };
            return match line {
                Line::Text(text) if text.trim().is_empty() => continue,
                Line::Text(text) => match parse(text) {
                    Ok(fields) => Ok(Some((number, fields))),
                    Err(why) => Err(Fault::Bad(number, why)),
                },
                Line::Bad(why) => Err(Fault::Bad(number, why)),
            };
        }
    }

    /// [`Lines::next_parsed`] for a format that splits bytes and checks text field by
    /// field: `parse` gets every non-blank line that fits in [`MAX_LINE`], UTF-8 or not.
    pub(super) fn next_parsed_bytes<T>(
        &mut self,
        parse: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Result<Option<(usize, T)>, Fault> {
        loop {
            let next = self
                .next_bytes()
                .map_err(|e| Fault::Fatal(None, format!("cannot read trace: {e}")))?;
            let Some((number, line)) = next else {
                return Ok(None);
            };
            return match line {
                Ok(bytes) if is_blank(bytes) => continue,
                Ok(bytes) => match parse(bytes) {
                    Ok(fields) => Ok(Some((number, fields))),
                    Err(why) => Err(Fault::Bad(number, why)),
                },
                Err(why) => Err(Fault::Bad(number, why)),
            };
        }
    }

    /// The next line and its 1-based number, or `None` at the end. Errors are the
    /// input's own (unreadable, a corrupt or truncated gzip stream).
    pub(super) fn next_line(&mut self) -> io::Result<Option<(usize, Line<'_>)>> {
        Ok(self.next_bytes()?.map(|(number, line)| {
            let line = match line.map(std::str::from_utf8) {
                Ok(Ok(text)) => Line::Text(text),
                Ok(Err(_)) => {
                    Line::Bad("not UTF-8 text (binary data?); expected a log line".to_string())
                }
                Err(why) => Line::Bad(why),
            };
            (number, line)
        }))
    }

    /// The next line's bytes (without `\n` or `\r\n`) and its 1-based number, or why
    /// it is not kept (too long); `None` at the end.
    fn next_bytes(&mut self) -> io::Result<Option<(usize, RawLine<'_>)>> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let room = MAX_LINE.saturating_sub(self.buf.len());
            if take > room {
                too_long = true;
            }
            self.buf.extend_from_slice(&chunk[..take.min(room)]);
            self.reader.consume(take);
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if too_long {
            let why = format!("a line longer than {MAX_LINE} bytes; expected a log line");
            return Ok(Some((self.number, Err(why))));
        }
        let mut bytes = self.buf.as_slice();
        bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        Ok(Some((self.number, Ok(bytes))))
    }
}

/// Whether `bytes` is blank as `str::trim` sees it (Unicode white space).
fn is_blank(bytes: &[u8]) -> bool {
    if bytes.first().is_some_and(u8::is_ascii_graphic) {
        return false; // the usual line, decided by its first byte
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.trim().is_empty(),
        Err(_) => false,
    }
}
