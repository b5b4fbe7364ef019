//! Atomic output files and the early output-directory check.

use std::fs;
use std::io::Write;
use std::path::Path;

use ratesim::report::output::{AtomicFile, OutputError, TempPath, prepare_output_dir};

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_finished_file_appears_under_its_final_name_and_nothing_else_remains() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("decisions.csv");
    let mut file = AtomicFile::create(&target).unwrap();
    file.write_all(b"a,b\n1,2\n").unwrap();
    assert!(
        !target.exists(),
        "the final name must not exist before finish"
    );
    assert!(file.temp_path().exists());
    let written = file.finish().unwrap();
    assert_eq!(written, target);
    assert_eq!(fs::read_to_string(&target).unwrap(), "a,b\n1,2\n");
    assert_eq!(entries(dir.path()), vec!["decisions.csv".to_string()]);
}

#[test]
fn a_file_dropped_without_finish_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("decisions.csv");
    {
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"algorithm,seq\n").unwrap();
        file.write_all(&vec![b'x'; 1 << 20]).unwrap();
    }
    assert!(!target.exists());
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn an_interrupted_rewrite_keeps_the_previous_complete_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("summary.csv");
    fs::write(&target, "old,complete\n").unwrap();
    {
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"new,half").unwrap();
    }
    assert_eq!(fs::read_to_string(&target).unwrap(), "old,complete\n");
    assert_eq!(entries(dir.path()), vec!["summary.csv".to_string()]);
}

#[test]
fn finishing_replaces_an_older_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("summary.json");
    fs::write(&target, "old").unwrap();
    let mut file = AtomicFile::create(&target).unwrap();
    file.write_all(b"new").unwrap();
    file.finish().unwrap();
    assert_eq!(fs::read_to_string(&target).unwrap(), "new");
}

#[test]
fn an_unpersisted_temp_path_is_removed_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("chart.png");
    let temp = TempPath::new(&target).unwrap();
    fs::write(temp.temp_path(), b"partial").unwrap();
    drop(temp);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn the_output_dir_is_created_with_its_parents() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("output").join("burst");
    assert_eq!(prepare_output_dir(&out).unwrap(), out);
    assert!(out.is_dir());
    assert!(entries(&out).is_empty(), "the probe file must be removed");
    // An existing directory is fine too.
    prepare_output_dir(&out).unwrap();
}

#[test]
fn a_file_in_the_way_of_the_output_dir_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results");
    fs::write(&file, "not a directory").unwrap();
    let err = prepare_output_dir(&file).unwrap_err();
    assert!(matches!(err, OutputError::NotADirectory { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("results"), "{message}");
    assert!(message.contains("not a directory"), "{message}");
}

#[test]
fn a_file_in_the_way_of_a_parent_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blocker");
    fs::write(&file, "x").unwrap();
    let err = prepare_output_dir(&file.join("sub").join("dir")).unwrap_err();
    match &err {
        OutputError::NotADirectory { path } => assert_eq!(path, &file),
        other => panic!("expected NotADirectory, got {other:?}"),
    }
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "x",
        "nothing was touched"
    );
}

#[cfg(unix)]
#[test]
fn an_unwritable_output_dir_is_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores permission bits; only assert where they are enforced.
    let enforced = fs::write(locked.join("probe"), b"").is_err();
    let result = prepare_output_dir(&locked);
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    if enforced {
        let err = result.unwrap_err();
        assert!(matches!(err, OutputError::NotWritable { .. }), "{err:?}");
        assert!(err.to_string().contains("locked"), "{err}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn an_uncreatable_output_dir_is_a_clear_error_even_for_root() {
    // Nobody, not even root, can create directories in /proc.
    let err = prepare_output_dir(Path::new("/proc/ratesim-test-output/burst")).unwrap_err();
    assert!(
        matches!(
            err,
            OutputError::CreateDir { .. } | OutputError::NotWritable { .. }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("/proc/ratesim-test-output"),
        "{err}"
    );
}
