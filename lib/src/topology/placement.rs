//! Where worker threads run: one per physical core, sockets in order,
//! then the cores' further PUs, then (oversubscribed) several per PU.

use serde::Serialize;

use super::{Topology, TopologyError};

/// Where each worker thread runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// The logical CPU (PU) of each thread.
    pub cores: Vec<usize>,
    /// Socket index (into `Topology::sockets`) of each thread.
    pub sockets: Vec<usize>,
}

impl Placement {
    /// How many threads.
    pub fn threads(&self) -> usize {
        self.cores.len()
    }
}

impl Topology {
    /// Pins `threads` threads: one per physical core, socket by socket; then,
    /// if there are more threads than cores, on the cores' further PUs
    /// (hyperthreads), again socket by socket. Oversubscribed (more threads
    /// than PUs), consecutive threads share a PU, so that they share its
    /// socket too.
    pub fn place(&self, threads: usize, oversubscribe: bool) -> Result<Placement, TopologyError> {
        let depth = self
            .sockets
            .iter()
            .flat_map(|s| s.cores.iter().map(Vec::len))
            .max()
            .unwrap_or(0);
        // (PU, socket) in the order threads take them.
        let by_level: Vec<(usize, usize)> = (0..depth)
            .flat_map(|level| {
                self.sockets.iter().enumerate().flat_map(move |(s, sock)| {
                    sock.cores
                        .iter()
                        .filter_map(move |pus| pus.get(level).map(|&p| (p, s)))
                })
            })
            .collect();
        let pus = by_level.len();
        if threads > pus && !oversubscribe {
            return Err(TopologyError::Oversubscribed {
                threads,
                cores: pus,
            });
        }
        let slots: Vec<(usize, usize)> = if threads <= pus {
            by_level[..threads].to_vec()
        } else {
            let socket_major: Vec<(usize, usize)> = self
                .sockets
                .iter()
                .enumerate()
                .flat_map(|(s, sock)| sock.cores.iter().flatten().map(move |&p| (p, s)))
                .collect();
            (0..threads)
                .map(|t| socket_major[t * pus / threads])
                .collect()
        };
        Ok(Placement {
            cores: slots.iter().map(|s| s.0).collect(),
            sockets: slots.iter().map(|s| s.1).collect(),
        })
    }
}
