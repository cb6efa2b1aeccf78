use super::detect::detect_sysfs;

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
    let dir = braid_testkit::scratch_dir("xml");
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
}

#[test]
fn detection_finds_at_least_one_core() {
    let t = Topology::detect().unwrap();
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
fn fake_sysfs(name: &str, cpus: &[(usize, i64, i64)], offline: &[usize]) -> braid_testkit::Scratch {
    // A tree of its own for each call, removed when it drops.
    let root = braid_testkit::scratch_dir(&format!("sysfs-{name}"));
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
    detect_sysfs(&root).unwrap()
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
    let cpus = [(0, 0, 0), (1, 0, 1), (3, 0, 3)];
    let root = fake_sysfs("offline", &cpus, &[2]);
    let t = detect_sysfs(&root).unwrap();
    assert_eq!(t.cores(), vec![0, 1, 3]);
    assert_eq!(t.place(3, false).unwrap().cores, vec![0, 1, 3]);
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
