//! One source file read for the layering check: the modules it declares (`mod x;` and
//! inline `mod x { … }`), the items it defines, its `use` imports (trees flattened) and
//! the other paths its code names (`crate::a::b`, `super::x::f`, `child::T`).

use super::lex::{Tok, Token, tokens};

/// A module path from the crate root (`["sim", "engine"]`); the root is `[]`.
pub type ModPath = Vec<String>;

/// One flattened `use` import: `use a::b::{c as d, e::*}` gives two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The module (file or inline) the `use` is written in.
    pub scope: ModPath,
    /// The path as written (`super::x::C`), without the glob.
    pub segments: Vec<String>,
    /// The name it binds (`C`, or the alias); `None` for a glob.
    pub name: Option<String>,
    /// `pub use` / `pub(crate) use`: a re-export.
    pub public: bool,
    pub line: usize,
}

/// A path named in code outside `use`: `crate::sim::run`, `super::probe::Probe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRef {
    pub scope: ModPath,
    pub segments: Vec<String>,
    pub line: usize,
}

/// What one file holds.
#[derive(Debug, Default)]
pub struct FileItems {
    /// Modules declared without a body (`mod x;`): files to read next.
    pub file_mods: Vec<String>,
    /// Inline modules (`mod tests { … }`), as paths from the crate root.
    pub inline_mods: Vec<ModPath>,
    /// Items defined, with the module they are defined in.
    pub defined: Vec<(ModPath, String)>,
    pub imports: Vec<Import>,
    pub paths: Vec<PathRef>,
    /// Every identifier outside `use` declarations (to see whether a re-export is also
    /// used by the file itself).
    pub words: Vec<String>,
}

const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

