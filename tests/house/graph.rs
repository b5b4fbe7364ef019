//! The module graph of one crate: every file module reached from the crate root by
//! `mod x;`, and an edge `a → b` when file `a` imports or names an item that file `b`
//! defines. Paths are resolved the way rustc does it, as far as imports go: `crate::`,
//! `super::`, `self::`, a child module's name, a name a `use` brought into scope, and
//! through re-exports and globs to the file that *defines* the item. A re-export
//! (`pub use x::T` in a parent's `mod.rs`, the module's public face) is not an edge by
//! itself, only when the file also uses `T`.
//!
//! A folder is one module with its `mod.rs` as the face: edges between a module and its
//! own ancestors or descendants (`engine/mod.rs` calling `engine::dispatch`, which reads
//! `super::RunOptions`) are not counted. Cycles between siblings and across folders are.

use std::collections::{BTreeMap, BTreeSet};

use super::parse::{FileItems, Import, ModPath, parse_file};

/// One import edge, with where it is written (for the message).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    /// `file:line` of the first import making this edge.
    pub at: String,
}

/// A crate's files, parsed.
pub struct Crate {
    /// File module path → (file name for messages, what it holds).
    files: BTreeMap<ModPath, (String, FileItems)>,
    /// Every module (file or inline) → the file module that holds it.
    owner: BTreeMap<ModPath, ModPath>,
}

/// Display name of a module path (`crate` for the root).
pub fn name(path: &ModPath) -> String {
    if path.is_empty() {
        "crate".to_string()
    } else {
        path.join("::")
    }
}

impl Crate {
    /// Reads the crate whose root file is `root` (module files found by `read`, which
    /// gets a path like `sim/engine.rs` or `sim/engine/mod.rs` relative to the root's
    /// folder and returns `None` when there is no such file).
    pub fn load(root: &str, read: &dyn Fn(&str) -> Option<String>) -> Result<Crate, String> {
        let mut files = BTreeMap::new();
        let mut owner = BTreeMap::new();
        let mut todo = vec![(Vec::new(), root.to_string())];
        while let Some((module, file)) = todo.pop() {
            let text = read(&file).ok_or_else(|| format!("cannot read {file}"))?;
            let items = parse_file(&module, &text);
            for child in &items.file_mods {
                let mut path = module.clone();
                path.push(child.clone());
                let base = if module.is_empty() {
                    String::new()
                } else {
                    module.join("/") + "/"
                };
                let flat = format!("{base}{child}.rs");
                let nested = format!("{base}{child}/mod.rs");
                let found = [flat, nested].into_iter().find(|f| read(f).is_some());
                let found = found.ok_or_else(|| format!("{file}: no file for `mod {child};`"))?;
                todo.push((path, found));
            }
            for inline in &items.inline_mods {
                owner.insert(inline.clone(), module.clone());
            }
            owner.insert(module.clone(), module.clone());
            files.insert(module, (file, items));
        }
        Ok(Crate { files, owner })
    }

    /// The file modules.
    pub fn modules(&self) -> impl Iterator<Item = &ModPath> {
        self.files.keys()
    }

    /// Every edge between two files neither of which is the other's ancestor, one per
    /// (from, to) pair.
    pub fn edges(&self) -> Vec<Edge> {
        let mut seen = BTreeMap::new();
        for (module, (file, items)) in &self.files {
            let mut add = |target: Option<ModPath>, line: usize| {
                let related = |to: &ModPath| to.starts_with(module) || module.starts_with(to);
                if let Some(to) = target.filter(|to| !related(to)) {
                    seen.entry((name(module), name(&to)))
                        .or_insert(format!("{file}:{line}"));
                }
            };
            for import in &items.imports {
                let used = import.name.as_ref().is_none_or(|n| items.words.contains(n));
                if import.public && !used {
                    continue; // a re-export only: the module's public face
                }
                add(self.resolve_import(import), import.line);
            }
            for path in &items.paths {
                add(self.resolve(&path.scope, &path.segments, 0), path.line);
            }
        }
        let edges = seen
            .into_iter()
            .map(|((from, to), at)| Edge { from, to, at });
        edges.collect()
    }

    fn resolve_import(&self, import: &Import) -> Option<ModPath> {
        let target = self.resolve(&import.scope, &import.segments, 0);
        if import.name.is_none() {
            // A glob: the module whose items it brings in.
            return self
                .module_at(&import.scope, &import.segments)
                .map(|m| self.owner[&m].clone());
        }
        target
    }

    /// The module a path of modules only denotes (for globs), if it is one of ours.
    fn module_at(&self, scope: &ModPath, segments: &[String]) -> Option<ModPath> {
        let (mut base, rest) = self.start(scope, segments)?;
        for segment in rest {
            base.push(segment.clone());
            if !self.owner.contains_key(&base) {
                return None;
            }
        }
        Some(base)
    }

