//! The machine as braid sees it: sockets and their cores, how that was
//! learned, and the placement of worker threads on cores.
//!
//! Detection order: hwloc (with the `hwloc` feature), Linux sysfs, and a
//! single-socket fallback. Only cores this process may run on (its affinity
//! mask) are kept. `sockets = N` replaces the detected sockets by N virtual
//! ones of consecutive cores, so split/hybrid balancing can be exercised on
//! any machine.

use std::fmt;

use serde::Serialize;

use crate::config::AutoOr;

/// How the socket layout was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Hwloc,
    Sysfs,
    /// Nothing could be read: every core on one socket.
    Fallback,
    /// `sockets = N` split the cores into N virtual sockets.
    Virtual,
    /// A simulated machine (`sim_topology`).
    Synthetic,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Socket {
    /// OS core (PU) ids.
    pub cores: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    pub source: Source,
    pub sockets: Vec<Socket>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("`cores`: core {core} is not available to this process (available: {available})")]
    UnknownCore { core: usize, available: String },
    #[error("`sockets`: cannot split {cores} core(s) into {sockets} virtual sockets")]
    TooManySockets { sockets: usize, cores: usize },
    #[error(
        "`threads`: {threads} threads but only {cores} core(s) selected; \
         set oversubscribe = true to pin several threads per core"
    )]
    Oversubscribed { threads: usize, cores: usize },
}

/// Where each worker thread runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// Core id of each thread.
    pub cores: Vec<usize>,
    /// Socket index (into `Topology::sockets`) of each thread.
    pub sockets: Vec<usize>,
}

impl Placement {
    pub fn threads(&self) -> usize {
        self.cores.len()
    }
}

impl Topology {
    /// The machine this process runs on.
    pub fn detect() -> Topology {
        let allowed = allowed_cores();
        let detected = detect_hwloc().or_else(detect_sysfs);
        let topo = match detected {
            Some(t) => t.restricted_to(&allowed),
            None => None,
        };
        topo.unwrap_or_else(|| Topology {
            source: Source::Fallback,
            sockets: vec![Socket { cores: allowed }],
        })
    }

    /// A layout given by hand: `cores_per_socket[s]` cores on socket `s`,
    /// numbered consecutively.
    pub fn uniform(sockets: usize, cores_per_socket: usize) -> Topology {
        Topology {
            source: Source::Virtual,
            sockets: (0..sockets)
                .map(|s| Socket {
                    cores: (s * cores_per_socket..(s + 1) * cores_per_socket).collect(),
                })
                .collect(),
        }
    }

    /// The simulator's machine.
    pub fn synthetic(t: crate::config::SyntheticTopology) -> Topology {
        Topology {
            source: Source::Synthetic,
            ..Topology::uniform(t.sockets, t.cores_per_socket)
        }
    }

    pub fn cores(&self) -> Vec<usize> {
        self.sockets.iter().flat_map(|s| s.cores.clone()).collect()
    }

    /// Keeps only `allowed` cores, dropping empty sockets; `None` if none is left.
    fn restricted_to(self, allowed: &[usize]) -> Option<Topology> {
        let sockets: Vec<Socket> = self
            .sockets
            .into_iter()
            .map(|s| Socket {
                cores: s
                    .cores
                    .into_iter()
                    .filter(|c| allowed.contains(c))
                    .collect(),
            })
            .filter(|s| !s.cores.is_empty())
            .collect();
        (!sockets.is_empty()).then_some(Topology {
            source: self.source,
            sockets,
        })
    }

