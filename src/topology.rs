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

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A synthetic machine in hwloc's synthetic syntax, e.g. `pack:2 core:18
/// pu:1` (the form `lstopo --of synthetic` writes; see
/// [`SyntheticTopology::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyntheticTopology {
    /// Nodes (braid's outermost level, `node:N`, for the simulator's runs
    /// across nodes); `sockets` counts those of all nodes.
    #[serde(default = "one")]
    pub nodes: usize,
    pub sockets: usize,
    pub cores_per_socket: usize,
    /// Hardware threads (PUs) per core.
    #[serde(default = "one")]
    pub pus_per_core: usize,
}

fn one() -> usize {
    1
}

impl std::fmt::Display for SyntheticTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.nodes > 1 {
            write!(f, "node:{} ", self.nodes)?;
        }
        write!(
            f,
            "pack:{} core:{} pu:{}",
            self.sockets / self.nodes,
            self.cores_per_socket,
            self.pus_per_core
        )
    }
}

/// The machine the simulator runs on (`sim_topology`): a synthetic
/// description, or (with the `hwloc` feature) a topology exported by
/// `lstopo --of xml`, read when the run is planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SimTopology {
    Synthetic(SyntheticTopology),
    Xml { xml: PathBuf },
}

impl std::fmt::Display for SimTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimTopology::Synthetic(t) => write!(f, "{t}"),
            SimTopology::Xml { xml } => write!(f, "xml:{}", xml.display()),
        }
    }
}

impl SyntheticTopology {
    /// Reads hwloc's synthetic syntax: whitespace-separated levels
    /// `type:count`, types case-insensitive and in hwloc's names or
    /// abbreviations (`Package`/`pack`/`socket`, `Group0`, `NUMANode`/`numa`,
    /// `L3Cache`/`l3`, `L2Cache`, `L1dCache`, `Core`, `PU`...), each
    /// optionally followed by attributes in parentheses (`(memory=...)`,
    /// `(size=...)`), and memory children in brackets
    /// (`[NUMANode(memory=...)]`), both ignored. Levels down to the package
    /// multiply into sockets, levels below it down to the core into cores per
    /// socket, levels below the core into PUs per core. Without a package
    /// level, there is one socket; without a core level, each PU is a core.
    /// braid adds one level of its own, outermost: `node:N`, N copies of the
    /// machine below (for the simulator's runs across nodes).
    /// `max_pus` bounds the product.
    ///
    /// ```
    /// use braid::topology::SyntheticTopology;
    /// let lstopo = "Package:2 [NUMANode(memory=67108864)] L3Cache:1(size=47185920) Core:18 PU:1";
    /// let a = SyntheticTopology::parse(lstopo, 4096).unwrap();
    /// assert_eq!(a, SyntheticTopology::parse("pack:2 core:18", 4096).unwrap());
    /// assert_eq!(a.to_string(), "pack:2 core:18 pu:1");
    /// assert_eq!(SyntheticTopology::parse("pack:2 core:4 pu:2", 4096).unwrap().pus_per_core, 2);
    /// let nodes = SyntheticTopology::parse("node:4 pack:2 core:18", 4096).unwrap();
    /// assert_eq!((nodes.nodes, nodes.sockets), (4, 8));
    /// assert_eq!(nodes.to_string(), "node:4 pack:2 core:18 pu:1");
    /// assert_eq!(nodes.node_of_pu(35), 0);
    /// assert_eq!(nodes.node_of_pu(36), 1);
    /// ```
    pub fn parse(text: &str, max_pus: usize) -> Result<SyntheticTopology, String> {
        let mut levels = synthetic_levels(text)?;
        if levels.is_empty() {
            return Err("no levels".into());
        }
        // braid's own outermost level: nodes, each the machine below.
        let mut nodes = 1;
        if let Some(i) = levels.iter().position(|(k, _)| k == "node") {
            if i != 0 {
                return Err("`node` must be the outermost level".into());
            }
            nodes = levels.remove(0).1;
        }
        let is = |kind: &str, names: &[&str]| names.contains(&kind);
        const PACKAGE: &[&str] = &["pack", "package", "socket"];
        const CORE: &[&str] = &["core"];
        const PU: &[&str] = &["pu"];
        let pack = levels.iter().position(|(k, _)| is(k, PACKAGE));
        let core = levels.iter().position(|(k, _)| is(k, CORE));
        let (mut sockets, mut cores, mut pus) = (1usize, 1usize, 1usize);
        for (i, (kind, n)) in levels.iter().enumerate() {
            let known = is(kind, PACKAGE)
                || is(kind, CORE)
                || is(kind, PU)
                || kind.starts_with("group")
                || kind.starts_with("numa")
                || kind == "machine"
                || kind == "die"
                || kind.starts_with('l') && kind.len() > 1 && kind.as_bytes()[1].is_ascii_digit();
            if !known {
                return Err(format!("unknown level type `{kind}`"));
            }
            let slot = match core {
                _ if pack.is_some_and(|p| i <= p) => &mut sockets,
                Some(c) if i > c => &mut pus,
                _ => &mut cores,
            };
            *slot = slot.checked_mul(*n).ok_or("too many PUs")?;
        }
        let sockets = sockets.checked_mul(nodes).ok_or("too many PUs")?;
        let total = sockets
            .checked_mul(cores)
            .and_then(|n| n.checked_mul(pus))
            .filter(|&n| n <= max_pus)
            .ok_or_else(|| format!("more than {max_pus} PUs in all"))?;
        debug_assert!(total > 0);
        Ok(SyntheticTopology {
            nodes,
            sockets,
            cores_per_socket: cores,
            pus_per_core: pus,
        })
    }
}

