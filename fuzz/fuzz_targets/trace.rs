//! Arbitrary bytes as a trace CSV file → `TraceReader` → every row: must never panic.
//! Errors are fine. Each row read must satisfy what the reader promises: sorted times,
//! a non-empty key.

#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use ratesim::sim::TraceReader;

/// One file per fuzzing process (parallel jobs must not share it).
static FILE: LazyLock<PathBuf> = LazyLock::new(|| {
    std::env::temp_dir().join(format!("ratesim-fuzz-trace-{}.csv", std::process::id()))
});

fuzz_target!(|data: &[u8]| {
    std::fs::write(&*FILE, data).expect("the temporary directory is writable");
    let mut reader = match TraceReader::open(&FILE) {
        Ok(r) => r,
        Err(e) => panic!("a file that exists must open: {e}"),
    };
    let mut last = None;
    loop {
        match reader.next_row() {
            Ok(Some(row)) => {
                assert!(!row.key.is_empty(), "empty key accepted: {row:?}");
                if let Some(prev) = last {
                    assert!(row.time >= prev, "unsorted row accepted: {row:?}");
                }
                last = Some(row.time);
            }
            Ok(None) => break,
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        }
    }
});
