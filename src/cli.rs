//! The clap front end: parse, call the library, map errors to exit codes. No logic.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exact rate-limiter algorithms, simulated side by side.
#[derive(Debug, Parser)]
#[command(name = "ratesim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the seed's deterministic demo: 5 requests / 10 s on every algorithm.
    Demo,
    /// List the algorithms with one-line descriptions.
    List,
}

/// Runs the CLI and returns the process exit code (0 ok, 1 failure, 2 bad input).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    let text = match cli.command {
        Command::Demo => ratesim::demo::demo_text(),
        Command::List => list_text(),
    };
    print_quietly(&text)
}

fn list_text() -> String {
    let registry = ratesim::Registry::default();
    let width = registry.names().map(str::len).max().unwrap_or(0);
    let mut out = String::from("Algorithms:\n");
    for name in registry.names() {
        let description = registry.description(name).unwrap_or_default();
        out.push_str(&format!("  {name:<width$}  {description}\n"));
    }
    out
}

/// Writes to stdout; a closed pipe (`ratesim demo | head`) ends quietly with success.
fn print_quietly(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ratesim: cannot write to stdout: {e}");
            ExitCode::from(1)
        }
    }
}
