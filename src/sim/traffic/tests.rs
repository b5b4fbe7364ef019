//! The stream's tests: every kind of source, the merge, interning and the filtered
//! streams of a second pass.

use std::path::Path;

use rand::RngExt;

use super::*;

fn scenario(traffic: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\nseed = 7\nduration = \"40s\"\n[limit]\nmax_requests = 5\n\
         window = \"10s\"\n{traffic}"
    );
    Scenario::parse(&text, Path::new("t.toml")).unwrap()
}

fn drain(s: &Scenario) -> Vec<(u64, Arrival)> {
    run_out(ArrivalStream::new(s).unwrap()).0
}

/// Every arrival of `stream`, and its key table at the end.
fn run_out(mut stream: ArrivalStream) -> (Vec<(u64, Arrival)>, KeyTable) {
    let mut out = Vec::new();
    while let Some(a) = stream.next_arrival().unwrap() {
        out.push(a);
    }
    (out, stream.into_keys())
}

#[test]
fn the_key_table_numbers_names_densely_in_order_of_first_sight() {
    let mut keys = KeyTable::default();
    assert!(keys.is_empty());
    assert_eq!(keys.len(), 0);
    let ids: Vec<u32> = ["b", "a", "b", "c", "a"]
        .iter()
        .map(|n| keys.intern(n))
        .collect();
    assert_eq!(ids, [0, 1, 0, 2, 1]);
    assert!(!keys.is_empty());
    assert_eq!(keys.len(), 3);
    assert_eq!(keys.names().collect::<Vec<_>>(), ["b", "a", "c"]);
    assert_eq!((keys.name(0), keys.name(2), keys.name(3)), ("b", "c", ""));
    assert_eq!(
        (keys.id("a"), keys.id("c"), keys.id("d")),
        (Some(1), Some(2), None)
    );
}

/// A worker's table copied from the producer's with `share` and `intern_shared`
/// numbers every name as the producer's does, shares the names' storage, and
/// still finds a name interned twice by its first id.
#[test]
fn a_table_copied_by_sharing_numbers_names_as_the_original() {
    let mut producer = KeyTable::default();
    let mut worker = KeyTable::default();
    let mut known = 0;
    for batch in [&["x", "y"][..], &["y", "z", "x", "w"][..], &[][..]] {
        for n in batch {
            producer.intern(n);
        }
        for name in producer.share(known).iter() {
            worker.intern_shared(name);
        }
        known = producer.len();
    }
    assert_eq!(worker.names().collect::<Vec<_>>(), ["x", "y", "z", "w"]);
    for (id, name) in producer.names().enumerate() {
        assert_eq!(worker.id(name), Some(id as u32));
        assert!(Arc::ptr_eq(&producer.names[id], &worker.names[id]));
    }
    assert_eq!(worker.intern_shared(&Arc::from("y")), 1);
    assert_eq!(worker.len(), 4);
    assert!(producer.share(9).is_empty());
}

