//! The house's layering, checked (issue 27): no import cycle between the files of `src/`,
//! and the light library never imports the simulator, the reports or the command line.
//!
//! The checker reads the sources itself (no dependency): it follows `mod x;` from
//! `src/lib.rs` and `src/main.rs`, resolves every `use` and every `crate::…`,
//! `super::…`, `self::…` or child-module path to the file that defines the item, and
//! looks for strongly connected components in the resulting file graph. A folder's
//! `mod.rs` and the files under it may use each other (the folder is one module, `mod.rs`
//! its face); between siblings and across folders arrows point one way. Its own tests
//! plant a cycle and a layer violation in a made-up crate and check both are found.
//!
//! `RATESIM_HOUSE_EDGES=1 cargo test --test house -- --nocapture` prints every edge.

mod house {
    pub mod graph;
    pub mod lex;
    pub mod parse;
}

use std::collections::BTreeMap;
use std::path::Path;

use house::graph::{Crate, Edge, cycles, describe, name};
use house::lex::{Tok, tokens};

/// Cycles tolerated for now: none. An entry names a cycle exactly (the same files, no
/// more, no fewer); the engine's three were removed by issue 27's one-driver engine.
const ALLOWED_CYCLES: &[&[&str]] = &[];

/// Layers above the light library, lowest first. A module may import its own layer's
/// top-level module and anything in a lower layer; every top-level module not named
/// here is the light library (layer 0), which imports none of these.
const LAYERS: &[(&str, usize)] = &[("sim", 1), ("report", 2)];

fn layer(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or("");
    LAYERS
        .iter()
        .find(|(m, _)| *m == top)
        .map_or(0, |(_, l)| *l)
}

/// Imports that point up or sideways across layers.
fn layer_violations(edges: &[Edge]) -> Vec<String> {
    let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
    edges
        .iter()
        .filter(|e| top(&e.from) != top(&e.to) && layer(&e.to) >= layer(&e.from))
        .filter(|e| layer(&e.to) > 0)
        .map(|e| format!("{} imports {} ({})", e.from, e.to, e.at))
        .collect()
}

/// A crate read from a map of files (the checker's own tests) or from disk.
fn load(root: &str, files: &dyn Fn(&str) -> Option<String>) -> (Vec<String>, Vec<Edge>) {
    let krate = Crate::load(root, files).unwrap_or_else(|e| panic!("reading the crate: {e}"));
    let modules: Vec<String> = krate.modules().map(name).collect();
    (modules, krate.edges())
}

fn load_src(root: &str) -> (Vec<String>, Vec<Edge>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (modules, edges) = load(root, &|f| std::fs::read_to_string(src.join(f)).ok());
    if std::env::var_os("RATESIM_HOUSE_EDGES").is_some() {
        for e in &edges {
            println!("{} -> {}  ({})", e.from, e.to, e.at);
        }
    }
    (modules, edges)
}

/// The cycles not in the allow-list, described.
fn unexpected_cycles(modules: &[String], edges: &[Edge]) -> Vec<String> {
    let allowed = |c: &Vec<String>| ALLOWED_CYCLES.iter().any(|a| a.iter().eq(c.iter()));
    let found = cycles(modules, edges);
    let text = |c: &Vec<String>| format!("{{{}}}: {}", c.join(", "), describe(c, edges));
    found.iter().filter(|c| !allowed(c)).map(text).collect()
}

