//! The machine as braid sees it: sockets and their cores, how that was
//! learned, and the placement of worker threads on cores.
//!
//! A socket holds physical cores, and a core holds the logical CPUs (PUs,
//! hyperthreads) it runs. Threads are placed one per physical core, sockets
//! in order, and only then on a core's further PUs: two threads never share
//! a core while a core is free.
//!
//! Detection order: hwloc (with the `hwloc` feature), Linux sysfs (each
//! CPU's `physical_package_id` and `core_id`), and a single-socket fallback.
//! Only PUs this process may run on (its affinity mask) are kept, except
//! when `BRAID_SYSFS_ROOT` names a captured sysfs tree (standing in for
//! `/sys`, e.g. a copy of a node's `/sys/devices/system/cpu` under
//! `ROOT/devices/system/cpu`): that tree is then the whole machine. `cores =
//! LIST` picks logical CPUs by hand, each its own core. `sockets = N`
//! replaces the detected sockets by N virtual ones of consecutive cores, so
//! split/hybrid balancing can be exercised on any machine.

mod detect;
mod placement;
mod synthetic;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use detect::allowed_cores;
pub(crate) use detect::{CPU_SET_SIZE, usable_cpus};
pub use placement::Placement;
pub use synthetic::{SimTopology, SyntheticTopology};

/// How the socket layout was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// hwloc's Package and Core objects (feature `hwloc`).
    Hwloc,
    /// Linux sysfs (or a captured tree under `BRAID_SYSFS_ROOT`).
    Sysfs,
    /// Nothing could be read: every core on one socket.
    Fallback,
    /// `sockets = N` split the cores into N virtual sockets.
    Virtual,
    /// A simulated machine (`sim_topology`).
    Synthetic,
    /// A simulated machine read from hwloc's XML (`sim_topology = xml:FILE`).
    Xml,
}

/// One socket (package).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Socket {
    /// Physical cores, each as the OS ids of its logical CPUs (PUs),
    /// ascending. A CPU picked by hand (`cores = ...`) is a core of its own.
    pub cores: Vec<Vec<usize>>,
}

impl Socket {
    /// One PU per core, as on a machine without hyperthreads.
    fn single(pus: impl IntoIterator<Item = usize>) -> Socket {
        Socket {
            cores: pus.into_iter().map(|p| vec![p]).collect(),
        }
    }
}

/// A machine: its sockets, their cores and each core's logical CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// How it was learned.
    pub source: Source,
    /// Its sockets, in order.
    pub sockets: Vec<Socket>,
}

/// Cores, sockets or threads a machine cannot give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A CPU named in `cores` that this process may not use.
    #[error("`cores`: CPU {core} is not available to this process (available: {available})")]
    UnknownCore {
        /// The CPU.
        core: usize,
        /// The CPUs it may use.
        available: String,
    },
    /// More virtual sockets than cores.
    #[error("`sockets`: cannot split {cores} core(s) into {sockets} virtual sockets")]
    TooManySockets {
        /// Asked for.
        sockets: usize,
        /// Cores selected.
        cores: usize,
    },
    /// An hwloc XML export that cannot be read.
    #[error("`sim_topology`: {file}: {message}")]
    Xml {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
    /// `BRAID_SYSFS_ROOT` names no usable captured tree.
    #[error(
        "BRAID_SYSFS_ROOT={}: not a usable sysfs tree: {problem} (unset the variable to use \
         this machine's own)",
        root.display()
    )]
    SysfsRoot {
        /// The variable's value.
        root: PathBuf,
        /// What is missing or wrong.
        problem: String,
    },
    /// A CPU id that pinning cannot name.
    #[error("CPU {cpu} cannot be pinned: a cpu_set_t holds CPUs 0 to {}", limit - 1)]
    CpuId {
        /// The CPU.
        cpu: usize,
        /// The first id out of reach.
        limit: usize,
    },
    /// A real run of more threads than this process may run on.
    #[error(
        "`threads`: {threads} threads but this process may run on only {usable} CPU(s) (the \
         topology names more); set oversubscribe = true to share them (`braid topology \
         --oversubscribe`)"
    )]
    MoreThanUsable {
        /// Asked for.
        threads: usize,
        /// CPUs in this process's affinity mask.
        usable: usize,
    },
    /// More threads than CPUs, without `oversubscribe`.
    #[error(
        "`threads`: {threads} threads but only {cores} logical CPU(s) selected; \
         set oversubscribe = true to pin several threads per CPU (`braid topology \
         --oversubscribe`)"
    )]
    Oversubscribed {
        /// Asked for.
        threads: usize,
        /// CPUs selected.
        cores: usize,
    },
}