/// A stream of a few keys yields exactly the whole stream's arrivals of those keys
/// (same instants, ids and costs, in the same order) for every kind of source: a Zipf
/// table (its first, last and a middle client), a Zipf sampler past the table's size,
/// uniform picks, a uniform rate and an on/off source sharing a prefix with another,
/// bursts and a trace; with no key, one, several, and every key.
#[test]
fn a_stream_of_a_few_keys_is_the_whole_streams_arrivals_of_them() {
    let traffic = [
        "kind = \"poisson\"\nrate = 400\nkeys = 50\nkey_popularity = \"zipf\"\nzipf_exponent = 1.2\n",
        "kind = \"poisson\"\nrate = 20\nkeys = 2000000\nkey_popularity = \"zipf\"\nkey_prefix = \"big\"\n",
        "kind = \"on_off\"\nrate = 100\non = \"1s\"\noff = \"2s\"\nkeys = 7\n",
        "kind = \"uniform\"\nrate = 3\nkeys = 3\ncost = 2\n",
        "kind = \"boundary_burst\"\nsize = 2\nkeys = 3\nkey_prefix = \"b\"\n",
        "kind = \"trace\"\npath = \"traces/sample.csv\"\n",
    ];
    let text = format!(
        "name = \"t\"\nseed = 7\nduration = \"40s\"\n[limit]\nmax_requests = 5\n\
         window = \"10s\"\n{}",
        traffic.map(|t| format!("[[traffic]]\n{t}")).concat()
    );
    let origin = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/t.toml");
    let s = Scenario::parse(&text, &origin).unwrap();
    let (whole, keys) = run_out(ArrivalStream::new(&s).unwrap());
    let id = |name: &str| keys.id(name).unwrap_or_else(|| panic!("no key {name}"));
    let mut sets = vec![
        vec![],
        vec![id("client-0")],
        vec![id("client-49")],
        vec![id("client-2"), id("client-20"), id("b-1")],
        vec![id("big-0"), id("client-6")],
        (0..keys.len() as u32).collect(),
    ];
    // Every key the trace names, and the last key first seen.
    let mut trace_keys: Vec<u32> = whole
        .iter()
        .map(|(_, a)| a.key)
        .filter(|&k| {
            !["client-", "big-", "b-"]
                .iter()
                .any(|p| keys.name(k).starts_with(p))
        })
        .collect();
    trace_keys.sort_unstable();
    trace_keys.dedup();
    assert!(trace_keys.len() > 1, "{trace_keys:?}");
    sets.push(trace_keys);
    sets.push(vec![(keys.len() - 1) as u32]);
    for wanted in sets {
        let (got, only_keys) = run_out(ArrivalStream::only(&s, keys.clone(), &wanted).unwrap());
        let expected: Vec<Arrival> = whole
            .iter()
            .map(|&(_, a)| a)
            .filter(|a| wanted.contains(&a.key))
            .collect();
        assert!(
            wanted.is_empty() || !expected.is_empty(),
            "{wanted:?} never arrive"
        );
        assert_eq!(
            got.iter().map(|&(_, a)| a).collect::<Vec<_>>(),
            expected,
            "{wanted:?}"
        );
        let seqs: Vec<u64> = got.iter().map(|&(seq, _)| seq).collect();
        assert_eq!(seqs, (0..expected.len() as u64).collect::<Vec<_>>());
        assert_eq!(
            only_keys.names().collect::<Vec<_>>(),
            keys.names().collect::<Vec<_>>()
        );
    }
}

/// Generating ahead changes nothing: a Poisson source of Zipf clients yields, arrival
/// by arrival, what drawing one at a time from its own random stream gives (the gap,
/// then the client, until an instant reaches the end), with clients numbered in
/// order of first sight.
#[test]
fn a_source_generated_ahead_yields_what_one_at_a_time_draws_give() {
    let s = scenario(
        "[[traffic]]\nkind = \"poisson\"\nrate = 300\nkeys = 40\n\
         key_popularity = \"zipf\"\ncost = 3\n",
    );
    let spec = &s.traffic[0];
    let TrafficKind::Poisson { rate } = spec.kind else {
        panic!("a Poisson source")
    };
    let mut rng = ChaCha8Rng::seed_from_u64(s.seed);
    rng.set_stream(1);
    let gap = exp_ns(rate);
    let mut picker = KeyPicker::new(&spec.keys);
    let mut keys = KeyTable::default();
    let (mut at, mut expected) = (0u64, Vec::new());
    loop {
        at += sample_gap(&gap, &mut rng);
        let time = spec.start + Nanos::new(at);
        if time >= spec.end {
            break;
        }
        let key = picker.pick(&mut rng, &mut keys);
        expected.push(Arrival { time, key, cost: 3 });
    }
    assert!(expected.len() > 20 * AHEAD, "{} arrivals", expected.len());
    let (got, got_keys) = run_out(ArrivalStream::new(&s).unwrap());
    assert_eq!(got.iter().map(|&(_, a)| a).collect::<Vec<_>>(), expected);
    assert_eq!(
        got_keys.names().collect::<Vec<_>>(),
        keys.names().collect::<Vec<_>>()
    );
}

