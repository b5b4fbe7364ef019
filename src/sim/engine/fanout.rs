//! One arrival stream generated once, by the calling thread, and fanned out chunk by
//! chunk to worker threads: a run's groups when there are several, and a sweep's
//! workers. Generating a stream (drawing clients, parsing a trace) costs as much as a
//! few algorithms' decisions, so doing it once instead of once per worker saves that
//! much CPU. The stream is deterministic, so who generates it changes no result.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};

use super::group::{CHUNK, next_chunk};
use crate::sim::traffic::Arrival;
use crate::sim::{ArrivalStream, KeyTable, Scenario, ScenarioError};

/// Chunks a worker may fall behind the producer before the producer waits.
pub(super) const SLACK: usize = 16;

/// A chunk of the stream, `(seq, arrival)` in order, shared by every worker.
pub(super) type Chunk = Arc<[(u64, Arrival)]>;

/// What a worker receives: a chunk of the stream, or word that the stream is complete.
#[derive(Clone)]
pub(super) enum Message {
    Chunk {
        arrivals: Chunk,
        /// Names of the keys first seen in this chunk, in id order: each worker interns
        /// them into its own table, so its ids are the stream's.
        new_keys: Arc<[String]>,
    },
    End,
}

/// Generates `scenario`'s stream once and sends each chunk to every worker, then
/// [`Message::End`]. On an error the senders are dropped without `End`: the workers
/// see the stream stop, and the caller reports the error.
pub(super) fn produce(
    scenario: &Scenario,
    senders: Vec<SyncSender<Message>>,
) -> Result<(), ScenarioError> {
    let mut stream = ArrivalStream::new(scenario)?;
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut known = 0;
    loop {
        next_chunk(&mut stream, &mut chunk)?;
        let message = if chunk.is_empty() {
            Message::End
        } else {
            let keys = stream.keys();
            let new_keys = (known..keys.len())
                .map(|id| keys.name(id as u32).to_string())
                .collect();
            known = keys.len();
            Message::Chunk {
                arrivals: Arc::from(chunk.as_slice()),
                new_keys,
            }
        };
        for tx in &senders {
            // A worker that stopped has panicked; joining it reports that.
            let _ = tx.send(message.clone());
        }
        if matches!(message, Message::End) {
            return Ok(());
        }
    }
}

/// A worker's end of the fan-out: the chunks as they come, and its own copy of the
/// stream's key table.
pub(super) struct Received {
    rx: Receiver<Message>,
    keys: KeyTable,
}

/// The producer stopped before the end of the stream (its error is the run's).
pub(super) struct Stopped;

impl Received {
    pub(super) fn new(rx: Receiver<Message>) -> Received {
        Received {
            rx,
            keys: KeyTable::default(),
        }
    }

    /// The next chunk, with the keys it introduced added to [`keys`](Self::keys);
    /// `None` once the stream is complete.
    pub(super) fn next(&mut self) -> Result<Option<Chunk>, Stopped> {
        match self.rx.recv() {
            Ok(Message::Chunk { arrivals, new_keys }) => {
                for name in new_keys.iter() {
                    self.keys.intern(name);
                }
                Ok(Some(arrivals))
            }
            Ok(Message::End) => Ok(None),
            Err(_) => Err(Stopped),
        }
    }

    /// The keys seen so far.
    pub(super) fn keys(&self) -> &KeyTable {
        &self.keys
    }

    /// The key table, once the stream is over.
    pub(super) fn into_keys(self) -> KeyTable {
        self.keys
    }
}
