//! Arbitrary bytes as a trace CSV → `TraceReader` → every row: must never panic.
//! Errors are fine. Each row read must satisfy what the reader promises: sorted times,
//! a non-empty key. The bytes are read from memory (`TraceReader::from_reader`, the
//! same parser `TraceReader::open` uses), which keeps the file system out of the loop.

#![no_main]

use std::io::Cursor;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ratesim::sim::TraceReader;

fuzz_target!(|data: &[u8]| {
    let mut reader = TraceReader::from_reader(Path::new("fuzz.csv"), Cursor::new(data.to_vec()));
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