#[test]
fn the_library_has_no_import_cycle_outside_the_allow_list() {
    let (modules, edges) = load_src("lib.rs");
    assert!(
        modules.len() > 100,
        "only {} modules found: is the walk broken?",
        modules.len()
    );
    let bad = unexpected_cycles(&modules, &edges);
    assert!(
        bad.is_empty(),
        "import cycles in src/ (lib):\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn the_binary_has_no_import_cycle() {
    let (modules, edges) = load_src("main.rs");
    assert!(
        modules.iter().any(|m| m == "cli::run"),
        "the walk missed src/cli/run.rs"
    );
    let bad = unexpected_cycles(&modules, &edges);
    assert!(
        bad.is_empty(),
        "import cycles in src/ (bin):\n  {}",
        bad.join("\n  ")
    );
}

#[test]
fn every_allowed_cycle_still_exists() {
    // An allow-list entry whose cycle is gone must be deleted, or it would hide a new one.
    let mut found = Vec::new();
    for root in ["lib.rs", "main.rs"] {
        let (modules, edges) = load_src(root);
        found.extend(cycles(&modules, &edges));
    }
    for allowed in ALLOWED_CYCLES {
        assert!(
            found.iter().any(|c| allowed.iter().eq(c.iter())),
            "{allowed:?} is no longer a cycle: remove it from ALLOWED_CYCLES"
        );
    }
}

#[test]
fn the_light_library_imports_no_sim_report_or_cli_and_layers_point_down() {
    let (_, edges) = load_src("lib.rs");
    let bad = layer_violations(&edges);
    assert!(
        bad.is_empty(),
        "imports against the layer order:\n  {}",
        bad.join("\n  ")
    );
}

/// The `.rs` files under `dir`, recursively.
fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Whether a string literal names a command-line flag (`--store`) or a command line.
fn names_a_flag(text: &str) -> bool {
    let flag = text.match_indices("--").any(|(i, _)| {
        let next = text[i + 2..].chars().next();
        next.is_some_and(|c| c.is_ascii_lowercase()) && !text[..i].ends_with('-')
    });
    flag || text.contains("ratesim compare") || text.contains("ratesim run")
}

#[test]
fn the_simulator_names_no_command_line_flag_in_its_strings() {
    // `sim` is a library a program can call with its own options: its errors say what
    // is wrong, and only the CLI adds which flag that was (`--key:`, `--store:`).
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sim");
    let mut files = Vec::new();
    rs_files(&sim, &mut files);
    assert!(files.len() > 30, "only {} files under src/sim", files.len());
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for t in tokens(&text) {
            if let Tok::Str(s) = &t.tok
                && names_a_flag(s)
            {
                found.push(format!("{}:{}: {s}", file.display(), t.line));
            }
        }
    }
    assert!(
        found.is_empty(),
        "flag names in src/sim strings:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_flag_check_sees_strings_and_not_comments() {
    let strings = |text: &str| -> Vec<String> {
        let toks = tokens(text);
        toks.into_iter()
            .filter_map(|t| {
                if let Tok::Str(s) = t.tok {
                    Some(s)
                } else {
                    None
                }
            })
            .collect()
    };
    // A comment, an escaped-quote char literal, a string and a raw string.
    let text = "// \"--store\"\nlet q = '\\''; let e = format!(\"--key: {k}\");\n\
                let r = r#\"ratesim run x\"#;";
    let found = strings(text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|s| names_a_flag(s)), "{found:?}");
    assert!(!names_a_flag("a---b, 10--20, x -- y"));
}

/// A made-up crate for the checker's own tests.
fn fake(files: &[(&str, &str)]) -> (Vec<String>, Vec<Edge>) {
    let map: BTreeMap<String, String> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    load("lib.rs", &|f| map.get(f).cloned())
}

#[test]
fn the_checker_finds_a_planted_cycle_through_a_reexport() {
    let (modules, edges) = fake(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b/mod.rs", "mod inner;\npub use inner::B;\n"),
        ("b/inner.rs", "pub struct B(crate::c::C);\n"),
        // The cycle closes through `super::` in a function body.
        ("c.rs", "pub struct C;\nfn f() { super::a::A; }\n"),
    ]);
    let found = cycles(&modules, &edges);
    assert_eq!(
        found,
        vec![vec!["a".to_string(), "b::inner".into(), "c".into()]],
        "{edges:?}"
    );
    let text = describe(&found[0], &edges);
    assert!(text.contains("a → b::inner (a.rs:1)"), "{text}");
    // The re-export alone is not an edge: b (mod.rs) is not in the cycle.
    assert!(!edges.iter().any(|e| e.from == "b"), "{edges:?}");
}

#[test]
fn the_checker_ignores_paths_in_comments_strings_and_finds_use_groups() {
    let (modules, edges) = fake(&[
        ("lib.rs", "pub mod x;\npub mod y;\n"),
        (
            "x.rs",
            "//! [`Y`](crate::y::Y)\nconst S: &str = \"crate::y::Y\";\npub struct X;\n",
        ),
        ("y.rs", "use crate::{x::{self, X as Z}};\npub struct Y;\n"),
    ]);
    assert!(cycles(&modules, &edges).is_empty(), "{edges:?}");
    assert_eq!(edges.len(), 1, "{edges:?}");
    assert_eq!((edges[0].from.as_str(), edges[0].to.as_str()), ("y", "x"));
}

#[test]
fn the_checker_finds_a_planted_layer_violation_and_a_two_file_cycle() {
    let (modules, edges) = fake(&[
        ("lib.rs", "mod limiter;\nmod sim;\nmod report;\n"),
        ("limiter.rs", "pub fn f() -> crate::sim::S { todo!() }\n"),
        ("sim.rs", "pub struct S;\nuse super::report::R;\n"),
        (
            "report.rs",
            "pub struct R;\nmod tests { use super::super::sim::S; }\n",
        ),
    ]);
    let bad = layer_violations(&edges);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad[0].starts_with("limiter imports sim (limiter.rs:1)"),
        "{bad:?}"
    );
    assert!(
        bad[1].starts_with("sim imports report (sim.rs:2)"),
        "{bad:?}"
    );
    let found = cycles(&modules, &edges);
    assert_eq!(found, vec![vec!["report".to_string(), "sim".into()]]);
}