impl Topology {
    /// A layout given by hand: `cores_per_socket[s]` cores on socket `s`,
    /// numbered consecutively.
    pub fn uniform(sockets: usize, cores_per_socket: usize) -> Topology {
        Topology {
            source: Source::Virtual,
            sockets: (0..sockets)
                .map(|s| Socket::single(s * cores_per_socket..(s + 1) * cores_per_socket))
                .collect(),
        }
    }

    /// Every logical CPU (PU), socket by socket, core by core.
    pub fn cores(&self) -> Vec<usize> {
        self.sockets
            .iter()
            .flat_map(|s| s.cores.iter().flatten().copied())
            .collect()
    }

    /// How many physical cores: the default thread count.
    pub fn physical_cores(&self) -> usize {
        self.sockets.iter().map(|s| s.cores.len()).sum()
    }

    /// Keeps only `allowed` PUs, dropping empty cores and sockets; `None` if
    /// none is left.
    pub fn restricted_to(self, allowed: &[usize]) -> Option<Topology> {
        let sockets: Vec<Socket> = self
            .sockets
            .into_iter()
            .map(|s| Socket {
                cores: s
                    .cores
                    .into_iter()
                    .map(|pus| pus.into_iter().filter(|p| allowed.contains(p)).collect())
                    .filter(|pus: &Vec<usize>| !pus.is_empty())
                    .collect(),
            })
            .filter(|s| !s.cores.is_empty())
            .collect();
        (!sockets.is_empty()).then_some(Topology {
            source: self.source,
            sockets,
        })
    }

    /// Applies the `cores` and `sockets` settings (`None` = `auto`).
    pub fn select(
        &self,
        cores: Option<&[usize]>,
        sockets: Option<usize>,
    ) -> Result<Topology, TopologyError> {
        let mut topo = self.clone();
        if let Some(list) = cores {
            let available = self.cores();
            if let Some(&core) = list.iter().find(|c| !available.contains(c)) {
                return Err(TopologyError::UnknownCore {
                    core,
                    available: format_list(&available),
                });
            }
            // Keep the order the user gave, grouped by detected socket; each
            // named CPU is a core of its own.
            topo.sockets = self
                .sockets
                .iter()
                .map(|s| {
                    let on_socket = |c: &usize| s.cores.iter().flatten().any(|p| p == c);
                    Socket::single(list.iter().copied().filter(on_socket))
                })
                .filter(|s| !s.cores.is_empty())
                .collect();
        }
        if let Some(n) = sockets {
            let all: Vec<Vec<usize>> = topo.sockets.iter().flat_map(|s| s.cores.clone()).collect();
            if n > all.len() {
                return Err(TopologyError::TooManySockets {
                    sockets: n,
                    cores: all.len(),
                });
            }
            topo = Topology {
                source: Source::Virtual,
                sockets: (0..n)
                    .map(|s| Socket {
                        cores: all[s * all.len() / n..(s + 1) * all.len() / n].to_vec(),
                    })
                    .collect(),
            };
        }
        Ok(topo)
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.source {
            Source::Hwloc => "detected by hwloc",
            Source::Sysfs => "read from Linux sysfs",
            Source::Fallback => "not detectable: all CPUs on one socket, one per core",
            Source::Virtual => "virtual split (sockets = N) or CPUs picked by hand",
            Source::Synthetic => "synthetic (sim_topology)",
            Source::Xml => "hwloc XML (sim_topology)",
        };
        writeln!(
            f,
            "{} socket(s), {} core(s), {} logical CPU(s), {how}",
            self.sockets.len(),
            self.physical_cores(),
            self.cores().len()
        )?;
        for (i, s) in self.sockets.iter().enumerate() {
            writeln!(f, "  socket {i}: {}", format_cores(&s.cores))?;
        }
        Ok(())
    }
}

/// `cores 0-3` without hyperthreads, `4 cores (CPUs): 0+4 1+5 2+6 3+7` with.
fn format_cores(cores: &[Vec<usize>]) -> String {
    if cores.iter().all(|c| c.len() == 1) {
        let pus: Vec<usize> = cores.iter().flatten().copied().collect();
        let noun = if pus.len() == 1 { "core" } else { "cores" };
        return format!("{noun} {}", format_list(&pus));
    }
    let each: Vec<String> = cores
        .iter()
        .map(|c| c.iter().map(usize::to_string).collect::<Vec<_>>().join("+"))
        .collect();
    match cores.len() {
        1 => format!("1 core (CPUs): {}", each.join(" ")),
        n => format!("{n} cores (CPUs): {}", each.join(" ")),
    }
}

/// `0-3,6,8-9`
pub fn format_list(cores: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cores[i], cores[j])
        } else {
            cores[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests;
