//! nginx configs: `limit_req_zone` (the key and the rate) and `limit_req` (the zone,
//! `burst`, `nodelay`, `delay`), in `http`, `server` and `location` blocks.
//!
//! The text is split as nginx's own reader splits it (`ngx_conf_file.c`): words
//! separated by blanks, `;` ending a directive, `{ … }` a block, `#` a comment at the
//! start of a word, `"…"`/`'…'` quoting with `\` escapes. Only the limit directives are
//! interpreted; `include` is not followed (a warning says so) and the other `limit_*`
//! directives are named as not modelled.

use super::{Fault, ImportedLimit, NginxOptions, Parsed, Warning};
use crate::time::Nanos;

/// One directive, with its block if it has one.
#[derive(Debug)]
struct Directive {
    name: String,
    args: Vec<String>,
    line: usize,
    block: Option<Vec<Directive>>,
}

/// A word and the line it starts on; `quoted` words are never `;`, `{` or `}`.
struct Word {
    text: String,
    line: usize,
    quoted: bool,
}

/// Splits `text` into words as nginx does.
fn words(text: &str) -> Result<Vec<Word>, Fault> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            ';' | '{' | '}' => {
                chars.next();
                out.push(Word {
                    text: c.to_string(),
                    line,
                    quoted: false,
                });
            }
            '"' | '\'' => {
                let start = line;
                chars.next();
                let mut word = String::new();
                loop {
                    match chars.next() {
                        None => return Err(Fault::at(start, format!("unclosed {c} quote"))),
                        Some('\\') => match chars.next() {
                            Some('n') => word.push('\n'),
                            Some('t') => word.push('\t'),
                            Some('r') => word.push('\r'),
                            Some(e) => word.push(e),
                            None => return Err(Fault::at(start, format!("unclosed {c} quote"))),
                        },
                        Some(q) if q == c => break,
                        Some(other) => {
                            if other == '\n' {
                                line += 1;
                            }
                            word.push(other);
                        }
                    }
                }
                out.push(Word {
                    text: word,
                    line: start,
                    quoted: true,
                });
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, ';' | '{' | '}') {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                out.push(Word {
                    text: word,
                    line,
                    quoted: false,
                });
            }
        }
    }
    Ok(out)
}

/// Groups words into directives and blocks.
fn directives(
    words: &mut std::iter::Peekable<std::vec::IntoIter<Word>>,
    depth: usize,
    open_line: usize,
) -> Result<Vec<Directive>, Fault> {
    let mut out = Vec::new();
    loop {
        let Some(first) = words.next() else {
            if depth > 0 {
                return Err(Fault::at(
                    open_line,
                    "this `{` is never closed (unexpected end of file)",
                ));
            }
            return Ok(out);
        };
        if !first.quoted && first.text == "}" {
            if depth == 0 {
                return Err(Fault::at(first.line, "unexpected `}`"));
            }
            return Ok(out);
        }
        if !first.quoted && matches!(first.text.as_str(), ";" | "{") {
            return Err(Fault::at(
                first.line,
                format!("unexpected `{}`", first.text),
            ));
        }
        let mut args = Vec::new();
        let block = loop {
            let Some(word) = words.next() else {
                return Err(Fault::at(
                    first.line,
                    format!("`{}` is not ended by `;` or `{{`", first.text),
                ));
            };
            match (word.quoted, word.text.as_str()) {
                (false, ";") => break None,
                (false, "{") => break Some(directives(words, depth + 1, word.line)?),
                (false, "}") => {
                    return Err(Fault::at(
                        first.line,
                        format!("`{}` is not ended by `;`", first.text),
                    ));
                }
                _ => args.push(word.text),
            }
        };
        out.push(Directive {
            name: first.text,
            args,
            line: first.line,
            block,
        });
    }
}

/// A `limit_req_zone`: its key and rate.
struct Zone {
    name: String,
    key: String,
    max_requests: u64,
    window: Nanos,
    line: usize,
    text: String,
}

/// A `limit_req` naming a zone.
struct Use {
    zone: String,
    options: NginxOptions,
    line: usize,
    text: String,
}

/// What the walk over the blocks collects.
#[derive(Default)]
struct Found {
    zones: Vec<Zone>,
    uses: Vec<Use>,
    warnings: Vec<Warning>,
}

