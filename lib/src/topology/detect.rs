//! Learning the machine this process runs on: hwloc (with the `hwloc`
//! feature), Linux sysfs (or a captured tree under `BRAID_SYSFS_ROOT`),
//! and a one-socket fallback; hwloc's XML exports for the simulator.

use std::path::Path;

use super::{Socket, Source, Topology, TopologyError};

impl Topology {
    /// The machine this process runs on, or the captured sysfs tree named
    /// by `BRAID_SYSFS_ROOT`. A captured tree that cannot be used is an
    /// error naming the variable and what is missing (a guess would run a
    /// machine nobody asked for); the machine's own falls back to one
    /// socket of the CPUs this process may use.
    pub fn detect() -> Result<Topology, TopologyError> {
        if let Some(root) = std::env::var_os(SYSFS_ROOT_VAR) {
            let root = std::path::PathBuf::from(root);
            return detect_sysfs(&root)
                .map_err(|problem| TopologyError::SysfsRoot { root, problem });
        }
        let allowed = allowed_cores();
        let detected = detect_hwloc().or_else(|| detect_sysfs(std::path::Path::new("/sys")).ok());
        let topo = match detected {
            Some(t) => t.restricted_to(&allowed),
            None => None,
        };
        Ok(topo.unwrap_or_else(|| Topology {
            source: Source::Fallback,
            sockets: vec![Socket::single(allowed)],
        }))
    }
}

impl Topology {
    /// The whole node this process runs on, whatever its affinity mask
    /// (`detect` keeps only the CPUs in it): a run across ranks plans its
    /// node's parasites on this, since a rank bound to one core still names
    /// the node's cores in `noise_cores`.
    #[cfg(feature = "mpi")]
    pub fn detect_node() -> Result<Topology, TopologyError> {
        if std::env::var_os(SYSFS_ROOT_VAR).is_some() {
            return Topology::detect();
        }
        let detected = detect_hwloc().or_else(|| detect_sysfs(std::path::Path::new("/sys")).ok());
        Ok(detected.unwrap_or_else(|| Topology {
            source: Source::Fallback,
            sockets: vec![Socket::single(allowed_cores())],
        }))
    }
}

/// How many CPUs this process may run on (its affinity mask, cgroup
/// quotas): what placement may fill without `oversubscribe`, however the
/// topology was learned.
pub(crate) fn usable_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The first CPU id a `cpu_set_t` cannot hold (pinning one would fail).
pub(crate) const CPU_SET_SIZE: usize = libc::CPU_SETSIZE as usize;

/// Cores in this process's affinity mask.
pub fn allowed_cores() -> Vec<usize> {
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
pub(super) const SYSFS_ROOT_VAR: &str = "BRAID_SYSFS_ROOT";

/// Sockets and physical cores from `ROOT/devices/system/cpu/cpu*/topology`:
/// PUs with the same `physical_package_id` and `core_id` are one core.
/// Offline CPUs (an `online` file reading 0, or no topology directory) are
/// left out.
pub(super) fn detect_sysfs(root: &std::path::Path) -> Result<Topology, String> {
    use std::collections::BTreeMap;
    let dir = root.join("devices/system/cpu");
    let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    // Bounded: a captured tree is a file from elsewhere.
    let read = |path: std::path::PathBuf| braid_noise::files::read_text(&path, 4096).ok();
    let number = |path: std::path::PathBuf, text: String| -> Result<i64, String> {
        text.trim().parse().map_err(|_| {
            format!(
                "{}: `{}` is not a whole number",
                shown(&path),
                braid_noise::files::excerpt(text.trim())
            )
        })
    };
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| format!("no directory devices/system/cpu in it ({e})"))?;
    let mut packages: BTreeMap<i64, BTreeMap<i64, Vec<usize>>> = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("devices/system/cpu cannot be listed ({e})"))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
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
        let package_file = cpu.join("topology/physical_package_id");
        let Some(package) = read(package_file.clone()) else {
            continue; // offline CPUs have no topology directory
        };
        if id >= CPU_SET_SIZE {
            return Err(format!(
                "devices/system/cpu/{name}: CPU ids from {CPU_SET_SIZE} up cannot be pinned (a \
                 cpu_set_t holds {CPU_SET_SIZE})"
            ));
        }
        let package = number(package_file, package)?;
        // Without core_id (very old kernels) every CPU is its own core.
        let core_file = cpu.join("topology/core_id");
        let core = match read(core_file.clone()) {
            Some(c) => number(core_file, c)?,
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
        return Err(
            "no online CPU with a topology/physical_package_id under devices/system/cpu".into(),
        );
    }
    Ok(Topology {
        source: Source::Sysfs,
        sockets: packages.into_values().map(socket_of).collect(),
    })
}

/// A package's cores (by core id, each its PUs) as a socket: each core's
/// PUs in order, the cores in the order of their first PU, as the OS
/// numbers them.
fn socket_of(cores: std::collections::BTreeMap<i64, Vec<usize>>) -> Socket {
    let mut cores: Vec<Vec<usize>> = cores
        .into_values()
        .map(|mut pus| {
            pus.sort_unstable();
            pus
        })
        .collect();
    cores.sort_unstable_by_key(|pus| pus[0]);
    Socket { cores }
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
pub(super) fn from_xml(file: &Path) -> Result<Topology, TopologyError> {
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
pub(super) fn from_xml(file: &Path) -> Result<Topology, TopologyError> {
    Err(TopologyError::Xml {
        file: file.to_path_buf(),
        message: "reading hwloc XML needs braid built with --features hwloc".into(),
    })
}

#[cfg(not(feature = "hwloc"))]
fn detect_hwloc() -> Option<Topology> {
    None
}
