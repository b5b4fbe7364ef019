//! HAProxy configs: a stick table storing `http_req_rate(period)`, the rule that
//! tracks requests in it (`track-sc0 src`) and the rule that refuses on it
//! (`http-request deny if { sc_http_req_rate(0) gt N }`, inline or through a named
//! `acl`).
//!
//! Lines are split as HAProxy splits them: blanks between words, `#` starting a
//! comment, `"…"`/`'…'` quoting, `\` escaping. A table lives in a `frontend`,
//! `backend` or `listen` section (named after it) or as `table NAME` in `peers`. A
//! refusal whose condition the `haproxy` preset cannot model (`unless`, `||`, a negated
//! rate, `lt`) is an error; extra conditions are a warning.

use super::{Fault, ImportedLimit, Parsed, Warning};
use crate::time::Nanos;

/// One config line: its words and number.
struct Line {
    words: Vec<String>,
    number: usize,
}

/// A stick table storing `http_req_rate`.
struct Table {
    name: String,
    period: Option<Nanos>,
    line: usize,
    text: String,
}

/// `track-scN KEY [table T]` in a section.
struct Track {
    section: usize,
    counter: u32,
    key: String,
    table: Option<String>,
}

/// A refusing rule's rate test: which counter or table, and `gt N`.
struct Deny {
    section: usize,
    fetch: Fetch,
    max_requests: u64,
    line: usize,
    text: String,
}

/// The rate fetch a condition reads.
enum Fetch {
    /// `sc_http_req_rate(N[,table])`, `scN_http_req_rate[(table)]`.
    Counter(u32, Option<String>),
    /// `src_http_req_rate[(table)]`: the source address looked up in a table.
    Source(Option<String>),
}

/// A proxy section (or a `peers` section) and its named ACLs.
#[derive(Default)]
struct Section {
    name: String,
    table: Option<String>,
    acls: Vec<(String, Vec<String>)>,
}

const SECTIONS: [&str; 16] = [
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "peers",
    "resolvers",
    "userlist",
    "mailers",
    "program",
    "http-errors",
    "ring",
    "cache",
    "fcgi-app",
    "crt-store",
    "traces",
];

pub(super) fn parse(text: &str) -> Parsed {
    let mut sections: Vec<Section> = vec![Section::default()];
    let mut tables: Vec<Table> = Vec::new();
    let mut tracks: Vec<Track> = Vec::new();
    let mut denies: Vec<Deny> = Vec::new();
    let mut warnings = Vec::new();
    for line in lines(text)? {
        let w = &line.words;
        let head = w[0].as_str();
        if SECTIONS.contains(&head) {
            let kind = head;
            sections.push(Section {
                name: w.get(1).cloned().unwrap_or_else(|| kind.to_string()),
                ..Section::default()
            });
            continue;
        }
        let here = sections.len() - 1;
        let joined = w.join(" ");
        match head {
            "stick-table" => {
                let name = sections[here].name.clone();
                sections[here].table = Some(name.clone());
                tables.push(table(name, &w[1..], line.number, joined)?);
            }
            "table" if w.len() > 1 => {
                tables.push(table(w[1].clone(), &w[2..], line.number, joined)?);
            }
            "acl" if w.len() > 2 => sections[here].acls.push((w[1].clone(), w[2..].to_vec())),
            "http-request" | "tcp-request" => rule(
                &line,
                here,
                &sections[here],
                &mut tracks,
                &mut denies,
                &mut warnings,
            )?,
            _ if joined.contains("http_req_rate") => warnings.push(Warning {
                line: line.number,
                message: format!("`{joined}` reads http_req_rate in a way not modelled: ignored"),
            }),
            _ => {}
        }
    }
    resolve(&sections, &tables, &tracks, &denies, warnings)
}

/// Splits `text` into lines of words, as HAProxy does.
fn lines(text: &str) -> Result<Vec<Line>, Fault> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let mut words = Vec::new();
        let mut word = String::new();
        let mut in_word = false;
        let mut quote: Option<char> = None;
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), '\\') | (None, '\\') => {
                    if let Some(e) = chars.next() {
                        word.push(e);
                    }
                    in_word = true;
                }
                (Some(_), c) => word.push(c),
                (None, '"' | '\'') => {
                    quote = Some(c);
                    in_word = true;
                }
                (None, '#') => break,
                (None, c) if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                (None, c) => {
                    word.push(c);
                    in_word = true;
                }
            }
        }
        if quote.is_some() {
            return Err(Fault::at(number, "unclosed quote"));
        }
        if in_word {
            words.push(word);
        }
        if !words.is_empty() {
            out.push(Line { words, number });
        }
    }
    Ok(out)
}