pub(super) fn parse(text: &str) -> Parsed {
    let mut words = words(text)?.into_iter().peekable();
    let tree = directives(&mut words, 0, 0)?;
    let mut found = Found::default();
    walk(&tree, Place::default(), &mut found)?;
    let Found {
        zones,
        uses,
        mut warnings,
    } = found;
    for u in &uses {
        if !zones.iter().any(|z| z.name == u.zone) {
            return Err(Fault::at(
                u.line,
                format!(
                    "limit_req names zone `{}`, which no limit_req_zone in this file \
                     defines{}",
                    u.zone,
                    if text.contains("include") {
                        " (is it in an included file? import that file, or copy the \
                         limit_req_zone line here)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    let mut limits = Vec::new();
    for zone in &zones {
        let mut mine: Vec<&Use> = Vec::new();
        for u in uses.iter().filter(|u| u.zone == zone.name) {
            // One scenario per distinct way the zone is used.
            match mine.iter().position(|m| m.options == u.options) {
                Some(_) => {}
                None => mine.push(u),
            }
        }
        if mine.is_empty() {
            warnings.push(Warning {
                line: zone.line,
                message: format!(
                    "zone `{}` is used by no limit_req in this file: nothing to import",
                    zone.name
                ),
            });
            continue;
        }
        let key = key_field(&zone.key);
        if key.is_none() {
            warnings.push(Warning {
                line: zone.line,
                message: format!(
                    "the key `{}` has no field in a combined log: a replayed trace is \
                     keyed by its default field (pass --key to choose)",
                    zone.key
                ),
            });
        }
        for u in mine {
            let name = if uses.iter().filter(|x| x.zone == zone.name).count() > 1
                && !uses
                    .iter()
                    .filter(|x| x.zone == zone.name)
                    .all(|x| x.options == u.options)
            {
                format!("{}_line{}", zone.name, u.line)
            } else {
                zone.name.clone()
            };
            limits.push(ImportedLimit {
                name,
                preset: "nginx",
                max_requests: zone.max_requests,
                window: zone.window,
                burst: None,
                nginx: Some(u.options),
                key,
                sources: vec![(zone.line, zone.text.clone()), (u.line, u.text.clone())],
            });
        }
    }
    Ok((limits, warnings))
}

/// Collects zones and uses over every block, warning where nginx would do something
/// the import does not model.
/// Where a directive stands: the block around it (none at the top of a file, which may
/// be a snippet included into `http`) and the `location` it is in.
#[derive(Default, Clone, Copy)]
struct Place<'a> {
    block: Option<&'a str>,
    location: Option<&'a str>,
}

/// Refuses a limit directive in a block where nginx refuses it.
fn check_place(d: &Directive, place: Place<'_>) -> Result<(), Fault> {
    let allowed: &[&str] = match d.name.as_str() {
        "limit_req_zone" => &["http"],
        "limit_req" | "limit_req_status" | "limit_req_log_level" | "limit_req_dry_run" => {
            &["http", "server", "location"]
        }
        _ => return Ok(()),
    };
    match place.block {
        Some(block) if !allowed.contains(&block) => Err(Fault::at(
            d.line,
            format!(
                "`{}` is not allowed in a `{block}` block (nginx refuses it there; it \
                 belongs in {})",
                d.name,
                allowed.join(", ")
            ),
        )),
        _ => Ok(()),
    }
}

fn walk(tree: &[Directive], place: Place<'_>, found: &mut Found) -> Result<(), Fault> {
    for d in tree {
        let text = format!("{} {}", d.name, d.args.join(" "));
        check_place(d, place)?;
        let location = place.location;
        match d.name.as_str() {
            "limit_req_zone" => found.zones.push(zone(d, text)?),
            "limit_req" => {
                if let Some(location) = location {
                    found.warnings.push(Warning {
                        line: d.line,
                        message: format!(
                            "this limit_req applies only to requests `location {location}` \
                             matches; a replayed trace sends it every request"
                        ),
                    });
                }
                found.uses.push(limit_req(d, text)?)
            }
            "include" => found.warnings.push(Warning {
                line: d.line,
                message: format!(
                    "`include {}` is not followed: import that file too if it holds limits",
                    d.args.join(" ")
                ),
            }),
            "limit_req_dry_run" if d.args.first().is_some_and(|a| a == "on") => {
                found.warnings.push(Warning {
                    line: d.line,
                    message: "limit_req_dry_run on: nginx only logs, never refuses; the \
                              scenario simulates the limit enforced"
                        .to_string(),
                })
            }
            "limit_req_status" | "limit_req_log_level" | "limit_req_dry_run" => {}
            "limit_conn"
            | "limit_conn_zone"
            | "limit_rate"
            | "limit_rate_after"
            | "limit_conn_status"
            | "limit_conn_log_level"
            | "limit_conn_dry_run" => found.warnings.push(Warning {
                line: d.line,
                message: format!(
                    "`{}` limits connections or bandwidth, not the request rate: \
                         not imported",
                    d.name
                ),
            }),
            name if name.starts_with("limit_req") => {
                return Err(Fault::at(
                    d.line,
                    format!("unknown directive `{name}` (not one nginx's limit_req module has)"),
                ));
            }
            _ => {}
        }
        if let Some(block) = &d.block {
            let here = d.args.join(" ");
            let inner = Place {
                block: Some(&d.name),
                location: if d.name == "location" {
                    Some(&here)
                } else {
                    location
                },
            };
            walk(block, inner, found)?;
        }
    }
    Ok(())
}

/// `limit_req_zone KEY zone=NAME:SIZE rate=RATE [sync]`.
fn zone(d: &Directive, text: String) -> Result<Zone, Fault> {
    let err = |m: String| Fault::at(d.line, format!("limit_req_zone: {m}"));
    let mut key = None;
    let mut name = None;
    let mut rate = None;
    for arg in &d.args {
        if let Some(v) = arg.strip_prefix("zone=") {
            let (n, size) = v
                .split_once(':')
                .ok_or_else(|| err(format!("`{arg}`: expected zone=NAME:SIZE")))?;
            if n.is_empty() || size.is_empty() {
                return Err(err(format!("`{arg}`: expected zone=NAME:SIZE")));
            }
            name = Some(n.to_string());
        } else if let Some(v) = arg.strip_prefix("rate=") {
            rate = Some(parse_rate(v).map_err(|m| err(format!("`{arg}`: {m}")))?);
        } else if arg == "sync" {
            // nginx plus shares the zone between servers; one server is what we model.
        } else if key.is_none() {
            key = Some(arg.clone());
        } else {
            return Err(err(format!("unexpected `{arg}`")));
        }
    }
    let name = name.ok_or_else(|| err("no zone=NAME:SIZE".to_string()))?;
    let (max_requests, window) = rate.ok_or_else(|| err("no rate=".to_string()))?;
    let key = key.ok_or_else(|| err("no key (e.g. $binary_remote_addr)".to_string()))?;
    Ok(Zone {
        name,
        key,
        max_requests,
        window,
        line: d.line,
        text,
    })
}

/// `rate=Nr/s` or `rate=Nr/m`, as nginx reads it: a whole number of requests per
/// second or per minute, nothing else.
fn parse_rate(v: &str) -> Result<(u64, Nanos), String> {
    let (number, window) = if let Some(n) = v.strip_suffix("r/s") {
        (n, Nanos::from_secs(1))
    } else if let Some(n) = v.strip_suffix("r/m") {
        (n, Nanos::from_secs(60))
    } else {
        return Err("expected a rate like 10r/s or 30r/m (nginx knows only r/s and r/m)".into());
    };
    match number.parse::<u64>() {
        Ok(n) if n >= 1 && !number.starts_with('+') => Ok((n, window)),
        _ => Err(format!(
            "`{number}` is not a whole number of requests of at least 1 (nginx rejects \
             fractions)"
        )),
    }
}

/// `limit_req zone=NAME [burst=N] [nodelay | delay=N]`.
fn limit_req(d: &Directive, text: String) -> Result<Use, Fault> {
    let err = |m: String| Fault::at(d.line, format!("limit_req: {m}"));
    let whole = |arg: &str, v: &str| {
        v.parse::<u64>()
            .ok()
            .filter(|_| !v.starts_with('+'))
            .ok_or_else(|| err(format!("`{arg}`: expected a whole number")))
    };
    let mut zone = None;
    let mut options = NginxOptions::default();
    let mut delay_given = false;
    for arg in &d.args {
        if let Some(v) = arg.strip_prefix("zone=") {
            zone = Some(v.to_string());
        } else if let Some(v) = arg.strip_prefix("burst=") {
            options.burst = whole(arg, v)?;
        } else if let Some(v) = arg.strip_prefix("delay=") {
            options.delay = whole(arg, v)?;
            delay_given = true;
        } else if arg == "nodelay" {
            options.nodelay = true;
        } else {
            return Err(err(format!(
                "unknown parameter `{arg}` (expected zone=, burst=, nodelay or delay=)"
            )));
        }
    }
    if options.nodelay && delay_given {
        return Err(err(
            "both nodelay and delay= given; nginx keeps whichever comes last, so say one"
                .to_string(),
        ));
    }
    let zone = zone.ok_or_else(|| err("no zone=NAME".to_string()))?;
    Ok(Use {
        zone,
        options,
        line: d.line,
        text,
    })
}

/// The combined-log field for an nginx key, where there is one.
fn key_field(key: &str) -> Option<&'static str> {
    match key {
        "$binary_remote_addr" | "$remote_addr" => Some("ip"),
        "$remote_user" => Some("user"),
        "$request_uri" => Some("target"),
        "$uri" | "$document_uri" => Some("path"),
        "$http_user_agent" => Some("user_agent"),
        "$http_referer" => Some("referer"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_semicolon_is_part_of_the_word_and_a_hash_inside_a_word_is_not_a_comment() {
        let w = words("a \"b;c\" d#e # f ;\n g;").unwrap();
        let texts: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
        // The `;` after `#` is inside the comment.
        assert_eq!(texts, ["a", "b;c", "d#e", "g", ";"]);
        assert_eq!(w[3].line, 2);
    }

    #[test]
    fn rates_are_whole_requests_per_second_or_minute() {
        assert_eq!(parse_rate("10r/s"), Ok((10, Nanos::from_secs(1))));
        assert_eq!(parse_rate("30r/m"), Ok((30, Nanos::from_secs(60))));
        assert!(parse_rate("1.5r/s").is_err());
        assert!(parse_rate("0r/s").is_err());
        assert!(parse_rate("10r/h").is_err());
    }
}
