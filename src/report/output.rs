//! Atomic output files and the output directory check.
//!
//! Every report file is written under a hidden temporary name in its final directory
//! and renamed into place only when complete, so an interrupted run never leaves a file
//! that looks whole. [`prepare_output_dir`] validates the destination *before* any long
//! work starts. This module only moves bytes to disk: it must not format or render
//! anything, and it never deletes a file it did not create.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

/// A failure to prepare, write or publish an output file. Every variant names the path.
#[derive(Debug, Error)]
pub enum OutputError {
    /// The output path exists but is a file (or something else that is not a directory).
    #[error("output path {} exists and is not a directory; choose another --out or remove it", path.display())]
    NotADirectory {
        /// The offending path.
        path: PathBuf,
    },
    /// The output directory could not be created.
    #[error("cannot create output directory {}: {source}", path.display())]
    CreateDir {
        /// The directory that could not be created.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// The output directory exists but a file cannot be created in it.
    #[error("output directory {} is not writable: {source}", path.display())]
    NotWritable {
        /// The directory.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// Writing, flushing or renaming an output file failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The final path of the file being written.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// The path has no file name (for example `/` or `..`), so it cannot be a file.
    #[error("output path {} does not name a file", path.display())]
    NoFileName {
        /// The offending path.
        path: PathBuf,
    },
    /// Encoding CSV failed.
    #[error("cannot write CSV {}: {source}", path.display())]
    Csv {
        /// The final path of the CSV file.
        path: PathBuf,
        /// The CSV error.
        source: csv::Error,
    },
    /// Encoding JSON failed.
    #[error("cannot write JSON {}: {source}", path.display())]
    Json {
        /// The final path of the JSON file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
}

/// Creates `dir` (and its parents) if needed and checks that files can be created in it.
///
/// Call this before any long simulation so a bad `--out` fails in milliseconds. The
/// check creates and removes a hidden probe file; it never touches other files.
pub fn prepare_output_dir(dir: &Path) -> Result<PathBuf, OutputError> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(OutputError::NotADirectory {
                path: dir.to_path_buf(),
            });
        }
        Ok(_) => {}
        Err(_) => {
            // A file somewhere up the path makes create_dir_all fail with a confusing
            // message; name the real culprit instead.
            if let Some(blocker) = dir.ancestors().skip(1).find(|p| p.is_file()) {
                return Err(OutputError::NotADirectory {
                    path: blocker.to_path_buf(),
                });
            }
            fs::create_dir_all(dir).map_err(|source| OutputError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
    }
    let probe = dir.join(format!(
        ".ratesim-write-probe-{}-{}",
        std::process::id(),
        next_unique()
    ));
    let created = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|source| OutputError::NotWritable {
            path: dir.to_path_buf(),
            source,
        })?;
    drop(created);
    let _ = fs::remove_file(&probe);
    Ok(dir.to_path_buf())
}

fn next_unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// The hidden temporary name used while `final_path` is being written:
/// `dir/.NAME.tmp-PID-N.EXT`, in the same directory so the rename is atomic, and keeping
/// the extension so encoders that choose a format by extension (PNG) still work.
pub fn temp_path_for(final_path: &Path) -> Result<PathBuf, OutputError> {
    let name = final_path
        .file_name()
        .ok_or_else(|| OutputError::NoFileName {
            path: final_path.to_path_buf(),
        })?
        .to_string_lossy();
    let mut temp = format!(".{name}.tmp-{}-{}", std::process::id(), next_unique());
    if let Some(ext) = final_path.extension() {
        temp.push('.');
        temp.push_str(&ext.to_string_lossy());
    }
    Ok(final_path.with_file_name(temp))
}

/// Every temporary path not yet persisted or removed, for [`remove_temporary_files`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic elsewhere while holding it leaves a plain list: still usable.
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every temporary file this process is still writing, and returns how many
/// existed. For a signal handler that is about to exit the process: no destructor
/// runs then, so without it an interrupted run would leave its hidden part files
/// (hundreds of megabytes for a long `decisions.csv`) in the output directory.
pub fn remove_temporary_files() -> usize {
    let paths = std::mem::take(&mut *live());
    paths.iter().filter(|p| fs::remove_file(p).is_ok()).count()
}

/// A temporary path that becomes `final_path` on [`TempPath::persist`] and is removed
/// if dropped first (or by [`remove_temporary_files`]). Use it when another library
/// (plotters) writes the file itself.
#[derive(Debug)]
pub struct TempPath {
    temp: PathBuf,
    target: PathBuf,
    persisted: bool,
}

impl TempPath {
    /// Reserves a temporary name next to `final_path`; creates nothing yet.
    pub fn new(final_path: &Path) -> Result<TempPath, OutputError> {
        let temp = temp_path_for(final_path)?;
        live().push(temp.clone());
        Ok(TempPath {
            temp,
            target: final_path.to_path_buf(),
            persisted: false,
        })
    }

