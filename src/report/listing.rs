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
/// each in aligned columns. With `columns` (a terminal's width), the descriptions wrap
/// at spaces under their own column so no line is wider; `None` never wraps.
pub fn render_listing(
    registry: &Registry,
    scenarios: &[(&str, &str)],
    columns: Option<u16>,
) -> String {
    let width = registry.names().map(str::len).max().unwrap_or(0);
    let mut out = String::from(
        "Algorithms, with the most each admits in any window of length W\n(for N per W and burst B; less when W is under 2N ns):\n",
    );
    for entry in registry.entries() {
        let (name, description) = (entry.name(), entry.description());
        let worst = entry.worst_case_formula().unwrap_or("?");
        let lead = format!("  {name:<width$}  {worst:<9}  ");
        out.push_str(&hanging(&lead, description, columns));
    }
    out.push_str("\nBundled scenarios (scenarios/*.toml; `ratesim run scenarios/<file>`):\n");
    let width = scenarios.iter().map(|(f, _)| f.len()).max().unwrap_or(0);
    for (file, text) in scenarios {
        let summary = match Scenario::parse_with(text, &Path::new("scenarios").join(file), registry)
        {
            Ok(s) => first_sentence(&s.description),
            Err(e) => format!("(does not parse: {e})"),
        };
        out.push_str(&hanging(&format!("  {file:<width$}  "), &summary, columns));
    }
    out
}

/// `lead` then `text`, wrapped at spaces to `columns` with every further line indented
/// to where `text` began; a word longer than the room left stands on a line of its own.
/// At least 20 columns are left for the text however wide `lead` is.
fn hanging(lead: &str, text: &str, columns: Option<u16>) -> String {
    let indent = lead.chars().count();
    let Some(columns) = columns else {
        return format!("{lead}{text}\n");
    };
    let room = usize::from(columns).saturating_sub(indent).max(20);
    let mut out = String::from(lead);
    let mut used = 0;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if used > 0 && used + 1 + len > room {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            used = 0;
        } else if used > 0 {
            out.push(' ');
            used += 1;
        }
        out.push_str(word);
        used += len;
    }
    out.push('\n');
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
        let text = render_listing(&Registry::default(), &[("bad.toml", "name = ")], None);
        let line = text.lines().last().unwrap();
        assert!(line.starts_with("  bad.toml  (does not parse: "), "{line}");
    }

    #[test]
    fn every_registered_algorithm_is_listed_with_its_description() {
        let registry = Registry::default();
        let text = render_listing(&registry, &[], None);
        for name in registry.names() {
            let description = registry.description(name).unwrap();
            assert!(
                text.lines()
                    .any(|l| l.contains(name) && l.ends_with(description)),
                "{name} missing from\n{text}"
            );
        }
    }

    #[test]
    fn on_an_80_column_terminal_no_line_is_wider_and_no_word_is_lost() {
        let registry = Registry::default();
        let scenarios = crate::bundled::SCENARIOS;
        let wide = render_listing(&registry, scenarios, None);
        assert!(
            wide.lines().any(|l| l.chars().count() > 80),
            "the test needs long lines"
        );
        let narrow = render_listing(&registry, scenarios, Some(80));
        for line in narrow.lines() {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&narrow), words(&wide));
        // Continuation lines start under the description, not at the margin.
        let tb = narrow
            .lines()
            .position(|l| l.starts_with("  token_bucket "))
            .unwrap();
        let next = narrow.lines().nth(tb + 1).unwrap();
        let column = narrow.lines().nth(tb).unwrap().find("Bucket").unwrap();
        assert_eq!(next.len() - next.trim_start().len(), column, "{narrow}");
    }
}