/// `stick-table type … size … [expire …] store a,b(…)` (or the same after `table NAME`).
fn table(name: String, args: &[String], line: usize, text: String) -> Result<Table, Fault> {
    let mut period = None;
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if w == "store" {
            let list = words
                .next()
                .ok_or_else(|| Fault::at(line, "`store` without data types"))?;
            for item in list.split(',') {
                if let Some(p) = item
                    .strip_prefix("http_req_rate(")
                    .and_then(|p| p.strip_suffix(')'))
                {
                    period = Some(
                        haproxy_time(p)
                            .map_err(|m| Fault::at(line, format!("http_req_rate({p}): {m}")))?,
                    );
                }
            }
        }
    }
    Ok(Table {
        name,
        period,
        line,
        text,
    })
}

/// An HAProxy time: a whole number with a unit (`us`, `ms`, `s`, `m`, `h`, `d`),
/// milliseconds when there is none.
fn haproxy_time(text: &str) -> Result<Nanos, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a period like 10s"))?;
    let scale: u64 = match unit {
        "us" => 1_000,
        "" | "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(format!("unknown unit `{unit}` in `{text}`")),
    };
    match n.checked_mul(scale) {
        Some(0) => Err("a period of 0".to_string()),
        Some(ns) => Ok(Nanos::new(ns)),
        None => Err(format!("`{text}` is too long")),
    }
}

/// An `http-request` / `tcp-request` line: a `track-scN` or a refusal.
fn rule(
    line: &Line,
    section: usize,
    here: &Section,
    tracks: &mut Vec<Track>,
    denies: &mut Vec<Deny>,
    warnings: &mut Vec<Warning>,
) -> Result<(), Fault> {
    let w = &line.words;
    let joined = w.join(" ");
    let action_at = if w[0] == "tcp-request" { 2 } else { 1 };
    let Some(action) = w.get(action_at) else {
        return Ok(());
    };
    if let Some(n) = action.strip_prefix("track-sc") {
        let counter = n.parse().map_err(|_| {
            Fault::at(
                line.number,
                format!("`{action}`: expected track-sc0, 1 or 2"),
            )
        })?;
        let key = w
            .get(action_at + 1)
            .cloned()
            .ok_or_else(|| Fault::at(line.number, format!("`{action}` without a key")))?;
        let table = w
            .iter()
            .position(|x| x == "table")
            .and_then(|i| w.get(i + 1))
            .cloned();
        if let Some(at) = w.iter().position(|x| x == "if" || x == "unless") {
            warnings.push(Warning {
                line: line.number,
                message: format!(
                    "{action} counts only requests matching `{}`: the scenario counts every \
                     request",
                    w[at..].join(" ")
                ),
            });
        }
        tracks.push(Track {
            section,
            counter,
            key,
            table,
        });
        return Ok(());
    }
    let refuses = matches!(
        action.as_str(),
        "deny" | "tarpit" | "silent-drop" | "reject"
    ) || (action == "return"
        && w.windows(2).any(|p| p[0] == "status" && p[1] == "429"));
    let Some(cond_at) = w.iter().position(|x| x == "if" || x == "unless") else {
        if joined.contains("http_req_rate") {
            warnings.push(Warning {
                line: line.number,
                message: format!("`{joined}` is not understood: ignored"),
            });
        }
        return Ok(());
    };
    let mut terms = expand(&w[cond_at + 1..], here);
    let rate_at = terms
        .iter()
        .position(|t| t.iter().any(|x| x.contains("http_req_rate")));
    let Some(rate_at) = rate_at else {
        return Ok(());
    };
    if !refuses {
        warnings.push(Warning {
            line: line.number,
            message: format!("`{action}` on a request rate is not a refusal: ignored"),
        });
        return Ok(());
    }
    if w[cond_at] == "unless"
        || terms
            .iter()
            .any(|t| t.first().is_some_and(|w| w == "||" || w == "or"))
    {
        return Err(Fault::at(
            line.number,
            "a refusal `unless` or with `||`: the haproxy preset models `deny if { \
             sc_http_req_rate(0) gt N }` (plus other conditions joined by and)",
        ));
    }
    let rate = terms.remove(rate_at);
    let (fetch, max_requests) = rate_test(&rate).map_err(|m| Fault::at(line.number, m))?;
    if !terms.is_empty() {
        let others: Vec<String> = terms.iter().map(|t| t.join(" ")).collect();
        warnings.push(Warning {
            line: line.number,
            message: format!(
                "the refusal has other conditions too ({}): the scenario assumes they hold \
                 for every request",
                others.join(", ")
            ),
        });
    }
    denies.push(Deny {
        section,
        fetch,
        max_requests,
        line: line.number,
        text: joined,
    });
    Ok(())
}

