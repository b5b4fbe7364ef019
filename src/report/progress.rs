//! Progress bars for long runs (indicatif), drawn on stderr only when it is a terminal.
//!
//! A thin wrapper so the CLI has one rule for when bars appear; it must not be used for
//! anything a user needs to read after the run (bars are cleared when finished).

use std::borrow::Cow;
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const TEMPLATE: &str =
    "{spinner:.green} {msg:24} [{bar:40.cyan/blue}] {human_pos}/{human_len} ({eta})";

/// A progress bar over `total` steps; invisible with `quiet` or when stderr is not a
/// terminal (pipes, CI, tests), so it never pollutes captured output.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` steps, hidden when `quiet` or stderr is not a terminal.
    pub fn new(total: u64, quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        Progress::with_visibility(total, visible)
    }

    /// A bar that is never drawn (for `--quiet` or tests).
    pub fn hidden(total: u64) -> Progress {
        Progress::with_visibility(total, false)
    }

    fn with_visibility(total: u64, visible: bool) -> Progress {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        let style = ProgressStyle::with_template(TEMPLATE)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        Progress { bar }
    }

    /// Advances by `n` steps.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Sets the position to `pos` steps.
    pub fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
    }

    /// Shows what is being worked on (e.g. the algorithm name).
    pub fn set_message(&self, message: impl Into<Cow<'static, str>>) {
        self.bar.set_message(message);
    }

    /// Steps done so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Whether nothing is drawn.
    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// Removes the bar from the terminal.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_bars_are_hidden_but_still_count() {
        let p = Progress::new(10, true);
        assert!(p.is_hidden());
        p.inc(3);
        p.set_message("fixed_window");
        assert_eq!(p.position(), 3);
        p.finish();
    }

    #[test]
    fn bars_are_hidden_when_stderr_is_not_a_terminal() {
        let p = Progress::new(5, false);
        if !std::io::stderr().is_terminal() {
            assert!(p.is_hidden());
        }
    }
}