/// Filling chunks is drawing one arrival at a time: the same arrivals, numbers and key
/// table, chunk by chunk (the keys known after each chunk are what a worker is sent
/// with it), for every kind of source alone, for several merged, and for a filtered
/// stream; `next_arrival` may take over between chunks.
#[test]
fn filling_chunks_yields_what_one_arrival_at_a_time_does() {
    let traffic = [
        "kind = \"poisson\"\nrate = 400\nkeys = 50\nkey_popularity = \"zipf\"\n",
        "kind = \"poisson\"\nrate = 300\nkeys = 1\n",
        "kind = \"on_off\"\nrate = 100\non = \"1s\"\noff = \"2s\"\nkeys = 7\n",
        "kind = \"uniform\"\nrate = 3\nkeys = 3\ncost = 2\n",
        "kind = \"boundary_burst\"\nsize = 2\nkeys = 3\nkey_prefix = \"b\"\n",
        "kind = \"trace\"\npath = \"traces/sample.csv\"\n",
    ];
    let origin = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/t.toml");
    let parse = |sources: &[&str]| {
        let text = format!(
            "name = \"t\"\nseed = 7\nduration = \"40s\"\n[limit]\nmax_requests = 5\n\
             window = \"10s\"\n{}",
            sources
                .iter()
                .map(|t| format!("[[traffic]]\n{t}"))
                .collect::<String>()
        );
        Scenario::parse(&text, &origin).unwrap()
    };
    let mut scenarios: Vec<Scenario> = traffic.iter().map(|t| parse(&[t])).collect();
    scenarios.push(parse(&traffic));
    for s in &scenarios {
        let (_, all_keys) = run_out(ArrivalStream::new(s).unwrap());
        let first_two: Vec<u32> = (0..all_keys.len().min(2) as u32).collect();
        let open = |filtered: bool| match filtered {
            false => ArrivalStream::new(s).unwrap(),
            true => ArrivalStream::only(s, all_keys.clone(), &first_two).unwrap(),
        };
        for filtered in [false, true] {
            // One at a time, with the size of the key table after each arrival.
            let (mut one, mut expected, mut known) = (open(filtered), Vec::new(), Vec::new());
            while let Some(a) = one.next_arrival().unwrap() {
                expected.push(a);
                known.push(one.keys().len());
            }
            assert!(expected.len() > 10, "{} arrivals", expected.len());
            // A chunk exactly as long as the stream takes all of it.
            let mut all = Vec::new();
            open(filtered).fill(&mut all, expected.len()).unwrap();
            assert_eq!(all, expected, "in one chunk");
            let (mut stream, mut got, mut chunk) = (open(filtered), Vec::new(), Vec::new());
            for size in [1, 7, 64, 65, 3, 1000].into_iter().cycle() {
                chunk.clear();
                stream.fill(&mut chunk, 0).unwrap();
                assert!(chunk.is_empty(), "a full chunk took {}", chunk.len());
                stream.fill(&mut chunk, size).unwrap();
                if chunk.is_empty() {
                    break;
                }
                assert!(chunk.len() <= size, "{} arrivals past {size}", chunk.len());
                got.extend_from_slice(&chunk);
                let short = chunk.len() < size;
                assert!(
                    !short || got.len() == expected.len(),
                    "short before the end"
                );
                assert_eq!(
                    stream.keys().len(),
                    known[got.len() - 1],
                    "at {}",
                    got.len()
                );
                if size == 3
                    && let Some(a) = stream.next_arrival().unwrap()
                {
                    got.push(a);
                }
            }
            assert_eq!(got, expected, "{} sources", s.traffic.len());
        }
    }
}

#[test]
fn boundary_bursts_straddle_every_boundary_at_one_instant_each_side() {
    let s = scenario("[[traffic]]\nkind = \"boundary_burst\"\nsize = 3\n");
    let times: Vec<u64> = drain(&s).iter().map(|(_, a)| a.time.as_u64()).collect();
    let w = 10_000_000_000;
    let mut expected = Vec::new();
    for k in 1..=3u64 {
        expected.extend([k * w - 1; 3]);
        expected.extend([k * w; 3]);
    }
    expected.extend([4 * w - 1; 3]); // 40 s is the end: only the "before" half
    assert_eq!(times, expected);
}

#[test]
fn with_several_keys_every_client_sends_the_whole_burst_in_client_order() {
    let s = scenario("[[traffic]]\nkind = \"boundary_burst\"\nsize = 2\nkeys = 3\n");
    let stream = drain(&s);
    let w = 10_000_000_000;
    let mut keys = KeyTable::default();
    let names: Vec<String> = (0..3).map(|c| format!("client-{c}")).collect();
    let ids: Vec<u32> = names.iter().map(|n| keys.intern(n)).collect();
    let first: Vec<(u64, u32)> = stream[..12]
        .iter()
        .map(|(_, a)| (a.time.as_u64(), a.key))
        .collect();
    let mut expected = Vec::new();
    for t in [w - 1, w - 1, w, w] {
        expected.extend(ids.iter().map(|&k| (t, k)));
    }
    assert_eq!(first, expected);
    // 3 whole boundaries and the first half of a 4th before the end at 40 s; the
    // size estimate counts every client's share of 4 boundaries.
    assert_eq!(stream.len(), 3 * 2 * 2 * 3 + 2 * 3);
    assert_eq!(s.expected_arrivals(), 4 * 2 * 2 * 3);
}

