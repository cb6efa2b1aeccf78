//! Gossip across ranks without a view: [`crate::policy::Wire`] over the
//! peers, so a `gossip` call across ranks decides on what each rank's
//! threads measured and what their peers told them (`migrate.rs` calls it).
//!
//! # Protocol: a call decided apart
//!
//! A call is due at the same agreed tick on every rank (`migrate.rs`), and
//! every rank runs the same `gossip` code (`policy/gossip.rs`) on its own
//! threads' entries of its snapshot. Three kinds of message:
//!
//! 1. **The means** ([`Wire::reduce`]): one all-reduce of a sum and one of a
//!    maximum, posted together ([`Peers::reduce`]), a few words per group
//!    of threads balanced together: every rank learns each group's mean
//!    and longest sweep, and nothing else of the other ranks' threads.
//! 2. **Inform rounds** ([`Wire::post`]): the round's (teller, told) pairs
//!    are drawn from the seed, the call, the round and the teller alone, so
//!    every rank computes the same pairs and knows which ranks it sends to
//!    and which it hears from. Each rank sends one message to every rank
//!    that holds a thread one of its threads tells (empty if its tellers
//!    know nothing yet), and receives one from every rank that tells one of
//!    its threads ([`Peers::post`]: point-to-point, lengths as they come).
//!    A letter is `[told, words, (thread, time bits, speed bits, held) per
//!    word]`.
//! 3. **The moves** ([`announce`]): each rank decided only its own donors'
//!    moves. Every rank applies every move (so that all hold the same owner
//!    map, which the migration and the edge routes rest on), so the moves
//!    are summed into place: one all-reduce of each rank's number of moves,
//!    then one of the moves, each rank writing its own at its offset.
//!    Summed, the list is in rank order, and each rank's moves by donor:
//!    the order one process's call returns them in.
//!
//! What travels is each group's two numbers, the words of the underloaded
//! threads, and the moves: never a subdomain's entry of the view, and no
//! rank learns every thread's load.
//!
//! **No rank hangs.** Every collective is made by every rank in the same
//! order (the same groups, rounds and pairs everywhere, since they rest on
//! agreed numbers and the seed), and every receive has a matching send:
//! a rank sends to every rank its pairs name, letter or not. The receives
//! poll, as the exchange's do, leaving the core to the workers.
//!
//! **Checked**: that a call decided apart makes the moves of the call
//! decided whole, with every other place's entries NaN
//! (`policy/gossip.rs`); ranks as threads gossiping in a run
//! (`peers/tests.rs`); and under mpirun (`tests/integration/mpi.rs`).

use std::collections::BTreeMap;
use std::ops::Range;

use super::peers::Peers;
use crate::policy::{Move, Wire, Word};

/// The wire of one rank, `per_rank` threads to a rank.
pub(super) struct RankWire<'p> {
    pub(super) peers: &'p dyn Peers,
    pub(super) local: Range<usize>,
    pub(super) per_rank: usize,
}

impl RankWire<'_> {
    fn rank_of(&self, t: usize) -> usize {
        t / self.per_rank
    }
}

impl Wire for RankWire<'_> {
    fn here(&self, t: usize) -> bool {
        self.local.contains(&t)
    }

    fn reduce(&mut self, sums: &mut [f64], maxes: &mut [f64]) {
        self.peers.reduce(sums, maxes);
    }

    fn post(
        &mut self,
        pairs: &[(usize, usize)],
        letters: Vec<(usize, Vec<Word>)>,
    ) -> Vec<(usize, Vec<Word>)> {
        let mut out = Vec::new();
        // Every rank a pair has us tell, with or without a letter.
        let mut sends: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for &(a, b) in pairs {
            if self.here(a) && !self.here(b) {
                sends.entry(self.rank_of(b)).or_default();
            }
        }
        for (told, words) in letters {
            match self.here(told) {
                true => out.push((told, words)),
                false => encode(
                    told,
                    &words,
                    sends.get_mut(&self.rank_of(told)).expect("a pair"),
                ),
            }
        }
        let mut from: Vec<usize> = pairs
            .iter()
            .filter(|&&(a, b)| !self.here(a) && self.here(b))
            .map(|&(a, _)| self.rank_of(a))
            .collect();
        from.sort_unstable();
        from.dedup();
        let sends: Vec<(usize, Vec<u64>)> = sends.into_iter().collect();
        for message in self.peers.post(&sends, &from) {
            decode(&message, &mut out);
        }
        out
    }
}

fn encode(told: usize, words: &[Word], into: &mut Vec<u64>) {
    into.push(told as u64);
    into.push(words.len() as u64);
    for w in words {
        into.extend([
            w.thread as u64,
            w.time.to_bits(),
            w.speed.to_bits(),
            w.held as u64,
        ]);
    }
}

fn decode(message: &[u64], out: &mut Vec<(usize, Vec<Word>)>) {
    let mut at = 0;
    while at + 2 <= message.len() {
        let (told, len) = (message[at] as usize, message[at + 1] as usize);
        at += 2;
        let words = message[at..at + 4 * len]
            .chunks_exact(4)
            .map(|w| Word {
                thread: w[0] as usize,
                time: f64::from_bits(w[1]),
                speed: f64::from_bits(w[2]),
                held: w[3] as usize,
            })
            .collect();
        at += 4 * len;
        out.push((told, words));
    }
}

/// Step 3 of the protocol: every rank's moves (`mine`: this rank's), in
/// rank order, on every rank.
pub(super) fn announce(peers: &dyn Peers, mine: &[Move], ranks: usize, me: usize) -> Vec<Move> {
    let mut counts = vec![0.0; ranks];
    counts[me] = mine.len() as f64;
    peers.sum(&mut counts);
    let before: usize = counts[..me].iter().map(|&c| c as usize).sum();
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    if total == 0 {
        return Vec::new();
    }
    // Subdomain and thread ids are below 2^53: exact as f64, and each
    // slot is one rank's among zeros.
    let mut words = vec![0.0; 3 * total];
    for (i, m) in mine.iter().enumerate() {
        let at = 3 * (before + i);
        words[at..at + 3].copy_from_slice(&[m.sub as f64, m.from as f64, m.to as f64]);
    }
    peers.sum(&mut words);
    words
        .chunks_exact(3)
        .map(|w| Move {
            sub: w[0] as usize,
            from: w[1] as usize,
            to: w[2] as usize,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_decode_to_what_was_encoded() {
        let w = |thread, time| Word {
            thread,
            time,
            speed: 0.5,
            held: 3,
        };
        let mut message = Vec::new();
        encode(4, &[w(1, 0.25), w(2, f64::MIN_POSITIVE)], &mut message);
        encode(9, &[], &mut message);
        let mut out = Vec::new();
        decode(&message, &mut out);
        assert_eq!(
            out,
            vec![(4, vec![w(1, 0.25), w(2, f64::MIN_POSITIVE)]), (9, vec![])]
        );
    }
}