/// A condition's terms: each `{ … }` inline ACL or named ACL (replaced by its
/// definition) or operator, as a list of words.
fn expand(words: &[String], here: &Section) -> Vec<Vec<String>> {
    let mut terms = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "{" {
            let end = words[i..]
                .iter()
                .position(|x| x == "}")
                .map_or(words.len(), |e| i + e);
            terms.push(words[i + 1..end].to_vec());
            i = end + 1;
            continue;
        }
        let (negated, name) = match words[i].strip_prefix('!') {
            Some(n) => (true, n),
            None => (false, words[i].as_str()),
        };
        let mut term = match here.acls.iter().rev().find(|(n, _)| n == name) {
            Some((_, definition)) => definition.clone(),
            None => vec![name.to_string()],
        };
        if negated {
            term.insert(0, "!".to_string());
        }
        terms.push(term);
        i += 1;
    }
    terms
}

/// `FETCH gt N` / `FETCH ge N` into the fetch and the most requests a period admits.
fn rate_test(term: &[String]) -> Result<(Fetch, u64), String> {
    let text = term.join(" ");
    let unsupported = || {
        format!("`{text}`: expected `sc_http_req_rate(0) gt N` (or ge, or scN_/src_http_req_rate)")
    };
    // ACL flags between the fetch and the test (`-m int`) change nothing here.
    let mut words: Vec<&String> = Vec::new();
    let mut skip_next = false;
    for w in term {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        match w.as_str() {
            "-m" => skip_next = true,
            "-n" | "-i" | "--" => {}
            _ => words.push(w),
        }
    }
    let [fetch, op, n] = words[..] else {
        return Err(unsupported());
    };
    let n: u64 = n.parse().map_err(|_| unsupported())?;
    let max_requests = match op.as_str() {
        "gt" => n,
        // `ge N` refuses at N: the same as `gt N-1`.
        "ge" if n >= 1 => n - 1,
        _ => return Err(unsupported()),
    };
    if max_requests == 0 {
        return Err(format!(
            "`{text}` refuses every request: not a limit to simulate"
        ));
    }
    let (name, arg) = match fetch.split_once('(') {
        Some((name, rest)) => (name, rest.strip_suffix(')').map(str::to_string)),
        None => (fetch.as_str(), None),
    };
    let fetch = if name == "sc_http_req_rate" {
        let arg = arg.ok_or_else(unsupported)?;
        let (counter, table) = match arg.split_once(',') {
            Some((c, t)) => (c.to_string(), Some(t.to_string())),
            None => (arg, None),
        };
        Fetch::Counter(counter.parse().map_err(|_| unsupported())?, table)
    } else if name == "src_http_req_rate" {
        Fetch::Source(arg)
    } else if let Some(c) = name
        .strip_prefix("sc")
        .and_then(|r| r.strip_suffix("_http_req_rate"))
    {
        Fetch::Counter(c.parse().map_err(|_| unsupported())?, arg)
    } else {
        return Err(unsupported());
    };
    Ok((fetch, max_requests))
}

/// The table a refusal reads and the key it is tracked by.
fn table_and_key(
    deny: &Deny,
    sections: &[Section],
    tracks: &[Track],
) -> Result<(String, Option<String>), Fault> {
    let here = &sections[deny.section];
    let (table, key) = match &deny.fetch {
        Fetch::Source(table) => (
            table.clone().or_else(|| here.table.clone()),
            Some("src".to_string()),
        ),
        Fetch::Counter(counter, table) => {
            let table_of = |t: &Track| {
                t.table
                    .clone()
                    .or_else(|| sections[t.section].table.clone())
            };
            let mine: Vec<&Track> = tracks
                .iter()
                .filter(|t| t.counter == *counter && t.section == deny.section)
                .collect();
            // No track rule here: one in another section (a frontend tracks, its
            // backend refuses), provided they all fill the same table.
            let candidates = if mine.is_empty() {
                tracks.iter().filter(|t| t.counter == *counter).collect()
            } else {
                mine
            };
            let Some(track) = candidates.first() else {
                return Err(Fault::at(
                    deny.line,
                    format!("no track-sc{counter} rule fills the counter this refusal reads"),
                ));
            };
            if table.is_none() && candidates.iter().any(|t| table_of(t) != table_of(track)) {
                return Err(Fault::at(
                    deny.line,
                    format!(
                        "track-sc{counter} rules fill different tables: name the table, as \
                         in sc_http_req_rate({counter},TABLE)"
                    ),
                ));
            }
            (
                table.clone().or_else(|| table_of(track)),
                Some(track.key.clone()),
            )
        }
    };
    let table =
        table.ok_or_else(|| Fault::at(deny.line, "no stick table for this refusal's counter"))?;
    Ok((table, key))
}