#[test]
fn spread_bursts_cover_the_spread_evenly_and_stay_in_order() {
    let s = scenario("[[traffic]]\nkind = \"boundary_burst\"\nsize = 3\nspread = \"2ns\"\n");
    let times: Vec<u64> = drain(&s)
        .iter()
        .take(6)
        .map(|(_, a)| a.time.as_u64())
        .collect();
    let b = 10_000_000_000;
    assert_eq!(times, [b - 3, b - 2, b - 1, b, b + 1, b + 2]);
}

#[test]
fn spread_bursts_from_several_clients_give_every_client_every_position() {
    let s =
        scenario("[[traffic]]\nkind = \"boundary_burst\"\nsize = 3\nspread = \"2ns\"\nkeys = 2\n");
    let mut stream = ArrivalStream::new(&s).unwrap();
    let mut first = Vec::new();
    while first.len() < 12 {
        let (_, a) = stream.next_arrival().unwrap().unwrap();
        first.push((a.time.as_u64(), stream.keys().name(a.key).to_string()));
    }
    // Each of the 3 positions on each side is taken by every client in turn.
    let b = 10_000_000_000;
    let mut expected = Vec::new();
    for t in [b - 3, b - 2, b - 1, b, b + 1, b + 2] {
        expected.push((t, "client-0".to_string()));
        expected.push((t, "client-1".to_string()));
    }
    assert_eq!(first, expected);
}

#[test]
fn on_off_arrivals_spread_over_the_whole_on_period() {
    let s = scenario("[[traffic]]\nkind = \"on_off\"\nrate = 50\non = \"1s\"\noff = \"3s\"\n");
    let phases: Vec<u64> = drain(&s)
        .iter()
        .map(|(_, a)| a.time.as_u64() % 4_000_000_000)
        .collect();
    let late = phases.iter().filter(|&&p| p >= 500_000_000).count();
    // Poisson arrivals fill the on period evenly: about half in its second half.
    assert!(
        late * 4 > phases.len() && late * 4 < 3 * phases.len(),
        "{late} of {} arrivals in the second half of an on period",
        phases.len()
    );
}

#[test]
fn ties_keep_declaration_order_and_seq_counts_from_zero() {
    let s = scenario(
        "[[traffic]]\nkind = \"uniform\"\nrate = 1\nkey_prefix = \"a\"\n\
         [[traffic]]\nkind = \"uniform\"\nrate = 1\nkey_prefix = \"b\"\n",
    );
    let mut stream = ArrivalStream::new(&s).unwrap();
    let (s0, a0) = stream.next_arrival().unwrap().unwrap();
    let (s1, a1) = stream.next_arrival().unwrap().unwrap();
    assert_eq!((s0, s1), (0, 1));
    assert_eq!(a0.time, a1.time);
    assert_eq!(stream.keys().name(a0.key), "a-0");
    assert_eq!(stream.keys().name(a1.key), "b-0");
}

#[test]
fn on_off_sources_are_silent_while_off() {
    let s = scenario("[[traffic]]\nkind = \"on_off\"\nrate = 50\non = \"1s\"\noff = \"3s\"\n");
    let arrivals = drain(&s);
    assert!(arrivals.len() > 100, "{} arrivals", arrivals.len());
    for (_, a) in arrivals {
        let phase = a.time.as_u64() % 4_000_000_000;
        assert!(
            phase < 1_000_000_000,
            "arrival at {:?} is in an off period",
            a.time
        );
    }
}

#[test]
fn nanoseconds_round_half_away_from_zero_as_round_does() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let edges = [
        0.0,
        -0.0,
        0.5,
        1.5,
        2.5,
        0.49999999999999994,
        4503599627370495.5,
        4503599627370496.0,
        4503599627370497.0,
        9007199254740993.0,
        1e19,
        1e300,
        f64::INFINITY,
        -1.0,
        -0.5,
        f64::NAN,
    ];
    let random = (0..100_000).map(|i| {
        let u: f64 = rng.random();
        // Mostly small gaps with halves among them, then ever larger ones.
        if i % 3 == 0 {
            (u * 1e6).floor() + 0.5
        } else {
            u * 10f64.powi(i % 20)
        }
    });
    for x in edges.into_iter().chain(random) {
        assert_eq!(round_ns(x), x.round() as u64, "{x:e}");
    }
}
