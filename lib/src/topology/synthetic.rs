//! hwloc's synthetic syntax (`pack:2 core:18 pu:1`, as `lstopo --of
//! synthetic` prints it), braid's `host:N` level in front of it, and the
//! simulator's machine built from either that or an hwloc XML export.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Socket, Source, Topology, TopologyError};

/// A synthetic machine in hwloc's synthetic syntax, e.g. `pack:2 core:18
/// pu:1` (the form `lstopo --of synthetic` writes; see
/// [`SyntheticTopology::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyntheticTopology {
    /// Nodes: hosts joined by a network (braid's outermost level, `host:N`,
    /// for the simulator's runs across nodes); `sockets` counts those of all
    /// nodes. (Named `nodes` in reports, as before the level was renamed.)
    #[serde(default = "one")]
    pub nodes: usize,
    /// Sockets, all nodes together.
    pub sockets: usize,
    /// Physical cores per socket.
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
            write!(f, "host:{} ", self.nodes)?;
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
    /// hwloc's synthetic syntax (with braid's `host:N`).
    Synthetic(SyntheticTopology),
    /// An `lstopo --of xml` export.
    Xml {
        /// The file.
        xml: PathBuf,
    },
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
    /// braid adds one level of its own, outermost: `host:N`, N copies of the
    /// machine below joined by a network (for the simulator's runs across
    /// nodes). hwloc has no such level; its `node` is an old name of a NUMA
    /// node, so `node` is refused with what to write instead.
    /// `max_pus` bounds the product.
    ///
    /// ```
    /// use braid::SyntheticTopology;
    /// let lstopo = "Package:2 [NUMANode(memory=67108864)] L3Cache:1(size=47185920) Core:18 PU:1";
    /// let a = SyntheticTopology::parse(lstopo, 4096).unwrap();
    /// assert_eq!(a, SyntheticTopology::parse("pack:2 core:18", 4096).unwrap());
    /// assert_eq!(a.to_string(), "pack:2 core:18 pu:1");
    /// assert_eq!(SyntheticTopology::parse("pack:2 core:4 pu:2", 4096).unwrap().pus_per_core, 2);
    /// let nodes = SyntheticTopology::parse("host:4 pack:2 core:18", 4096).unwrap();
    /// assert_eq!((nodes.nodes, nodes.sockets), (4, 8));
    /// assert_eq!(nodes.to_string(), "host:4 pack:2 core:18 pu:1");
    /// let old = SyntheticTopology::parse("node:4 pack:2 core:18", 4096).unwrap_err();
    /// assert!(old.contains("host:4"), "{old}");
    /// // What lstopo prints back for hwloc's `node:2 pack:2 core:8 pu:1`:
    /// // one machine, two NUMA nodes (as groups), four packages.
    /// let back = "Group0:2 [NUMANode(memory=1073741824)] Package:2 Core:8 PU:1";
    /// let one = SyntheticTopology::parse(back, 4096).unwrap();
    /// assert_eq!((one.nodes, one.sockets, one.cores_per_socket), (1, 4, 8));
    /// assert_eq!(nodes.node_of_pu(35), 0);
    /// assert_eq!(nodes.node_of_pu(36), 1);
    /// ```
    pub fn parse(text: &str, max_pus: usize) -> Result<SyntheticTopology, String> {
        let mut levels = synthetic_levels(text)?;
        if levels.is_empty() {
            return Err("no levels".into());
        }
        if let Some((_, n)) = levels.iter().find(|(k, _)| k == "node") {
            return Err(format!(
                "`node` is hwloc's old name for a NUMA node (lstopo reads `node:2 pack:2` as one \
                 machine with two NUMA nodes); for {n} machines joined by a network write \
                 `host:{n}` in front, for NUMA nodes `numa:{n}`"
            ));
        }
        // braid's own outermost level: hosts, each the machine below.
        let mut nodes = 1;
        if let Some(i) = levels.iter().position(|(k, _)| k == "host") {
            if i != 0 {
                return Err("`host` must be the outermost level".into());
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

impl Topology {
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
            SimTopology::Xml { xml } => super::detect::from_xml(xml),
        }
    }
}
