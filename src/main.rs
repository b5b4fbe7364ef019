//! The `ratesim` binary: parse arguments, run, map errors to exit codes.

mod cli;

fn main() -> std::process::ExitCode {
    // Ctrl-C, SIGTERM or SIGHUP end the process without running destructors: remove
    // the half-written temporary files first (finished files are already in place).
    // If the handler cannot be installed, the run still works; only that cleanup is lost.
    let _ = ctrlc::set_handler(|| {
        cli::note_interrupt();
        cli::remove_interrupted_run_keys();
        let removed = ratesim::report::remove_temporary_files();
        if removed > 0 {
            eprintln!("ratesim: interrupted; removed {removed} unfinished temporary file(s)");
        } else {
            eprintln!("ratesim: interrupted");
        }
        std::process::exit(130);
    });
    cli::main()
}
