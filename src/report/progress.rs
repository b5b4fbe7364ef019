//! Progress bars for long runs (indicatif), drawn on stderr only when it is a terminal.
//!
//! A thin wrapper so the CLI has one rule for when bars appear; it must not be used for
//! anything a user needs to read after the run (bars are cleared when finished).

use std::borrow::Cow;
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar counts slices of each algorithm's simulated time, a unit nobody knows: it
/// shows the share done instead.
const TEMPLATE: &str = "{spinner:.green} {msg:24} [{bar:40.cyan/blue}] {percent:>3}% of the simulated time, {eta} left";

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
        Progress::with_target(total, target)
    }

    fn with_target(total: u64, target: ProgressDrawTarget) -> Progress {
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

    /// A terminal that keeps what is drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(std::sync::Arc<std::sync::Mutex<String>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_drawn_bar_says_what_share_of_the_simulated_time_is_done() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let p = Progress::with_target(6_000, target);
        p.set_message("burst");
        p.set_position(1_500);
        p.bar.tick();
        let drawn = screen.0.lock().unwrap().clone();
        assert!(drawn.contains(" 25% of the simulated time"), "{drawn:?}");
        assert!(
            !drawn.contains("1,500") && !drawn.contains("6,000"),
            "{drawn:?}"
        );
    }

    #[test]
    fn bars_are_hidden_when_stderr_is_not_a_terminal() {
        let p = Progress::new(5, false);
        if !std::io::stderr().is_terminal() {
            assert!(p.is_hidden());
        }
    }
}
