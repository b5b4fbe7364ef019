//! `--key`: when the client asked for sent nothing in the run, the hint that names the
//! closest clients that did (or examples of the names there are).
//!
//! Words only: it decides nothing and records nothing.

use crate::registry::edit_distance;
use crate::sim::KeyTable;

/// What to say when `--key` names no client of the run: up to three close names, or
/// else examples of the names there are.
pub(super) fn unknown_key_hint(key: &str, keys: &KeyTable) -> String {
    let mut close: Vec<(usize, &str)> = keys
        .names()
        .map(|name| (edit_distance(key, name), name))
        .filter(|&(d, name)| d <= (key.chars().count().max(name.chars().count()) / 3).max(2))
        .collect();
    close.sort();
    let list = |names: Vec<&str>| {
        names
            .into_iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if close.is_empty() {
        let examples: Vec<&str> = keys.names().take(3).collect();
        if examples.is_empty() {
            return "no client sent anything".to_string();
        }
        format!("clients are named like {}", list(examples))
    } else {
        format!(
            "did you mean {}?",
            list(close.into_iter().take(3).map(|c| c.1).collect())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_answered_with_the_closest_names() {
        let mut keys = KeyTable::default();
        for name in ["client-0", "client-1", "client-12", "admin"] {
            keys.intern(name);
        }
        assert_eq!(
            unknown_key_hint("client-2", &keys),
            "did you mean `client-0`, `client-1`, `client-12`?"
        );
        assert_eq!(
            unknown_key_hint("zzzzzzzzzz", &keys),
            "clients are named like `client-0`, `client-1`, `client-12`"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // Long names may be a third of their length apart: three edits on fourteen
        // characters is still close, five is not.
        let mut keys = KeyTable::default();
        keys.intern("api-gateway-eu");
        assert_eq!(edit_distance("api-gatewy-us", "api-gateway-eu"), 3);
        assert_eq!(
            unknown_key_hint("api-gatewy-us", &keys),
            "did you mean `api-gateway-eu`?"
        );
        assert_eq!(edit_distance("apigatewayxxxx", "api-gateway-eu"), 5);
        assert_eq!(
            unknown_key_hint("apigatewayxxxx", &keys),
            "clients are named like `api-gateway-eu`"
        );
    }
}
