//! The network between simulated nodes, after LogGP (Alexandrov, Ionescu,
//! Schauser and Scheiman, 1995) as LogGOPSim (Hoefler, Schneider and
//! Lumsdaine, 2010) simulates it: what an update reads of a neighbour owned
//! on another node is that neighbour's edge as it was when it left, once it
//! has arrived; not the edge as it is now. Asynchronous methods exist
//! because of these delays.
//!
//! * **Parameters** (nanoseconds): L, the latency (`sim_node_latency_ns`);
//!   o, a message's CPU overhead at each end (`sim_node_overhead_ns`); g,
//!   the least gap between two messages a thread sends (`sim_node_gap_ns`);
//!   G, the gap per byte (`sim_node_byte_ns`). LogGOPSim's defaults are
//!   L = 2500, o = 1500, g = 1000, G = 6 (with O = 0 and S = 65535: no
//!   overhead per byte, and no rendezvous for messages of an edge's size);
//!   braid's are an InfiniBand-class network's L = 2000 and G = 0.1
//!   (10 GB/s) with o = g = 0, which keeps the costs the model charged
//!   before o and g existed.
//! * **A send.** An update that ends at `p` on a thread sends each of its
//!   edges whose reader is owned on another node (owners as they are at
//!   `p`). The thread starts a message of `k` bytes at `s = max(p, free)`,
//!   `free` being when its previous message let go of the wire
//!   (`s' + g + (k' - 1) G`); it arrives at `s + o + (k - 1) G + L + o`. An
//!   edge whose reader is on the same node arrives when it is written.
//! * **A read.** An update that starts at `t` on another node than a
//!   neighbour reads, of that neighbour's edge, the newest version that has
//!   arrived by `t` (newest: written last, whatever the order of arrival).
//!   A subdomain that moves to another node reads what has arrived there,
//!   as though its messages followed it; one that moves to its neighbour's
//!   node reads the neighbour directly.
//! * **The CPU** pays the sender's o and bytes in the update that sends
//!   (`Simulation::edge_ns`); the receiver's o is in the arrival time only,
//!   as for a message a progress engine takes in.
//! * **Not aged:** sync, whose iteration reads the version its barrier
//!   settles and pays a latency in that barrier; the update counts that
//!   ssync's staleness gate reads; runs that only count (no numbers).
//!
//! Times are integer picoseconds, so a run reproduces byte for byte.

use std::collections::VecDeque;

use super::board::Board;
use super::clock::{after, step};
use crate::engine::SimCosts;
use crate::policy::Learns;
use crate::problem::{Neighbour, Problem, Side};
use crate::subdomain::{Aged, Subdomain};

/// One version of an edge on its way: when it arrives, and
/// [`Subdomain::export_edge`]'s words (count, then the values' bits).
#[derive(Debug)]
struct Sent {
    arrives: u64,
    words: Vec<u64>,
}

/// LogGP's parameters, in nanoseconds, and what a message costs in them.
#[derive(Debug, Clone, Copy)]
struct LogGp {
    latency: f64,
    overhead: f64,
    gap: f64,
    per_byte: f64,
}

impl LogGp {
    fn of(costs: &SimCosts) -> Self {
        LogGp {
            latency: costs.node_latency_ns,
            overhead: costs.node_overhead_ns,
            gap: costs.node_gap_ns,
            per_byte: costs.node_byte_ns,
        }
    }

    /// The time a message of `bytes` holds the wire after its first byte:
    /// `(bytes - 1) G`.
    fn wire_ns(self, bytes: f64) -> f64 {
        (bytes - 1.0).max(0.0) * self.per_byte
    }

    /// From the start of a send of `bytes` to its arrival:
    /// `o + (bytes - 1) G + L + o`.
    fn flight_ns(self, bytes: f64) -> f64 {
        2.0 * self.overhead + self.wire_ns(bytes) + self.latency
    }

    /// From the start of a send of `bytes` to when its sender may start the
    /// next: `g + (bytes - 1) G`.
    fn next_send_ns(self, bytes: f64) -> f64 {
        self.gap + self.wire_ns(bytes)
    }
}

/// Every edge in flight between nodes, and each thread's wire.
#[derive(Debug)]
pub(super) struct Network {
    net: LogGp,
    /// Per subdomain and side (`Side::index`): the versions of its edge on
    /// that side that a reader may still read, in the order written. The
    /// first is the newest to have arrived when last looked at; those after
    /// it are in flight.
    sent: Vec<[VecDeque<Sent>; 4]>,
    /// When each thread's next message may start.
    free: Vec<u64>,
    /// Buffers of versions no reader can read any more, for reuse.
    spare: Vec<Vec<u64>>,
}

