//! Which arrivals a filtered stream yields ([`ArrivalStream::only`]): a source's
//! clients picked out by the draws that pick them, or a trace's keys by name.
//!
//! [`ArrivalStream::only`]: super::ArrivalStream::only

use super::KeyTable;
use super::keys::{KeyPicker, Pick};
use crate::sim::scenario::{KeySpec, TrafficKind, TrafficSpec};

/// Which of a source's arrivals a stream yields (see [`ArrivalStream::only`]).
pub(super) enum Keep {
    /// Every one, each client interned on first sight.
    All,
    /// Those of these clients: `(the draws that pick it, key id)`, for a source that
    /// numbers its clients.
    Clients(Vec<(Pick, u32)>),
    /// Those of these keys: `(name, key id)`, for a trace, whose rows name them.
    Names(Vec<(String, u32)>),
}

impl Keep {
    /// What a stream of the keys `wanted` (ids in `keys`) keeps of the source `spec`,
    /// whose clients `picker` draws.
    pub(super) fn new(
        spec: &TrafficSpec,
        picker: &KeyPicker,
        keys: &KeyTable,
        wanted: &[u32],
    ) -> Keep {
        let named = wanted.iter().map(|&id| (keys.name(id), id));
        match spec.kind {
            TrafficKind::Trace { .. } => {
                Keep::Names(named.map(|(n, id)| (n.to_string(), id)).collect())
            }
            _ => Keep::Clients(
                named
                    .filter_map(|(name, id)| {
                        Some((picker.pick_of(client_index(&spec.keys, name)?), id))
                    })
                    .collect(),
            ),
        }
    }

    /// True when this keeps none of the source's arrivals.
    pub(super) fn is_nothing(&self) -> bool {
        match self {
            Keep::All => false,
            Keep::Clients(kept) => kept.is_empty(),
            Keep::Names(kept) => kept.is_empty(),
        }
    }

    /// The key id of a source's client `index` that this keeps, if it keeps it.
    pub(super) fn client(&self, index: u32) -> Option<u32> {
        match self {
            Keep::Clients(kept) => kept.iter().find(|k| k.0.index == index).map(|k| k.1),
            Keep::All | Keep::Names(_) => None,
        }
    }

    /// The key id of the trace key `name` that this keeps, if it keeps it.
    pub(super) fn named(&self, name: &str) -> Option<u32> {
        match self {
            Keep::Names(kept) => kept.iter().find(|k| k.0 == name).map(|k| k.1),
            Keep::All | Keep::Clients(_) => None,
        }
    }
}

/// Which of the source `keys`' clients is called `name` (`{prefix}-{index}`), if any.
pub(super) fn client_index(keys: &KeySpec, name: &str) -> Option<u32> {
    let digits = name.strip_prefix(keys.prefix.as_str())?.strip_prefix('-')?;
    let index: u32 = digits.parse().ok()?;
    // `parse` also takes "+7" and "007", which no client is called.
    (index < keys.count.max(1) && index.to_string() == digits).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a client's own name selects it: `{prefix}-{index}` with the index written
    /// as the stream writes it, below the source's count, under its own prefix.
    #[test]
    fn a_client_is_known_by_its_exact_name_only() {
        let spec = KeySpec {
            count: 20,
            popularity: crate::sim::Popularity::Uniform,
            prefix: "a".into(),
        };
        for (name, index) in [("a-0", Some(0)), ("a-7", Some(7)), ("a-19", Some(19))] {
            assert_eq!(client_index(&spec, name), index, "{name}");
        }
        for name in [
            "a-20", "a-07", "a-+7", "a-", "a7", "a-1-5", "b-7", "aa-7", "", "a--7",
        ] {
            assert_eq!(client_index(&spec, name), None, "{name}");
        }
    }
}
