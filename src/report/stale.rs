//! One rule for every command that writes a folder: a file this command writes there
//! that an earlier run left and this run did not rewrite (charts kept after a
//! `--no-charts` run, a matrix PNG beside a matrix CSV for another limit, an SVG beside
//! this run's PNG) is named on stderr, so it cannot pass for this run's result. Nothing
//! is deleted: the folder may hold files the user wants.

use std::path::{Path, PathBuf};

/// The image formats a chart may have been written in by an earlier run
/// (`--chart-format png|svg`, `--gif`).
const IMAGE_EXTENSIONS: [&str; 3] = ["png", "svg", "gif"];

/// Files a command writes into its folder (`names`; an image name stands for its
/// `.png`, `.svg` and `.gif` forms) that are in `dir` but not among `written`.
pub fn stale_files(dir: &Path, names: &[&str], written: &[PathBuf]) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for name in names {
        let path = Path::new(name);
        let is_image = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e));
        let forms: Vec<PathBuf> = if is_image {
            IMAGE_EXTENSIONS
                .iter()
                .map(|e| path.with_extension(e))
                .collect()
        } else {
            vec![path.to_path_buf()]
        };
        for form in forms {
            let candidate = dir.join(form);
            if !candidates.contains(&candidate) {
                candidates.push(candidate);
            }
        }
    }
    candidates
        .into_iter()
        .filter(|c| !written.iter().any(|w| w.file_name() == c.file_name()))
        .filter(|c| c.is_file())
        .collect()
}

/// The warning line for one stale file, as every command prints it.
pub fn stale_note(path: &Path) -> String {
    format!(
        "note: {} is from an earlier run (this run did not write it)",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_every_image_form_and_file_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.csv", "a.png", "a.svg", "b.gif", "other.txt", "c.csv"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let written = [dir.path().join("a.csv"), dir.path().join("a.png")];
        let stale = stale_files(dir.path(), &["a.csv", "a.png", "b.png", "c.csv"], &written);
        let names: Vec<_> = stale
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.svg", "b.gif", "c.csv"]);
    }
}
