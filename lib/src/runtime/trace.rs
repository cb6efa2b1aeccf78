//! The trace of a run across ranks (`trace_interval`): every subdomain's
//! count and owner, sampled at the exchanges and summed in the exchange's
//! own all-reduce, so that no rank gathers anything for it.
//!
//! # Protocol
//!
//! * **When.** A sample is due on the clock all ranks agreed at the
//!   previous exchange, the same on every rank (as the balancer's calls
//!   are, `migrate.rs`), so every rank adds its words to one exchange or
//!   none does, and the sums line up. The settle exchange at an epoch's end
//!   always samples (every rank takes part in it, after every worker has
//!   stopped), so the trace ends with the run's final counts.
//! * **What.** A rank's words: per subdomain, its count if one of this
//!   rank's threads owns it, else 0; then per subdomain its owner plus 1 if
//!   this rank owns it, else 0. Between exchanges each subdomain has
//!   exactly one owning rank (a move between ranks happens inside an
//!   exchange, after its sums: `migrate.rs`), so the sums are every count
//!   and every owner. A count is exact as an `f64` below 2^53. With loads
//!   (`--lb-data`) each subdomain's busy time follows, as its owning rank
//!   has it, then each thread's time off its core, as its rank has it.
//! * **Time.** A sample's time is that exchange's agreed clock.
//! * **Calls.** With loads, an exchange that ends with the balancer's call
//!   samples too, and its sample takes the owners the call left: a move
//!   between ranks happens only there, so no subdomain changes owner
//!   between two samples that LB data's phases lie between.

use std::ops::Range;
use std::time::Duration;

use crate::engine::TraceSample;
use crate::schedule::Sampler;
use crate::subdomain::Subdomain;

/// The samples so far, and when the next is due.
#[derive(Debug)]
pub(super) struct RankTrace {
    sampler: Sampler,
    /// Whether samples carry loads; the run's subdomains and threads.
    loads: bool,
    subdomains: usize,
    threads: usize,
    /// The clock the ranks agreed at the last exchange (ns).
    agreed_ns: u64,
    /// Whether the next exchange carries a sample.
    carrying: bool,
    pub(super) samples: Vec<TraceSample>,
}

impl RankTrace {
    pub(super) fn new(every: Duration, loads: bool, subdomains: usize, threads: usize) -> Self {
        RankTrace {
            sampler: Sampler::new(every.as_nanos() as u64),
            loads,
            subdomains,
            threads,
            agreed_ns: 0,
            carrying: false,
            samples: Vec::new(),
        }
    }

    /// Appends this rank's words to the next exchange's sums if a sample
    /// is due on the agreed clock, or, when loads are recorded, if the
    /// exchange ends with a balancer's call (`call`, the same on every
    /// rank: [`RankCalls::calls_next`](super::migrate::RankCalls)):
    /// LB data's phases are cut there. `waited_s(t)`: local thread `t`'s
    /// time off its core.
    pub(super) fn words(
        &mut self,
        subs: &[Subdomain],
        local: &Range<usize>,
        waited_s: impl Fn(usize) -> f64,
        call: bool,
        out: &mut Vec<f64>,
    ) {
        if self.sampler.due(self.agreed_ns) || (call && self.loads) {
            self.last_words(subs, local, waited_s, out);
        }
    }

    /// After a call at the exchange agreed at `now_ns` moved subdomains:
    /// the sample taken at that exchange holds the owners from now on
    /// (every rank knows every owner), so that the phase it begins has
    /// them throughout.
    pub(super) fn moved(&mut self, now_ns: u64, subs: &[Subdomain]) {
        if let Some(last) = self.samples.last_mut()
            && last.t_s == now_ns as f64 / 1e9
        {
            last.owners = subs.iter().map(Subdomain::owner).collect();
        }
    }

    /// Appends this rank's words whether or not a sample is due: for the
    /// settle exchange at an epoch's end.
    pub(super) fn last_words(
        &mut self,
        subs: &[Subdomain],
        local: &Range<usize>,
        waited_s: impl Fn(usize) -> f64,
        out: &mut Vec<f64>,
    ) {
        self.carrying = true;
        let owner = |s: &Subdomain| Some(s.owner()).filter(|o| local.contains(o));
        out.extend(
            subs.iter()
                .map(|s| owner(s).map_or(0.0, |_| s.count() as f64)),
        );
        out.extend(
            subs.iter()
                .map(|s| owner(s).map_or(0.0, |o| (o + 1) as f64)),
        );
        if self.loads {
            out.extend(subs.iter().map(|s| owner(s).map_or(0.0, |_| s.busy_s())));
            let mine = |t: usize| local.contains(&t);
            out.extend((0..self.threads).map(|t| if mine(t) { waited_s(t) } else { 0.0 }));
        }
    }

    /// After an exchange at the agreed `now_ns`, with `sums` the summed
    /// [`Self::words`] (empty if none were added).
    pub(super) fn after_exchange(&mut self, now_ns: u64, sums: &[f64]) {
        self.agreed_ns = now_ns;
        if !std::mem::take(&mut self.carrying) {
            return;
        }
        let n = self.subdomains;
        let (counts, rest) = sums.split_at(n);
        let (owners, rest) = rest.split_at(n);
        let (busy, lost) = match self.loads {
            true => rest.split_at(n),
            false => (&[][..], &[][..]),
        };
        self.samples.push(TraceSample {
            t_s: now_ns as f64 / 1e9,
            counts: counts.iter().map(|&c| c as u64).collect(),
            owners: owners
                .iter()
                .map(|&o| {
                    (o as usize)
                        .checked_sub(1)
                        .expect("every subdomain has an owning rank")
                })
                .collect(),
            busy_s: busy.to_vec(),
            work_s: Vec::new(),
            lost_s: lost.to_vec(),
        });
    }
}