    /// Applies the `cores` and `sockets` settings.
    pub fn select(
        &self,
        cores: &AutoOr<Vec<usize>>,
        sockets: &AutoOr<usize>,
    ) -> Result<Topology, TopologyError> {
        let mut topo = self.clone();
        if let AutoOr::Value(list) = cores {
            let available = self.cores();
            if let Some(&core) = list.iter().find(|c| !available.contains(c)) {
                return Err(TopologyError::UnknownCore {
                    core,
                    available: format_list(&available),
                });
            }
            // Keep the order the user gave, grouped by detected socket.
            topo.sockets = self
                .sockets
                .iter()
                .map(|s| Socket {
                    cores: list
                        .iter()
                        .copied()
                        .filter(|c| s.cores.contains(c))
                        .collect(),
                })
                .filter(|s| !s.cores.is_empty())
                .collect();
        }
        if let AutoOr::Value(n) = *sockets {
            let all = topo.cores();
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

    /// Pins `threads` threads: socket by socket, one per core; oversubscribed,
    /// consecutive threads share a core so that they share its socket too.
    pub fn place(&self, threads: usize, oversubscribe: bool) -> Result<Placement, TopologyError> {
        let cores: Vec<(usize, usize)> = self
            .sockets
            .iter()
            .enumerate()
            .flat_map(|(s, sock)| sock.cores.iter().map(move |&c| (c, s)))
            .collect();
        if threads > cores.len() && !oversubscribe {
            return Err(TopologyError::Oversubscribed {
                threads,
                cores: cores.len(),
            });
        }
        let slot = |t: usize| {
            if threads <= cores.len() {
                cores[t]
            } else {
                cores[t * cores.len() / threads]
            }
        };
        Ok(Placement {
            cores: (0..threads).map(|t| slot(t).0).collect(),
            sockets: (0..threads).map(|t| slot(t).1).collect(),
        })
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.source {
            Source::Hwloc => "detected by hwloc",
            Source::Sysfs => "read from Linux sysfs",
            Source::Fallback => "not detectable: all cores on one socket",
            Source::Virtual => "virtual split (sockets = N)",
            Source::Synthetic => "synthetic (sim_topology)",
        };
        writeln!(
            f,
            "{} socket(s), {} core(s), {how}",
            self.sockets.len(),
            self.cores().len()
        )?;
        for (i, s) in self.sockets.iter().enumerate() {
            writeln!(f, "  socket {i}: cores {}", format_list(&s.cores))?;
        }
        Ok(())
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

/// Cores in this process's affinity mask.
fn allowed_cores() -> Vec<usize> {
    let mut ids: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    if ids.is_empty() {
        ids = (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    ids.sort_unstable();
    ids
}

fn detect_sysfs() -> Option<Topology> {
    let mut by_package: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
    for entry in std::fs::read_dir("/sys/devices/system/cpu").ok()? {
        let name = entry.ok()?.file_name().into_string().ok()?;
        let Some(id) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let path = format!("/sys/devices/system/cpu/{name}/topology/physical_package_id");
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // offline cores have no topology directory
        };
        let package = text.trim().parse().ok()?;
        by_package.entry(package).or_default().push(id);
    }
    if by_package.is_empty() {
        return None;
    }
    Some(Topology {
        source: Source::Sysfs,
        sockets: by_package
            .into_values()
            .map(|mut cores| {
                cores.sort_unstable();
                Socket { cores }
            })
            .collect(),
    })
}

#[cfg(feature = "hwloc")]
fn detect_hwloc() -> Option<Topology> {
    use hwlocality::object::types::ObjectType;
    let topo = hwlocality::Topology::new().ok()?;
    let sockets: Vec<Socket> = topo
        .objects_with_type(ObjectType::Package)
        .filter_map(|p| {
            let set = p.cpuset()?;
            let cores: Vec<usize> = set.iter_set().map(usize::from).collect();
            (!cores.is_empty()).then_some(Socket { cores })
        })
        .collect();
    (!sockets.is_empty()).then_some(Topology {
        source: Source::Hwloc,
        sockets,
    })
}

#[cfg(not(feature = "hwloc"))]
fn detect_hwloc() -> Option<Topology> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_finds_at_least_one_core() {
        let t = Topology::detect();
        assert!(!t.cores().is_empty());
        assert!(t.sockets.iter().all(|s| !s.cores.is_empty()));
    }

    #[test]
    fn virtual_sockets_split_consecutive_cores() {
        let t = Topology::uniform(1, 6);
        let v = t.select(&AutoOr::Auto, &AutoOr::Value(2)).unwrap();
        assert_eq!(v.source, Source::Virtual);
        assert_eq!(v.sockets[0].cores, vec![0, 1, 2]);
        assert_eq!(v.sockets[1].cores, vec![3, 4, 5]);
        assert!(t.select(&AutoOr::Auto, &AutoOr::Value(7)).is_err());
    }

    #[test]
    fn a_core_list_must_name_available_cores() {
        let t = Topology::uniform(2, 2);
        let sel = t.select(&AutoOr::Value(vec![3, 0]), &AutoOr::Auto).unwrap();
        assert_eq!(sel.cores(), vec![0, 3]);
        let e = t
            .select(&AutoOr::Value(vec![9]), &AutoOr::Auto)
            .unwrap_err();
        assert!(e.to_string().contains("core 9"));
    }

    #[test]
    fn placement_refuses_oversubscription_unless_allowed() {
        let t = Topology::uniform(2, 1);
        assert!(matches!(
            t.place(3, false),
            Err(TopologyError::Oversubscribed { .. })
        ));
        let p = t.place(4, true).unwrap();
        assert_eq!(p.cores, vec![0, 0, 1, 1]);
        assert_eq!(p.sockets, vec![0, 0, 1, 1]);
        let p = t.place(2, false).unwrap();
        assert_eq!(p.sockets, vec![0, 1]);
    }

    #[test]
    fn core_lists_print_as_ranges() {
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_list(&[]), "");
    }
}