/// Matches each refusal to its table and key.
fn resolve(
    sections: &[Section],
    tables: &[Table],
    tracks: &[Track],
    denies: &[Deny],
    mut warnings: Vec<Warning>,
) -> Parsed {
    let mut limits = Vec::new();
    for deny in denies {
        let (table_name, key) = table_and_key(deny, sections, tracks)?;
        // A table of a `peers` section is named `PEERS/TABLE` where it is read.
        let bare = table_name.rsplit('/').next().unwrap_or(&table_name);
        let table = tables
            .iter()
            .find(|t| t.name == bare)
            .ok_or_else(|| Fault::at(deny.line, format!("no stick table named `{table_name}`")))?;
        let period = table.period.ok_or_else(|| {
            Fault::at(
                table.line,
                format!(
                    "table `{table_name}` does not store http_req_rate(period), which the \
                     refusal at line {} reads",
                    deny.line
                ),
            )
        })?;
        let key = key.as_deref().and_then(key_field);
        if key.is_none() {
            warnings.push(Warning {
                line: deny.line,
                message: "the tracked key has no field in a combined log: a replayed trace \
                          is keyed by its default field (pass --key to choose)"
                    .to_string(),
            });
        }
        limits.push(ImportedLimit {
            name: table.name.clone(),
            preset: "haproxy",
            max_requests: deny.max_requests,
            window: period,
            burst: None,
            nginx: None,
            key,
            sources: vec![
                (table.line, table.text.clone()),
                (deny.line, deny.text.clone()),
            ],
        });
    }
    for t in tables.iter().filter(|t| t.period.is_some()) {
        if !limits.iter().any(|l| l.name == t.name) {
            warnings.push(Warning {
                line: t.line,
                message: format!(
                    "table `{}` stores http_req_rate but no rule refuses on it: not imported",
                    t.name
                ),
            });
        }
    }
    Ok((limits, warnings))
}

/// The combined-log field for a tracked HAProxy key, where there is one.
fn key_field(key: &str) -> Option<&'static str> {
    match key {
        "src" => Some("ip"),
        "path" => Some("path"),
        "url" => Some("target"),
        "req.hdr(user-agent)" | "req.fhdr(user-agent)" => Some("user_agent"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_without_a_unit_is_milliseconds() {
        assert_eq!(haproxy_time("10s"), Ok(Nanos::from_secs(10)));
        assert_eq!(haproxy_time("1500"), Ok(Nanos::from_millis(1_500)));
        assert_eq!(haproxy_time("1m"), Ok(Nanos::from_secs(60)));
        assert!(haproxy_time("0s").is_err());
        assert!(haproxy_time("10x").is_err());
    }

    #[test]
    fn a_peers_table_read_by_src_http_req_rate_is_imported_with_its_period() {
        let text = "peers mypeers\n  peer lb1 127.0.0.1:10000\n  table per_ip type ip size \
                    1m expire 1m store gpc0,http_req_rate(30s)\n\nfrontend fe\n  bind :80\n  \
                    acl abuse src_http_req_rate(mypeers/per_ip) -m int gt 50\n  \
                    http-request tarpit if abuse\n";
        let (limits, warnings) = parse(text).unwrap();
        assert_eq!(limits.len(), 1, "{warnings:?}");
        let l = &limits[0];
        assert_eq!(l.name, "per_ip");
        assert_eq!((l.max_requests, l.window), (50, Nanos::from_secs(30)));
        assert_eq!(l.key, Some("ip"));
        assert_eq!(l.sources[0].0, 3);
        assert_eq!(l.sources[1].0, 8);
    }

    #[test]
    fn counters_filled_with_different_tables_elsewhere_must_be_named() {
        let text = "frontend a\n  stick-table type ip size 1k store http_req_rate(10s)\n  \
                    http-request track-sc0 src\nfrontend b\n  stick-table type ip size 1k \
                    store http_req_rate(1m)\n  http-request track-sc0 src if { path_beg /x }\n\
                    backend c\n  http-request deny if { sc_http_req_rate(0) gt 5 }\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, Some(8), "{e:?}");
        assert!(e.message.contains("fill different tables"), "{e:?}");
        let named = text.replace("sc_http_req_rate(0)", "sc_http_req_rate(0,b)");
        let (limits, warnings) = parse(&named).unwrap();
        assert_eq!(limits[0].window, Nanos::from_secs(60));
        assert_eq!(warnings[0].line, 6, "{warnings:?}");
        assert!(
            warnings[0]
                .message
                .contains("counts only requests matching `if {")
        );
    }

    #[test]
    fn ge_n_refuses_from_n_so_it_admits_n_minus_one() {
        let words = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            rate_test(&words("sc_http_req_rate(0) gt 20")).unwrap().1,
            20
        );
        assert_eq!(rate_test(&words("sc0_http_req_rate ge 20")).unwrap().1, 19);
        assert!(rate_test(&words("sc_http_req_rate(0) lt 20")).is_err());
    }
}
