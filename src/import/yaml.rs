//! A YAML document as a small tree whose every node keeps its line, built from
//! `saphyr-parser`'s events, so an Envoy import can name `file:line` for any value.
//!
//! Scalars stay text (the Envoy readers decide what a number is); anchors and aliases
//! are resolved; several documents in one stream are refused, as neither Envoy config
//! holds more than one.

use saphyr_parser::{Event, Parser};

use super::Fault;

/// One node and the line it starts on (1-based).
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) line: usize,
    pub(super) value: Value,
}

/// A node's value.
#[derive(Debug, Clone)]
pub(super) enum Value {
    /// A scalar, as written (quotes removed); `~`/`null`/empty is `Null`.
    Text(String),
    Null,
    List(Vec<Node>),
    /// Entries in order: the key's text and its value.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The value under `key`, if this is a map holding it.
    pub(super) fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The map's entries (empty for anything else).
    pub(super) fn entries(&self) -> &[(String, Node)] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The scalar's text, or an error naming `what` was expected.
    pub(super) fn text(&self, what: &str) -> Result<&str, Fault> {
        match &self.value {
            Value::Text(t) => Ok(t),
            _ => Err(Fault::at(self.line, format!("expected {what}"))),
        }
    }

    /// A whole number from 0 to `u32::MAX` (Envoy's `uint32` fields).
    pub(super) fn uint32(&self, what: &str) -> Result<u64, Fault> {
        let text = self.text(what)?;
        text.parse::<u32>()
            .ok()
            .filter(|_| !text.starts_with('+'))
            .map(u64::from)
            .ok_or_else(|| {
                Fault::at(
                    self.line,
                    format!("{what}: expected a whole number from 0 to 4294967295, found `{text}`"),
                )
            })
    }

    /// A list's items; `what` names the field in the error when it is not a list.
    pub(super) fn list(&self, what: &str) -> Result<&[Node], Fault> {
        match &self.value {
            Value::List(items) => Ok(items),
            Value::Null => Ok(&[]),
            _ => Err(Fault::at(self.line, format!("{what}: expected a list"))),
        }
    }
}

/// Parses `text` as one YAML document (an empty text is an empty map).
pub(super) fn parse(text: &str) -> Result<Node, Fault> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder::default();
    while let Some(event) = parser.next_event() {
        let (event, span) = event
            .map_err(|e| Fault::at(e.marker().line(), format!("not valid YAML: {}", e.info())))?;
        builder.push(event, span.start.line())?;
    }
    Ok(builder.root.unwrap_or(Node {
        line: 1,
        value: Value::Map(Vec::new()),
    }))
}

/// An open collection: a list, or a map with the key waiting for its value.
enum Open {
    List(Node, usize),
    Map(Node, Option<String>, usize),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Open>,
    anchors: Vec<(usize, Node)>,
    root: Option<Node>,
    documents: usize,
}

impl Builder {
    fn push(&mut self, event: Event<'_>, line: usize) -> Result<(), Fault> {
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(Fault::at(
                        line,
                        "a second YAML document: import one document at a time",
                    ));
                }
            }
            Event::Scalar(text, style, anchor, _) => {
                let plain = matches!(style, saphyr_parser::ScalarStyle::Plain);
                let value = if plain && matches!(text.as_ref(), "" | "~" | "null" | "Null" | "NULL")
                {
                    Value::Null
                } else {
                    Value::Text(text.into_owned())
                };
                self.finish(Node { line, value }, anchor)?;
            }
            Event::Alias(id) => {
                let node = self
                    .anchors
                    .iter()
                    .rev()
                    .find(|(a, _)| *a == id)
                    .map(|(_, n)| n.clone())
                    .ok_or_else(|| Fault::at(line, "an alias to an unknown anchor"))?;
                self.finish(node, 0)?;
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Open::List(
                Node {
                    line,
                    value: Value::List(Vec::new()),
                },
                anchor,
            )),
            Event::MappingStart(anchor, _) => self.stack.push(Open::Map(
                Node {
                    line,
                    value: Value::Map(Vec::new()),
                },
                None,
                anchor,
            )),
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Open::List(n, a)) | Some(Open::Map(n, _, a)) => (n, a),
                    None => return Err(Fault::at(line, "unbalanced YAML collection")),
                };
                self.finish(node, anchor)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Places a complete node in the collection that holds it.
    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), Fault> {
        if anchor != 0 {
            self.anchors.push((anchor, node.clone()));
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Open::List(list, _)) => {
                if let Value::List(items) = &mut list.value {
                    items.push(node);
                }
            }
            Some(Open::Map(map, key, _)) => match key.take() {
                None => match node.value {
                    Value::Text(k) => *key = Some(k),
                    Value::Null => *key = Some(String::new()),
                    _ => {
                        return Err(Fault::at(
                            node.line,
                            "a map key that is a list or a map: not an Envoy config",
                        ));
                    }
                },
                Some(k) => {
                    if let Value::Map(entries) = &mut map.value {
                        entries.push((k, node));
                    }
                }
            },
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_keeps_its_line_and_aliases_resolve() {
        let doc = parse("a: &x\n  b: 1\nc:\n  - 2\n  - *x\n").unwrap();
        assert_eq!(doc.get("a").unwrap().get("b").unwrap().line, 2);
        let c = doc.get("c").unwrap().list("c").unwrap();
        assert_eq!(c[0].line, 4);
        assert_eq!(c[1].get("b").unwrap().text("b").unwrap(), "1");
    }

    #[test]
    fn bad_yaml_is_an_error_at_its_line() {
        let e = parse("a: 1\nb: [1, 2\n").unwrap_err();
        assert!(e.line.is_some(), "{e:?}");
        assert!(e.message.contains("not valid YAML"), "{e:?}");
    }
}