impl SyntheticTopology {
    /// The node PU `pu` is on ([`Topology::synthetic`] numbers PUs
    /// consecutively, node by node).
    pub fn node_of_pu(&self, pu: usize) -> usize {
        let per_node = self.sockets / self.nodes * self.cores_per_socket * self.pus_per_core;
        pu / per_node.max(1)
    }
}

/// The `(type, count)` levels of a synthetic string, types lowercased,
/// attributes and memory children dropped.
fn synthetic_levels(text: &str) -> Result<Vec<(String, usize)>, String> {
    // Drop `(...)` and `[...]` (which may hold spaces), keeping the rest.
    let mut plain = String::new();
    let mut depth: Vec<char> = Vec::new();
    for c in text.chars() {
        match c {
            '(' | '[' => depth.push(c),
            ')' | ']' => {
                let open = if c == ')' { '(' } else { '[' };
                if depth.pop() != Some(open) {
                    return Err(format!("unbalanced `{c}`"));
                }
                if depth.is_empty() {
                    plain.push(' ');
                }
            }
            _ if depth.is_empty() => plain.push(c),
            _ => {}
        }
    }
    if !depth.is_empty() {
        return Err("unclosed `(` or `[`".into());
    }
    plain
        .split_whitespace()
        .map(|level| {
            let (kind, n) = level
                .split_once(':')
                .ok_or_else(|| format!("`{level}` is not TYPE:COUNT"))?;
            let n: usize = n
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{level}`: the count must be a whole number >= 1"))?;
            Ok((kind.to_ascii_lowercase(), n))
        })
        .collect()
}

/// How the socket layout was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A simulated machine read from hwloc's XML (`sim_topology = xml:FILE`).
    Xml,
}

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub source: Source,
    pub sockets: Vec<Socket>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("`cores`: CPU {core} is not available to this process (available: {available})")]
    UnknownCore { core: usize, available: String },
    #[error("`sockets`: cannot split {cores} core(s) into {sockets} virtual sockets")]
    TooManySockets { sockets: usize, cores: usize },
    #[error("`sim_topology`: {file}: {message}")]
    Xml { file: PathBuf, message: String },
    #[error(
        "`threads`: {threads} threads but only {cores} logical CPU(s) selected; \
         set oversubscribe = true to pin several threads per CPU"
    )]
    Oversubscribed { threads: usize, cores: usize },
}

/// Where each worker thread runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// The logical CPU (PU) of each thread.
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
    /// The machine this process runs on, or the captured sysfs tree named
    /// by `BRAID_SYSFS_ROOT`.
    pub fn detect() -> Topology {
        if let Some(root) = std::env::var_os(SYSFS_ROOT_VAR) {
            let root = std::path::PathBuf::from(root);
            return detect_sysfs(&root).unwrap_or(Topology {
                source: Source::Fallback,
                sockets: vec![Socket::single([0])],
            });
        }
        let allowed = allowed_cores();
        let detected = detect_hwloc().or_else(|| detect_sysfs(std::path::Path::new("/sys")));
        let topo = match detected {
            Some(t) => t.restricted_to(&allowed),
            None => None,
        };
        topo.unwrap_or_else(|| Topology {
            source: Source::Fallback,
            sockets: vec![Socket::single(allowed)],
        })
    }

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

    /// The simulator's machine: PUs numbered consecutively, core by core.
    pub fn synthetic(t: SyntheticTopology) -> Topology {
        let per_socket = t.cores_per_socket * t.pus_per_core;
        Topology {
            source: Source::Synthetic,
            sockets: (0..t.sockets)
                .map(|s| Socket {
                    cores: (0..t.cores_per_socket)
                        .map(|c| {
                            let first = s * per_socket + c * t.pus_per_core;
                            (first..first + t.pus_per_core).collect()
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The simulator's machine: built from a synthetic description, or
    /// read from an hwloc XML export (needs the `hwloc` feature; the
    /// configuration refuses `xml:` without it).
    pub fn simulated(t: &SimTopology) -> Result<Topology, TopologyError> {
        match t {
            SimTopology::Synthetic(s) => Ok(Topology::synthetic(*s)),
            SimTopology::Xml { xml } => from_xml(xml),
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
    fn restricted_to(self, allowed: &[usize]) -> Option<Topology> {
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
        return format!("cores {}", format_list(&pus));
    }
    let each: Vec<String> = cores
        .iter()
        .map(|c| c.iter().map(usize::to_string).collect::<Vec<_>>().join("+"))
        .collect();
    format!("{} cores (CPUs): {}", cores.len(), each.join(" "))
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

/// The environment variable naming a sysfs root to read instead of `/sys`.
pub const SYSFS_ROOT_VAR: &str = "BRAID_SYSFS_ROOT";

/// Sockets and physical cores from `ROOT/devices/system/cpu/cpu*/topology`:
/// PUs with the same `physical_package_id` and `core_id` are one core.
/// Offline CPUs (an `online` file reading 0, or no topology directory) are
/// left out.
fn detect_sysfs(root: &std::path::Path) -> Option<Topology> {
    use std::collections::BTreeMap;
    let dir = root.join("devices/system/cpu");
    let read = |path: std::path::PathBuf| std::fs::read_to_string(path).ok();
    let mut packages: BTreeMap<i64, BTreeMap<i64, Vec<usize>>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).ok()? {
        let name = entry.ok()?.file_name().into_string().ok()?;
        let Some(id) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let cpu = dir.join(&name);
        if read(cpu.join("online")).is_some_and(|t| t.trim() == "0") {
            continue;
        }
        let Some(package) = read(cpu.join("topology/physical_package_id")) else {
            continue; // offline CPUs have no topology directory
        };
        let package = package.trim().parse().ok()?;
        // Without core_id (very old kernels) every CPU is its own core.
        let core = match read(cpu.join("topology/core_id")) {
            Some(c) => c.trim().parse().ok()?,
            None => -1 - id as i64,
        };
        packages
            .entry(package)
            .or_default()
            .entry(core)
            .or_default()
            .push(id);
    }
    if packages.is_empty() {
        return None;
    }
    let sockets = packages
        .into_values()
        .map(|cores| {
            let mut cores: Vec<Vec<usize>> = cores
                .into_values()
                .map(|mut pus| {
                    pus.sort_unstable();
                    pus
                })
                .collect();
            // Cores in the order of their first PU, as the OS numbers them.
            cores.sort_unstable_by_key(|pus| pus[0]);
            Socket { cores }
        })
        .collect();
    Some(Topology {
        source: Source::Sysfs,
        sockets,
    })
}

#[cfg(feature = "hwloc")]
fn detect_hwloc() -> Option<Topology> {
    let topo = hwlocality::Topology::new().ok()?;
    of_hwloc(&topo, Source::Hwloc)
}

/// Packages, their cores and each core's PUs (by OS index) as hwloc sees
/// them.
#[cfg(feature = "hwloc")]
fn of_hwloc(topo: &hwlocality::Topology, source: Source) -> Option<Topology> {
    use hwlocality::object::types::ObjectType;
    let sockets: Vec<Socket> = topo
        .objects_with_type(ObjectType::Package)
        .filter_map(|p| {
            let set = p.cpuset()?;
            let cores: Vec<Vec<usize>> = topo
                .objects_inside_cpuset_with_type(set, ObjectType::Core)
                .filter_map(|c| {
                    let pus: Vec<usize> = c.cpuset()?.iter_set().map(usize::from).collect();
                    (!pus.is_empty()).then_some(pus)
                })
                .collect();
            // A package without Core objects: each PU is a core.
            let cores = if cores.is_empty() {
                set.iter_set().map(|p| vec![usize::from(p)]).collect()
            } else {
                cores
            };
            (!cores.is_empty()).then_some(Socket { cores })
        })
        .collect();
    (!sockets.is_empty()).then_some(Topology { source, sockets })
}

/// Reads a topology that `lstopo --of xml` (or hwloc's export) wrote.
#[cfg(feature = "hwloc")]
fn from_xml(file: &Path) -> Result<Topology, TopologyError> {
    let bad = |message: String| TopologyError::Xml {
        file: file.to_path_buf(),
        message,
    };
    // hwloc reports a missing file only as a failed load; say which.
    std::fs::metadata(file).map_err(|e| bad(e.to_string()))?;
    let topo = hwlocality::Topology::builder()
        .from_xml_file(file)
        .map_err(|e| bad(e.to_string()))?
        .build()
        .map_err(|e| bad(format!("hwloc cannot load it ({e})")))?;
    let t =
        of_hwloc(&topo, Source::Xml).ok_or_else(|| bad("it has no package with a PU".into()))?;
    if t.cores().len() > crate::limits::MAX_CPUS {
        return Err(bad(format!("more than {} PUs", crate::limits::MAX_CPUS)));
    }
    Ok(t)
}

#[cfg(not(feature = "hwloc"))]
fn from_xml(file: &Path) -> Result<Topology, TopologyError> {
    Err(TopologyError::Xml {
        file: file.to_path_buf(),
        message: "reading hwloc XML needs braid built with --features hwloc".into(),
    })
}

#[cfg(not(feature = "hwloc"))]
fn detect_hwloc() -> Option<Topology> {
    None
}

#[cfg(test)]
mod tests {

    #[test]
    fn lstopo_strings_and_the_short_form_give_the_same_machine() {
        let short = SyntheticTopology::parse("pack:2 core:18", 4096).unwrap();
        for long in [
            "pack:2 core:18 pu:1",
            "Package:2 Core:18 PU:1",
            "Package:2 [NUMANode(memory=67108864)] L3Cache:1(size=47185920) \
             L2Cache:18(size=1048576) L1dCache:1(size=32768) L1iCache:1(size=32768) Core:1 PU:1",
            "socket:2 l3:1 core:18",
            "Machine:1 Package:2(indexes=0,1) Core:18 PU:1",
        ] {
            assert_eq!(
                SyntheticTopology::parse(long, 4096).unwrap(),
                short,
                "{long}"
            );
        }
        assert_eq!(
            Topology::synthetic(short),
            Topology::synthetic(SyntheticTopology::parse("pack:2 core:18 pu:1", 4096).unwrap())
        );
    }

    #[test]
    fn levels_fall_into_sockets_cores_and_pus() {
        let t = |s| SyntheticTopology::parse(s, 4096).unwrap();
        let shape = |t: SyntheticTopology| (t.sockets, t.cores_per_socket, t.pus_per_core);
        assert_eq!(shape(t("group:2 pack:2 numa:2 core:4 pu:2")), (4, 8, 2));
        assert_eq!(shape(t("core:4 pu:2")), (1, 4, 2));
        assert_eq!(shape(t("pu:6")), (1, 6, 1));
        let m = Topology::synthetic(t("pack:2 core:2 pu:2"));
        assert_eq!(m.physical_cores(), 4);
        assert_eq!(m.sockets[1].cores, vec![vec![4, 5], vec![6, 7]]);
    }

    #[test]
    fn malformed_synthetic_strings_say_what_is_wrong() {
        for (bad, why) in [
            ("", "no levels"),
            ("pack:2 widget:3", "widget"),
            ("pack:0 core:2", ">= 1"),
            ("pack:2 core", "TYPE:COUNT"),
            ("pack:2(size=1 core:2", "unclosed"),
            ("pack:2) core:2", "unbalanced"),
            ("pack:100000 core:100000", "PUs"),
        ] {
            let e = SyntheticTopology::parse(bad, 4096).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    use super::*;

    #[cfg(feature = "hwloc")]
    #[test]
    fn an_hwloc_xml_export_reads_as_its_synthetic_description() {
        use hwlocality::topology::export::xml::XMLExportFlags;
        let dir = std::env::temp_dir().join(format!("braid-xml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("node.xml");
        let text = "Package:2 [NUMANode(memory=1073741824)] L3Cache:1(size=33554432) Core:3 PU:2";
        let hw = hwlocality::Topology::builder()
            .from_synthetic(text)
            .unwrap()
            .build()
            .unwrap();
        hw.export_xml_file(Some(&file), XMLExportFlags::empty())
            .unwrap();
        let read = Topology::simulated(&SimTopology::Xml { xml: file.clone() }).unwrap();
        let want = Topology::synthetic(SyntheticTopology::parse(text, 4096).unwrap());
        assert_eq!(read.source, Source::Xml);
        assert_eq!(read.sockets, want.sockets);
        let missing = Topology::simulated(&SimTopology::Xml {
            xml: dir.join("none.xml"),
        });
        assert!(missing.unwrap_err().to_string().contains("none.xml"));
        std::fs::write(&file, "<not xml").unwrap();
        let junk = Topology::simulated(&SimTopology::Xml { xml: file });
        assert!(junk.unwrap_err().to_string().contains("node.xml"));
        std::fs::remove_dir_all(&dir).ok();
    }
    use std::path::PathBuf;

    #[test]
    fn detection_finds_at_least_one_core() {
        let t = Topology::detect();
        assert!(!t.cores().is_empty());
        assert!(t.sockets.iter().all(|s| !s.cores.is_empty()));
    }

    #[test]
    fn virtual_sockets_split_consecutive_cores() {
        let t = Topology::uniform(1, 6);
        let v = t.select(None, Some(2)).unwrap();
        assert_eq!(v.source, Source::Virtual);
        assert_eq!(v.sockets[0].cores, vec![vec![0], vec![1], vec![2]]);
        assert_eq!(v.sockets[1].cores, vec![vec![3], vec![4], vec![5]]);
        assert!(t.select(None, Some(7)).is_err());
    }

    #[test]
    fn a_core_list_must_name_available_cores() {
        let t = Topology::uniform(2, 2);
        let sel = t.select(Some(&[3, 0]), None).unwrap();
        assert_eq!(sel.cores(), vec![0, 3]);
        let e = t.select(Some(&[9]), None).unwrap_err();
        assert!(e.to_string().contains("CPU 9"), "{e}");
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

    /// A fake `ROOT/devices/system/cpu` tree: `(cpu, package, core)` for
    /// each online CPU, plus offline CPUs with no topology directory.
    fn fake_sysfs(name: &str, cpus: &[(usize, i64, i64)], offline: &[usize]) -> PathBuf {
        // Tests run in parallel: a tree of its own for each call.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pid = std::process::id();
        let root = std::env::temp_dir().join(format!("braid-sysfs-{pid}-{name}-{n}"));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("devices/system/cpu");
        for &(cpu, package, core) in cpus {
            let t = dir.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{package}\n")).unwrap();
            std::fs::write(t.join("core_id"), format!("{core}\n")).unwrap();
            std::fs::write(dir.join(format!("cpu{cpu}/online")), "1\n").unwrap();
        }
        for &cpu in offline {
            std::fs::create_dir_all(dir.join(format!("cpu{cpu}"))).unwrap();
            std::fs::write(dir.join(format!("cpu{cpu}/online")), "0\n").unwrap();
        }
        std::fs::create_dir_all(dir.join("cpufreq")).unwrap(); // not a CPU
        root
    }

    /// 2 sockets x 4 cores x 2 hyperthreads, numbered the Linux way: socket
    /// 0 is CPUs 0-3 with siblings 8-11, socket 1 is 4-7 with 12-15.
    fn two_by_four_ht() -> Topology {
        let cpus: Vec<(usize, i64, i64)> = (0..16)
            .map(|cpu| (cpu, ((cpu % 8) / 4) as i64, (cpu % 4) as i64))
            .collect();
        let root = fake_sysfs("2x4ht", &cpus, &[]);
        let t = detect_sysfs(&root).unwrap();
        std::fs::remove_dir_all(root).unwrap();
        t
    }

    #[test]
    fn sysfs_groups_hyperthreads_into_physical_cores() {
        let t = two_by_four_ht();
        assert_eq!(t.source, Source::Sysfs);
        assert_eq!(t.physical_cores(), 8);
        assert_eq!(t.cores().len(), 16);
        assert_eq!(
            t.sockets[0].cores,
            vec![vec![0, 8], vec![1, 9], vec![2, 10], vec![3, 11]]
        );
        assert_eq!(t.sockets[1].cores[0], vec![4, 12]);
    }

    #[test]
    fn no_two_threads_share_a_core_until_every_core_has_one() {
        let t = two_by_four_ht();
        let core_of = |pu: usize| pu % 8; // physical core index on this machine
        for threads in 1..=16 {
            let p = t.place(threads, false).unwrap();
            let mut used: Vec<usize> = p.cores.iter().map(|&c| core_of(c)).collect();
            used.sort_unstable();
            used.dedup();
            assert_eq!(
                used.len(),
                threads.min(8),
                "{threads} threads: {:?}",
                p.cores
            );
            // Sockets fill in order: socket 0's cores before socket 1's.
            let firsts = &p.sockets[..threads.min(8)];
            assert!(firsts.windows(2).all(|w| w[0] <= w[1]), "{:?}", p.sockets);
        }
        let p = t.place(8, false).unwrap();
        assert_eq!(p.cores, vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(p.sockets, vec![0, 0, 0, 0, 1, 1, 1, 1]);
        let p = t.place(10, false).unwrap();
        assert_eq!(&p.cores[8..], &[8, 9]);
        assert!(t.place(17, false).is_err());
        // Oversubscribed, consecutive threads share a CPU and its socket.
        let p = t.place(32, true).unwrap();
        assert_eq!(p.cores[0], p.cores[1]);
        assert!(p.sockets.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn sysfs_without_hyperthreads_and_with_an_offline_cpu() {
        let root = fake_sysfs("1x2", &[(0, 0, 0), (1, 0, 1)], &[]);
        let t = detect_sysfs(&root).unwrap();
        assert_eq!(t.sockets, vec![Socket::single([0, 1])]);
        std::fs::remove_dir_all(root).unwrap();
        let cpus = [(0, 0, 0), (1, 0, 1), (3, 0, 3)];
        let root = fake_sysfs("offline", &cpus, &[2]);
        let t = detect_sysfs(&root).unwrap();
        assert_eq!(t.cores(), vec![0, 1, 3]);
        assert_eq!(t.place(3, false).unwrap().cores, vec![0, 1, 3]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn cpus_picked_by_hand_are_cores_of_their_own() {
        let t = two_by_four_ht();
        let sel = t.select(Some(&[0, 8, 4]), None).unwrap();
        assert_eq!(sel.physical_cores(), 3);
        let p = sel.place(3, false).unwrap();
        assert_eq!(p.cores, vec![0, 8, 4]);
        assert_eq!(p.sockets, vec![0, 0, 1]);
    }

    #[test]
    fn core_lists_print_as_ranges() {
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_list(&[]), "");
    }
}