impl Network {
    /// Every edge as `subs` have published it, arrived everywhere.
    pub(super) fn new(costs: &SimCosts, problem: &Problem, subs: &[Subdomain]) -> Self {
        let sent = problem
            .subs
            .iter()
            .map(|g| {
                Side::ALL.map(|side| {
                    let mut q = VecDeque::new();
                    if let Neighbour::Sub(_) = g.neighbour(side) {
                        let mut words = Vec::new();
                        subs[g.id].export_edge(side, &mut words);
                        q.push_back(Sent { arrives: 0, words });
                    }
                    q
                })
            })
            .collect();
        Network {
            net: LogGp::of(costs),
            sent,
            free: vec![0; problem.threads],
            spare: Vec::new(),
        }
    }

    /// Subdomain `s` has just been written by thread `t` at `now`: each of
    /// its edges leaves for its reader.
    pub(super) fn send(&mut self, s: usize, t: usize, now: u64, subs: &[Subdomain], board: &Board) {
        let here = board.nodes[t];
        let g = &subs[s].geom;
        for side in Side::ALL {
            let Neighbour::Sub(n) = g.neighbour(side) else {
                continue;
            };
            let mut words = self.spare.pop().unwrap_or_default();
            words.clear();
            subs[s].export_edge(side, &mut words);
            let arrives = if board.nodes[board.owners[n]] == here {
                now
            } else {
                let bytes = (8 * (words.len() - 1)) as f64;
                let start = self.free[t].max(now);
                self.free[t] = after(start, step(self.net.next_send_ns(bytes) * 1e3));
                after(start, step(self.net.flight_ns(bytes) * 1e3))
            };
            let q = &mut self.sent[s][side.index()];
            q.push_back(Sent { arrives, words });
            drop_superseded(q, now, &mut self.spare);
        }
    }

    /// What subdomain `s`, updated at `now` by a thread on node `here`,
    /// reads of each neighbour owned on another node: that neighbour's
    /// edge as the newest version to arrive by `now`.
    pub(super) fn aged(
        &mut self,
        s: usize,
        here: usize,
        now: u64,
        subs: &[Subdomain],
        board: &Board,
    ) -> Aged<'_> {
        let g = &subs[s].geom;
        let mut from = [None; 4];
        for side in Side::ALL {
            if let Neighbour::Sub(n) = g.neighbour(side)
                && board.nodes[board.owners[n]] != here
            {
                let q = &mut self.sent[n][side.opposite().index()];
                drop_superseded(q, now, &mut self.spare);
                from[side.index()] = Some(n);
            }
        }
        let mut aged: Aged<'_> = [None; 4];
        for side in Side::ALL {
            if let Some(n) = from[side.index()] {
                let q = &self.sent[n][side.opposite().index()];
                aged[side.index()] = q.front().map(|v| &v.words[1..]);
            }
        }
        aged
    }
}

/// Drops the versions that a newer one, arrived by `now`, supersedes for
/// every read from `now` on (the clock only moves forward), so that the
/// first is the newest arrived.
fn drop_superseded(q: &mut VecDeque<Sent>, now: u64, spare: &mut Vec<Vec<u64>>) {
    let Some(newest) = q.iter().rposition(|v| v.arrives <= now) else {
        return;
    };
    for v in q.drain(..newest) {
        spare.push(v.words);
    }
}

