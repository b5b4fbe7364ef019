//! The text of `ratesim list`: every registered algorithm with its worst case in any
//! window, and the bundled scenarios with the first sentence of each description.
//!
//! Pure text from a [`Registry`] and the scenario files given; this module must not
//! run anything or print.

use std::path::Path;

use crate::registry::Registry;
use crate::sim::Scenario;

/// The algorithms of `registry` (name, worst-case formula, description) and then the
/// `scenarios` (file name and TOML text, as in [`bundled::SCENARIOS`](crate::bundled::SCENARIOS)),
/// each in aligned columns.
pub fn render_listing(registry: &Registry, scenarios: &[(&str, &str)]) -> String {
    let width = registry.names().map(str::len).max().unwrap_or(0);
    let mut out = String::from(
        "Algorithms (worst case: most admitted in any window of length W, for N per W, burst B;\nless when W is under 2N ns):\n",
    );
    for entry in registry.entries() {
        let (name, description) = (entry.name(), entry.description());
        let worst = entry.worst_case_formula().unwrap_or("?");
        out.push_str(&format!("  {name:<width$}  {worst:<9}  {description}\n"));
    }
    out.push_str("\nBundled scenarios (scenarios/*.toml; `ratesim run scenarios/<file>`):\n");
    let width = scenarios.iter().map(|(f, _)| f.len()).max().unwrap_or(0);
    for (file, text) in scenarios {
        let summary = match Scenario::parse_with(text, &Path::new("scenarios").join(file), registry)
        {
            Ok(s) => first_sentence(&s.description),
            Err(e) => format!("(does not parse: {e})"),
        };
        out.push_str(&format!("  {file:<width$}  {summary}\n"));
    }
    out
}

/// The first sentence of `text` (up to and including the first `. `), on one line.
fn first_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.find(". ") {
        Some(i) => flat[..=i].to_string(),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_stops_at_the_first_full_stop_and_joins_lines() {
        assert_eq!(first_sentence("One\n  line. Two."), "One line.");
        assert_eq!(first_sentence("No stop here"), "No stop here");
        assert_eq!(first_sentence("v1.2 is out. More."), "v1.2 is out.");
    }

    #[test]
    fn a_scenario_that_does_not_parse_is_listed_with_its_error() {
        let text = render_listing(&Registry::default(), &[("bad.toml", "name = ")]);
        let line = text.lines().last().unwrap();
        assert!(line.starts_with("  bad.toml  (does not parse: "), "{line}");
    }

    #[test]
    fn every_registered_algorithm_is_listed_with_its_description() {
        let registry = Registry::default();
        let text = render_listing(&registry, &[]);
        for name in registry.names() {
            let description = registry.description(name).unwrap();
            assert!(
                text.lines()
                    .any(|l| l.contains(name) && l.ends_with(description)),
                "{name} missing from\n{text}"
            );
        }
    }
}