/// Reads the file of module `module` (its text `text`).
pub fn parse_file(module: &ModPath, text: &str) -> FileItems {
    let toks = tokens(text);
    let mut items = FileItems::default();
    // Open inline modules: (name, brace depth at which their body started).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let scope = scope_of(module, &inline);
        match &toks[i].tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "use" && at_item_start(&toks, i) => {
                let public = is_public(&toks, i);
                i = parse_use(&toks, i + 1, &scope, public, &mut items.imports);
                continue;
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1).map(|t| &t.tok) {
                    items.defined.push((scope.clone(), name.clone()));
                    match toks.get(i + 2).map(|t| &t.tok) {
                        Some(Tok::Punct(';')) => items.file_mods.push(name.clone()),
                        Some(Tok::Punct('{')) => {
                            inline.push((name.clone(), depth));
                            let mut path = scope.clone();
                            path.push(name.clone());
                            items.inline_mods.push(path);
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(w) if ITEM_KEYWORDS.contains(&w.as_str()) || w == "macro_rules" => {
                let name_at = if w == "macro_rules" { i + 2 } else { i + 1 };
                if let Some(Tok::Ident(name)) = toks.get(name_at).map(|t| &t.tok) {
                    items.defined.push((scope.clone(), name.clone()));
                }
            }
            Tok::Ident(w) => {
                items.words.push(w.clone());
                if let Some((path, end)) = path_at(&toks, i) {
                    items.paths.push(PathRef {
                        scope,
                        segments: path,
                        line: toks[i].line,
                    });
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    items
}

fn scope_of(module: &ModPath, inline: &[(String, usize)]) -> ModPath {
    let mut scope = module.clone();
    scope.extend(inline.iter().map(|(name, _)| name.clone()));
    scope
}

/// Whether the `use` at `i` starts a declaration (not `x.use` or a field).
fn at_item_start(toks: &[Token], i: usize) -> bool {
    match i.checked_sub(1).map(|j| &toks[j].tok) {
        None => true,
        Some(Tok::Punct(c)) => matches!(c, ';' | '{' | '}' | ']' | ')'),
        Some(Tok::Ident(w)) => w == "pub",
        Some(Tok::Path | Tok::Str(_)) => false,
    }
}

/// Whether the `use` at `i` is `pub use` or `pub(…) use`.
fn is_public(toks: &[Token], i: usize) -> bool {
    let word = |j: usize| matches!(&toks[j].tok, Tok::Ident(w) if w == "pub");
    match i.checked_sub(1).map(|j| &toks[j].tok) {
        Some(Tok::Ident(w)) if w == "pub" => true,
        Some(Tok::Punct(')')) => (0..i.saturating_sub(1)).rev().take(6).any(word),
        _ => false,
    }
}

/// The path `a::b::c` starting at identifier `i` (at least two segments, not preceded by
/// `::`, not the `in` of `pub(in …)`), and the index after it.
fn path_at(toks: &[Token], i: usize) -> Option<(Vec<String>, usize)> {
    if i > 0 && toks[i - 1].tok == Tok::Path {
        return None;
    }
    let in_visibility = i >= 2
        && matches!(&toks[i - 1].tok, Tok::Ident(w) if w == "in")
        && toks[i - 2].tok == Tok::Punct('(');
    let mut segments = Vec::new();
    let mut j = i;
    while let Some(Tok::Ident(w)) = toks.get(j).map(|t| &t.tok) {
        segments.push(w.clone());
        if toks.get(j + 1).map(|t| &t.tok) != Some(&Tok::Path) {
            break;
        }
        j += 2;
    }
    let dollar = i > 0 && toks[i - 1].tok == Tok::Punct('$');
    if dollar && segments.first().is_some_and(|s| s == "crate") {
        segments[0] = "crate".to_string();
    }
    (segments.len() >= 2 && !in_visibility).then_some((segments, j + 1))
}

/// Parses the `use` tree starting at `i` (after `use`) up to its `;`; returns the index
/// after the `;`.
fn parse_use(
    toks: &[Token],
    i: usize,
    scope: &ModPath,
    public: bool,
    out: &mut Vec<Import>,
) -> usize {
    let line = toks.get(i).map_or(0, |t| t.line);
    let mut at = i;
    let mut flat = Vec::new();
    use_tree(toks, &mut at, Vec::new(), &mut flat);
    for (segments, name) in flat {
        out.push(Import {
            scope: scope.clone(),
            segments,
            name,
            public,
            line,
        });
    }
    while at < toks.len() && toks[at].tok != Tok::Punct(';') {
        at += 1;
    }
    at + 1
}

/// One use tree at `*at`, under `prefix`: pushes `(segments, bound name)` pairs.
fn use_tree(
    toks: &[Token],
    at: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    if toks.get(*at).map(|t| &t.tok) == Some(&Tok::Path) {
        *at += 1; // a leading `::`
    }
    loop {
        match toks.get(*at).map(|t| t.tok.clone()) {
            Some(Tok::Ident(w)) => {
                prefix.push(w);
                *at += 1;
                if toks.get(*at).map(|t| &t.tok) == Some(&Tok::Path) {
                    *at += 1;
                    continue;
                }
                let mut name = prefix.last().cloned();
                if let Some(Tok::Ident(a)) = toks.get(*at).map(|t| &t.tok)
                    && a == "as"
                {
                    name = match toks.get(*at + 1).map(|t| &t.tok) {
                        Some(Tok::Ident(alias)) => Some(alias.clone()),
                        _ => None,
                    };
                    *at += 2;
                }
                if name.as_deref() == Some("self") {
                    prefix.pop();
                    name = prefix.last().cloned();
                }
                out.push((prefix, name));
                return;
            }
            Some(Tok::Punct('*')) => {
                *at += 1;
                out.push((prefix, None));
                return;
            }
            Some(Tok::Punct('{')) => {
                *at += 1;
                while !matches!(toks.get(*at).map(|t| &t.tok), None | Some(Tok::Punct('}'))) {
                    use_tree(toks, at, prefix.clone(), out);
                    if toks.get(*at).map(|t| &t.tok) == Some(&Tok::Punct(',')) {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            _ => return,
        }
    }
}