    /// This path is no longer ours to clean up.
    fn forget(&self) {
        live().retain(|p| p != &self.temp);
    }

    /// Where to write the content now.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Where the content appears on [`TempPath::persist`].
    pub fn final_path(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file into place, replacing any older file there.
    pub fn persist(mut self) -> Result<PathBuf, OutputError> {
        fs::rename(&self.temp, &self.target).map_err(|source| OutputError::Write {
            path: self.target.clone(),
            source,
        })?;
        self.persisted = true;
        self.forget();
        Ok(self.target.clone())
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if !self.persisted {
            // Best effort: the file may never have been created.
            let _ = fs::remove_file(&self.temp);
            self.forget();
        }
    }
}

/// A buffered file written under a temporary name and renamed into place by
/// [`AtomicFile::finish`]. Dropped without `finish` (an error, a panic, Ctrl-C
/// unwinding), it removes its temporary file and the final path is left untouched.
#[derive(Debug)]
pub struct AtomicFile {
    writer: Option<BufWriter<File>>,
    temp: TempPath,
}

impl AtomicFile {
    /// Creates the temporary file next to `final_path`.
    pub fn create(final_path: &Path) -> Result<AtomicFile, OutputError> {
        let temp = TempPath::new(final_path)?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(temp.temp_path())
            .map_err(|source| OutputError::Write {
                path: final_path.to_path_buf(),
                source,
            })?;
        Ok(AtomicFile {
            writer: Some(BufWriter::with_capacity(256 * 1024, file)),
            temp,
        })
    }

    /// The path the file will have once finished.
    pub fn final_path(&self) -> &Path {
        self.temp.final_path()
    }

    /// The temporary path being written now.
    pub fn temp_path(&self) -> &Path {
        self.temp.temp_path()
    }

    /// Flushes, syncs and renames the file into place; returns the final path.
    pub fn finish(mut self) -> Result<PathBuf, OutputError> {
        let final_path = self.temp.final_path().to_path_buf();
        let io_err = |source| OutputError::Write {
            path: final_path.clone(),
            source,
        };
        if let Some(writer) = self.writer.take() {
            let file = writer.into_inner().map_err(|e| io_err(e.into_error()))?;
            file.sync_all().map_err(io_err)?;
        }
        // Moving the TempPath out runs no Drop on `self.temp`'s file: persist marks it.
        let temp = std::mem::replace(&mut self.temp, TempPath::inert());
        temp.persist()
    }
}

/// Bytes free for this user on the disk that holds `dir` (or the nearest existing
/// folder above it, as `dir` may not exist yet); `None` where that cannot be known.
pub fn free_bytes(dir: &Path) -> Option<u128> {
    let at = dir
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
        .unwrap_or(Path::new("."));
    #[cfg(unix)]
    {
        let stat = rustix::fs::statvfs(at).ok()?;
        // A pseudo filesystem (/proc, /sys) has no blocks at all: its free space says
        // nothing, and writing there fails later with a clearer error about --out.
        if stat.f_blocks == 0 {
            return None;
        }
        Some(u128::from(stat.f_bavail) * u128::from(stat.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = at;
        None
    }
}

/// Writes `text` to `path` atomically (see [`AtomicFile`]); returns the final path.
pub fn write_text(path: &Path, text: &str) -> Result<PathBuf, OutputError> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(text.as_bytes())
        .map_err(|source| OutputError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    file.finish()
}

impl TempPath {
    /// A placeholder that owns nothing (used when moving out of an `AtomicFile`).
    fn inert() -> TempPath {
        TempPath {
            temp: PathBuf::new(),
            target: PathBuf::new(),
            persisted: true,
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writer.as_mut() {
            Some(w) => w.write(buf),
            None => Err(io::Error::other("file already finished")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.write_all(buf),
            None => Err(io::Error::other("file already finished")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Close the handle before TempPath's Drop removes the file (matters on Windows).
        drop(self.writer.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_name_is_hidden_in_the_same_directory_and_keeps_the_extension() {
        let t = temp_path_for(Path::new("out/x/chart.png")).unwrap();
        assert_eq!(t.parent(), Some(Path::new("out/x")));
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".chart.png.tmp-"), "{name}");
        assert!(name.ends_with(".png"), "{name}");
    }

    #[test]
    fn a_path_without_a_file_name_is_an_error_not_a_panic() {
        assert!(matches!(
            temp_path_for(Path::new("..")),
            Err(OutputError::NoFileName { .. })
        ));
    }
}
