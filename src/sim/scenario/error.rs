//! [`ScenarioError`]: what is wrong with a scenario (or a trace it names), and where.
//!
//! Positions are 1-based lines and columns counted in characters, computed from the
//! byte spans the TOML parser keeps. This module only describes problems; it decides
//! nothing about what is valid.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::sim::trace::{Location, TraceError};

/// A scenario file that could not be read or is not valid.
///
/// Displays as `file:line:col: message`, or `file: message` when the problem has no
/// single position (for example, the file could not be opened).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", .path.display(), Location(*.position))]
pub struct ScenarioError {
    /// The file at fault (the scenario, or a trace it names).
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a position.
    pub position: Option<(usize, usize)>,
    /// What was expected, and what was found.
    pub message: String,
}

impl ScenarioError {
    /// An error at a byte `span` of `text`, which was read from `path`.
    pub(crate) fn at(path: &Path, text: &str, span: Option<Range<usize>>, message: String) -> Self {
        ScenarioError {
            path: path.to_path_buf(),
            position: span.map(|s| line_col(text, s.start)),
            message,
        }
    }

    /// An error about the whole file.
    pub(crate) fn file(path: &Path, message: String) -> Self {
        ScenarioError {
            path: path.to_path_buf(),
            position: None,
            message,
        }
    }
}

/// A bad trace is a bad scenario input: same file, position and message.
impl From<TraceError> for ScenarioError {
    fn from(e: TraceError) -> ScenarioError {
        ScenarioError {
            path: e.path,
            position: e.position,
            message: e.message,
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    // A span may start inside a multi-byte character only if the parser is buggy; walk
    // back to a boundary rather than panic.
    let mut start = offset;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_not_bytes() {
        assert_eq!(line_col("ab\nçd", 5), (2, 2));
        assert_eq!(line_col("", 0), (1, 1));
        assert_eq!(
            line_col("é", 1),
            (1, 1),
            "mid-character offsets do not panic"
        );
    }

    #[test]
    fn errors_show_the_file_then_the_position_when_there_is_one() {
        let at = ScenarioError::at(Path::new("s.toml"), "a\nbc", Some(3..4), "m".into());
        assert_eq!(at.to_string(), "s.toml:2:2: m");
        let file = ScenarioError::file(Path::new("s.toml"), "cannot read".into());
        assert_eq!(file.to_string(), "s.toml: cannot read");
    }
}
