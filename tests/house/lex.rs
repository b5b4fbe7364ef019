//! A small Rust lexer for the layering check: identifiers, `::` and the punctuation a
//! path or a `use` tree is made of, with their line numbers. Comments, strings, char
//! literals, lifetimes and numbers are dropped, so a path inside a doc comment or a
//! string never counts as an import. Not a full lexer: it only has to find paths.

/// One token of interest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// An identifier or keyword (`r#` stripped; `$crate` comes as `$` then `crate`).
    Ident(String),
    /// `::`
    Path,
    /// Any other punctuation character.
    Punct(char),
    /// A string literal's text as written between its quotes (escapes not undone).
    Str(String),
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

/// The tokens of `text`.
pub fn tokens(text: &str) -> Vec<Token> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < s.len() {
        let c = s[i];
        let start_line = line;
        let next = s.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&s, i, &mut line);
        } else if let Some(end) = raw_string_end(&s, i, &mut line) {
            let text = s[i..end].iter().collect();
            out.push(Token {
                tok: Tok::Str(text),
                line: start_line,
            });
            i = end;
        } else if c == '"' || (matches!(c, 'b' | 'c') && next == Some('"')) {
            let from = if c == '"' { i } else { i + 1 };
            i = skip_string(&s, from, &mut line);
            let text = s[from + 1..i.saturating_sub(1).max(from + 1)]
                .iter()
                .collect();
            out.push(Token {
                tok: Tok::Str(text),
                line: start_line,
            });
        } else if c == '\'' || (c == 'b' && next == Some('\'')) {
            i = skip_quote(&s, if c == '\'' { i } else { i + 1 });
        } else if c.is_ascii_digit() {
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            if c == 'r' && next == Some('#') {
                i += 2; // a raw identifier (raw strings were handled above)
            }
            let from = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let word: String = s[from..i].iter().collect();
            out.push(Token {
                tok: Tok::Ident(word),
                line: start_line,
            });
        } else if c == ':' && next == Some(':') {
            out.push(Token {
                tok: Tok::Path,
                line: start_line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line: start_line,
            });
            i += 1;
        }
    }
    out
}

/// Past a (nested) `/* */` comment starting at `i`.
fn skip_block_comment(s: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            *line += usize::from(s[i] == '\n');
            i += 1;
        }
    }
    i
}

/// Past a raw string (`r"…"`, `r#"…"#`, `br#"…"#`, `cr"…"`) starting at `i`, if one does.
fn raw_string_end(s: &[char], i: usize, line: &mut usize) -> Option<usize> {
    let mut j = i;
    if matches!(s[j], 'b' | 'c') {
        j += 1;
    }
    if s.get(j) != Some(&'r') || (j > i && !matches!(s.get(j + 1), Some('"' | '#'))) {
        return None;
    }
    if j == i && i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_') {
        return None; // the `r` ends an identifier
    }
    j += 1;
    let mut hashes = 0;
    while s.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if s.get(j) != Some(&'"') {
        return None; // `r#ident` or a plain `r`
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"' && (1..=hashes).all(|k| s.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        *line += usize::from(s[j] == '\n');
        j += 1;
    }
    Some(j)
}

/// Past a `"…"` string whose opening quote is at `i`.
fn skip_string(s: &[char], mut i: usize, line: &mut usize) -> usize {
    i += 1;
    while i < s.len() && s[i] != '"' {
        if s[i] == '\\' {
            i += 1;
        }
        if s.get(i) == Some(&'\n') {
            *line += 1;
        }
        i += 1;
    }
    i + 1
}

/// Past a char literal or a lifetime whose quote is at `i`.
fn skip_quote(s: &[char], i: usize) -> usize {
    match (s.get(i + 1), s.get(i + 2)) {
        (Some('\\'), _) => {
            let mut j = i + 3; // past the quote, the backslash and the escaped character
            while j < s.len() && s[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        (Some(_), Some('\'')) => i + 3,
        _ => {
            // A lifetime or a label: the quote and its identifier.
            let mut j = i + 1;
            while j < s.len() && (s[j].is_alphanumeric() || s[j] == '_') {
                j += 1;
            }
            j
        }
    }
}