    /// Where a path's first segment starts: the module and the remaining segments;
    /// `None` for a path into another crate or a local name.
    fn start<'a>(
        &self,
        scope: &ModPath,
        segments: &'a [String],
    ) -> Option<(ModPath, &'a [String])> {
        let first = segments.first()?;
        let mut base = scope.clone();
        match first.as_str() {
            "crate" => return Some((Vec::new(), &segments[1..])),
            "self" => return Some((base, &segments[1..])),
            "super" => {
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                return Some((base, rest));
            }
            _ => {}
        }
        base.push(first.clone());
        self.owner
            .contains_key(&base)
            .then(|| (scope.clone(), segments))
    }

    /// The file that defines what `segments` names from `scope`, if it is in this crate.
    fn resolve(&self, scope: &ModPath, segments: &[String], depth: usize) -> Option<ModPath> {
        if depth > 16 {
            return None;
        }
        let Some((mut module, mut rest)) = self.start(scope, segments) else {
            // A name brought in by a `use` of this scope: `use super::x; x::f()`.
            let import = self.named_import(scope, segments.first()?)?;
            let mut path = import.segments.clone();
            path.extend_from_slice(&segments[1..]);
            return self.resolve(&import.scope, &path, depth + 1);
        };
        while let Some(segment) = rest.first() {
            let mut child = module.clone();
            child.push(segment.clone());
            if !self.owner.contains_key(&child) {
                break;
            }
            module = child;
            rest = &rest[1..];
        }
        let Some(item) = rest.first() else {
            return Some(self.owner[&module].clone());
        };
        if self.defines(&module, item) {
            return Some(self.owner[&module].clone());
        }
        if let Some(import) = self.named_import(&module, item) {
            let mut path = import.segments.clone();
            path.extend_from_slice(&rest[1..]);
            return self.resolve(&import.scope, &path, depth + 1);
        }
        for glob in self.imports_in(&module).filter(|i| i.name.is_none()) {
            let mut path = glob.segments.clone();
            path.extend_from_slice(rest);
            let found = self.resolve(&glob.scope, &path, depth + 1);
            if let Some(found) = found.filter(|f| *f != self.owner[&module]) {
                return Some(found);
            }
        }
        Some(self.owner[&module].clone())
    }

    fn file_of(&self, module: &ModPath) -> Option<&FileItems> {
        self.files
            .get(self.owner.get(module)?)
            .map(|(_, items)| items)
    }

    fn defines(&self, module: &ModPath, item: &str) -> bool {
        let Some(items) = self.file_of(module) else {
            return false;
        };
        items.defined.iter().any(|(m, n)| m == module && n == item)
    }

    fn imports_in(&self, module: &ModPath) -> impl Iterator<Item = &Import> {
        let items = self.file_of(module);
        let module = module.clone();
        items
            .into_iter()
            .flat_map(|f| f.imports.iter())
            .filter(move |i| i.scope == module)
    }

    fn named_import(&self, module: &ModPath, item: &str) -> Option<&Import> {
        self.imports_in(module)
            .find(|i| i.name.as_deref() == Some(item))
    }
}

/// The strongly connected components with more than one module (the import cycles),
/// each sorted, in a stable order.
pub fn cycles(modules: &[String], edges: &[Edge]) -> Vec<Vec<String>> {
    let index: BTreeMap<&str, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut next = vec![Vec::new(); modules.len()];
    for e in edges {
        if let (Some(&a), Some(&b)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
            next[a].push(b);
        }
    }
    // Kosaraju: finish order on the graph, then components on the reversed graph.
    let mut order = Vec::new();
    let mut seen = vec![false; modules.len()];
    for start in 0..modules.len() {
        finish(start, &next, &mut seen, &mut order);
    }
    let mut prev = vec![Vec::new(); modules.len()];
    for (a, outs) in next.iter().enumerate() {
        for &b in outs {
            prev[b].push(a);
        }
    }
    let mut component = vec![usize::MAX; modules.len()];
    let mut found = Vec::new();
    for &root in order.iter().rev() {
        if component[root] != usize::MAX {
            continue;
        }
        let mut members = BTreeSet::new();
        let mut stack = vec![root];
        component[root] = root;
        while let Some(v) = stack.pop() {
            members.insert(modules[v].clone());
            for &u in &prev[v] {
                if component[u] == usize::MAX {
                    component[u] = root;
                    stack.push(u);
                }
            }
        }
        if members.len() > 1 {
            found.push(members.into_iter().collect());
        }
    }
    found.sort();
    found
}

/// Iterative depth-first search appending vertices in finishing order.
fn finish(start: usize, next: &[Vec<usize>], seen: &mut [bool], order: &mut Vec<usize>) {
    if seen[start] {
        return;
    }
    seen[start] = true;
    let mut stack = vec![(start, 0)];
    while let Some((v, i)) = stack.pop() {
        if let Some(&u) = next[v].get(i) {
            stack.push((v, i + 1));
            if !seen[u] {
                seen[u] = true;
                stack.push((u, 0));
            }
        } else {
            order.push(v);
        }
    }
}

/// One cycle through `members`, written `a → b → … → a` with each edge's `file:line`.
pub fn describe(members: &[String], edges: &[Edge]) -> String {
    let inside = |e: &&Edge| members.contains(&e.from) && members.contains(&e.to);
    let local: Vec<&Edge> = edges.iter().filter(inside).collect();
    // Walk from the first member along edges inside the component until a repeat.
    let mut path = vec![members[0].clone()];
    let mut steps = Vec::new();
    loop {
        let here = path.last().unwrap().clone();
        let Some(e) = local.iter().find(|e| e.from == here) else {
            break;
        };
        steps.push(format!("{} → {} ({})", e.from, e.to, e.at));
        if let Some(pos) = path.iter().position(|m| *m == e.to) {
            let skip = pos;
            return steps[skip..].join("; ");
        }
        path.push(e.to.clone());
    }
    steps.join("; ")
}