/// What a balancer call that balances all `threads` together costs the
/// calling thread across `nodes` nodes, on top of `sim_balancer_ns`, in
/// picoseconds (0 on one node): the messages that tell it what it decides
/// on, for a strategy that learns as `learns`. A message of `k` bytes
/// takes `L + 2o + (k - 1) G`, and a thread's sends start `g + (k - 1) G`
/// apart, as for the edges.
///
/// * [`Learns::Everything`]: an all-gather of the view by recursive
///   doubling, `ceil(log2 nodes)` steps, step `i` sending `2^(i-1)` of the
///   nodes' shares of the view (the last step what is left, `nodes - 1`
///   shares in all): 24 bytes per subdomain (count, owner, load) and per
///   thread (updates, busy and CPU time).
/// * [`Learns::Gossip`], as the runtime across ranks decides apart
///   (`runtime/wire.rs`): the group's mean and longest sweep by an
///   all-reduce of 32 bytes (`ceil(log2 nodes)` steps); then the inform
///   rounds (0: enough to reach every thread), in each of which a thread
///   sends `fanout` letters naming the underloaded threads it knows (32
///   bytes each: id, sweep time, speed, subdomains held; 16 more for the
///   letter): after `r` rounds `(fanout + 1)^r` of them, at most half the
///   threads; then the moves, announced to every node (each decided its
///   own donors' only) by an all-reduce of a count per node and, if any
///   moved, one of 24 bytes per move.
///
/// For the global strategies this is a model of an all-gather; the runtime
/// across ranks sums the view into an exchange's all-reduce instead.
pub(super) fn call_ps(
    learns: Learns,
    costs: &SimCosts,
    nodes: usize,
    threads: usize,
    subdomains: usize,
    moves: usize,
) -> u64 {
    if nodes <= 1 {
        return 0;
    }
    let net = LogGp::of(costs);
    let steps = f64::from(nodes.next_power_of_two().trailing_zeros());
    let ns = match learns {
        Learns::Everything => {
            // Step `i` sends `2^i` shares, or what is left to send on a
            // count of nodes that is not a power of two (Bruck's
            // all-gather): `nodes - 1` shares in all. Until 2026-11-29 the
            // last step sent `2^i` too, as if the nodes were padded to the
            // next power of two (10,000 nodes cost what 16,384 did).
            let share = 24.0 * (subdomains + threads) as f64 / nodes as f64;
            (0..steps as u32)
                .map(|i| {
                    let sent = (1usize << i).min(nodes - (1usize << i));
                    net.flight_ns(share * sent as f64)
                })
                .sum::<f64>()
        }
        Learns::Gossip { fanout, rounds } => {
            let rounds = match rounds {
                0 => crate::policy::rounds_to_cover(threads, fanout),
                r => r,
            };
            let means = steps * net.flight_ns(32.0);
            let (mut known, mut inform) = (1.0f64, 0.0);
            for _ in 0..rounds {
                let bytes = 16.0 + 32.0 * known.min(threads as f64 / 2.0).max(1.0);
                // The last of its `fanout` sends starts `fanout - 1` gaps on.
                inform += (fanout - 1) as f64 * net.next_send_ns(bytes) + net.flight_ns(bytes);
                known *= (fanout + 1) as f64;
            }
            let mut announce = steps * net.flight_ns(8.0 * nodes as f64);
            if moves > 0 {
                announce += steps * net.flight_ns(24.0 * moves as f64);
            }
            means + inform + announce
        }
    };
    step(ns * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> SimCosts {
        crate::plan::sim_costs(&crate::config::Config::default())
    }

    #[test]
    fn a_call_learns_for_free_on_one_node_and_pays_loggp_messages_across_nodes() {
        let c = costs();
        for learns in [
            Learns::Everything,
            Learns::Gossip {
                fanout: 2,
                rounds: 0,
            },
        ] {
            assert_eq!(call_ps(learns, &c, 1, 36, 72, 5), 0);
        }
        // Two nodes, 36 threads and 72 subdomains: one step of an
        // all-gather, each node sending its half of 24 x 108 bytes.
        let half = 24.0 * 108.0 / 2.0;
        let one = c.node_latency_ns + 2.0 * c.node_overhead_ns + (half - 1.0) * c.node_byte_ns;
        assert_eq!(
            call_ps(Learns::Everything, &c, 2, 36, 72, 5),
            step(one * 1e3)
        );
    }

    #[test]
    fn an_all_gather_over_nodes_short_of_a_power_of_two_sends_what_they_hold() {
        let c = crate::plan::sim_costs(&crate::config::Config::default());
        let at = |nodes: usize| {
            let threads = 64 * nodes;
            call_ps(Learns::Everything, &c, nodes, threads, 4 * threads, 0) as f64
        };
        // 10,000 nodes hold 61% of 16,384's view, in as many steps: padded
        // to the power of two they cost the same.
        let (ten, pow) = (at(10_000), at(16_384));
        assert!(ten < 0.75 * pow, "{ten} against {pow}");
        assert!(ten > 0.5 * pow, "{ten} against {pow}");
    }

    #[test]
    fn gathering_the_view_grows_with_the_nodes_and_gossip_does_not() {
        // 2 x 18 cores per node, two subdomains per thread.
        let c = costs();
        let at =
            |learns, nodes: usize| call_ps(learns, &c, nodes, 36 * nodes, 72 * nodes, 10) as f64;
        let gossip = Learns::Gossip {
            fanout: 2,
            rounds: 0,
        };
        let (all_64, all_4096) = (at(Learns::Everything, 64), at(Learns::Everything, 4096));
        let (gossip_64, gossip_4096) = (at(gossip, 64), at(gossip, 4096));
        // The view grows with the nodes: so does every node's gathering of it.
        assert!(all_4096 > 30.0 * all_64, "{all_64} -> {all_4096} ps");
        // Gossip's rounds grow with the log of the threads, its messages
        // with what a thread can learn in them.
        assert!(
            gossip_4096 < 30.0 * gossip_64,
            "{gossip_64} -> {gossip_4096} ps"
        );
        assert!(
            gossip_4096 < all_4096,
            "{gossip_4096} against {all_4096} ps"
        );
        // Gossip's moves are announced; the view's are computed everywhere.
        let moved = |learns, moves| call_ps(learns, &c, 64, 2304, 4608, moves);
        assert!(moved(gossip, 100) > moved(gossip, 10));
        assert_eq!(
            moved(Learns::Everything, 100),
            moved(Learns::Everything, 10)
        );
    }
}
