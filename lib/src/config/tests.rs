use super::*;
use crate::topology::SimTopology;

fn parse(text: &str) -> Result<Config, ConfigError> {
    let mut c = Config::default();
    c.apply_text(text, Path::new("test.txt"))?;
    Ok(c)
}

#[test]
fn the_shipped_config_parses_to_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config.txt");
    assert_eq!(Config::from_file(&path).unwrap(), Config::default());
}

#[test]
fn the_shipped_config_is_the_key_tables_document() {
    // Regenerate with `braid config > config.txt` after changing a key.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config.txt");
    let shipped = std::fs::read_to_string(path).unwrap();
    let generated = document();
    for (i, (a, b)) in shipped.lines().zip(generated.lines()).enumerate() {
        assert_eq!(
            a,
            b,
            "config.txt line {} differs from `braid config`",
            i + 1
        );
    }
    assert_eq!(shipped, generated);
}

#[test]
fn every_default_parses_and_every_key_has_a_doc_or_shares_one() {
    let _ = Config::default(); // panics naming a default that does not parse
    for (i, key) in KEYS.iter().enumerate() {
        assert!(!key.doc.is_empty() || i > 0, "{} has no doc", key.name);
    }
    let mut names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), KEYS.len(), "a key is defined twice");
}

#[test]
fn every_key_in_the_key_list_is_accepted() {
    let c = parse(
        "workload = random(1, 2)\nlb_group = node\nlb_away_cost = auto\nlb_gate = payoff\n\
         sim_node_overhead_ns = 1\n\
         sim_node_gap_ns = 1\nlb_model = m.json\nsim_row_ns = 1\nsim_cold_cell_ns = 1\nsim_block_ns = 1\nsim_home_update_ns = 1\nlb_recent = 2\nlb_window = 2\n\
         sim_remote_edge_ns = 1\nsim_noise_switch_ns = 1\nsim_monitor_s = 0.001\n\
         sim_jitter = 0.05:0.001\nsim_loads = measured",
    )
    .unwrap();
    let json = serde_json::to_value(&c).unwrap();
    let fields: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut keys: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
    keys.sort_unstable();
    let mut fields = fields;
    fields.sort_unstable();
    assert_eq!(keys, fields);
}

/// A report names every key as it ran, zeros and defaults included, and
/// reading it back gives that configuration: each key set in turn to a
/// value other than its default (0 where 0 is allowed, as `sim_row_ns = 0`
/// in the ULBA suites, which reports once wrote as the default 18).
#[test]
fn every_key_reads_back_as_it_ran_zeros_and_defaults_included() {
    const TRIES: &[&str] = &[
        "0",
        "1",
        "2",
        "0.5",
        "true",
        "false",
        "auto",
        "none",
        "joint",
        "steal",
        "node",
        "payoff",
        "measured",
        "thread",
        "cosched",
        "ssync",
        "3:0.95",
        "0, 1",
        "0.05:0.001",
        "0@5:0.1",
        "0:0.5",
        "pack:1 core:2",
        "hotspot(2, 0.5, 0.5, 0.1)",
        "m.json",
        "split, joint",
    ];
    let mut untried = Vec::new();
    for key in KEYS {
        let default = Config::default();
        let set = TRIES.iter().find_map(|v| {
            let mut c = Config::default();
            c.set(key.name, v, Origin::Default).ok()?;
            (c != default).then_some(c)
        });
        let Some(c) = set else {
            untried.push(key.name);
            continue;
        };
        let json = serde_json::to_value(&c).unwrap();
        assert!(
            json.get(key.name).is_some(),
            "`{}` is left out of the JSON",
            key.name
        );
        let back: Config = serde_json::from_value(json).unwrap();
        assert_eq!(back, c, "`{}` does not read back as it ran", key.name);
    }
    assert!(untried.is_empty(), "no value to set tried for {untried:?}");
    // The keys whose 0 is not their default, read back as 0.
    let c = parse("sim_row_ns = 0\nsim_update_ns = 0\nlb_recent = 1\nlb_window = 1").unwrap();
    let back: Config = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(
        (
            back.sim_row_ns,
            back.sim_update_ns,
            back.lb_recent,
            back.lb_window
        ),
        (0.0, 0.0, 1, 1)
    );
}

#[test]
fn a_jitter_is_two_or_three_numbers_in_range() {
    let j = parse("sim_jitter = 0.05:0.001")
        .unwrap()
        .sim_jitter
        .unwrap();
    assert_eq!((j.sd, j.every_s, j.core_sd), (0.05, 0.001, 0.0));
    let j = parse("sim_jitter = 0.05 : 0.001 : 0.02")
        .unwrap()
        .sim_jitter
        .unwrap();
    assert_eq!(j.core_sd, 0.02);
    for bad in [
        "0.05",
        "2:0.001",
        "0.05:0",
        "0.05:1e-9",
        "0.05:0.001:-1",
        "a:b",
        "0.05:0.001:0.1:1",
    ] {
        let e = parse(&format!("sim_jitter = {bad}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("SD:SECONDS"), "{bad}: {e}");
    }
}

#[test]
fn comments_blank_lines_and_spaces_are_ignored() {
    let c =
        parse("# a comment\n\n  threads = 3   # trailing\nmode=ssync\nstaleness = 30\n").unwrap();
    assert_eq!(c.threads, AutoOr::Value(3));
    assert_eq!(c.mode, Mode::Ssync);
    assert_eq!(c.staleness, 30);
}

#[test]
fn errors_name_the_key_and_the_line() {
    let cases = [
        ("threads = 0", "test.txt:1", "`threads`"),
        ("\nthreads = two", "test.txt:2", "`threads`"),
        ("tolerance = -1e-6", "test.txt:1", "`tolerance`"),
        ("tolerance = nan", "test.txt:1", "`tolerance`"),
        ("mode = fast", "test.txt:1", "`mode`"),
        ("cores = 3-1", "test.txt:1", "`cores`"),
        ("cores = 1,1", "test.txt:1", "`cores`"),
        ("colour = red", "test.txt:1", "`colour`"),
        ("threads 2", "test.txt:1", "key = value"),
        ("threads = 2\nthreads = 3", "test.txt:2", "`threads`"),
        ("stall = 0@x:1", "test.txt:1", "`stall`"),
        ("slow = 0:-1", "test.txt:1", "`slow`"),
        ("slow = 1", "test.txt:1", "`slow`"),
        ("noise = loud", "test.txt:1", "`noise`"),
        ("noise_cores = 1:1.5", "test.txt:1", "`noise_cores`"),
        ("noise_cores = 1:0", "test.txt:1", "`noise_cores`"),
        ("noise_cores = 1, 1", "test.txt:1", "`noise_cores`"),
        ("noise_cores = 1:", "test.txt:1", "`noise_cores`"),
        ("noise_offsets = aligned", "test.txt:1", "`noise_offsets`"),
        (
            "sim_topology = pack:0 core:4",
            "test.txt:1",
            "`sim_topology`",
        ),
        ("sim_topology = blob:2", "test.txt:1", "`sim_topology`"),
        ("sim_speed = 1:0", "test.txt:1", "`sim_speed`"),
        ("sim_cell_ns = -1", "test.txt:1", "`sim_cell_ns`"),
        ("numerics = yes", "test.txt:1", "`numerics`"),
    ];
    for (text, at, key) in cases {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(at) && e.contains(key), "{text:?} -> {e}");
    }
}

#[test]
fn overrides_and_variants_apply_in_order() {
    let mut c = Config::default();
    c.apply_variant("async(4) + hybrid(0.01, 50)").unwrap();
    assert_eq!(c.variant().to_string(), "async(4)+hybrid(0.01,50)");
    c.apply_variant("ssync(30)").unwrap();
    c.apply_override("subdomains=2").unwrap();
    assert_eq!((c.mode, c.staleness, c.subdomains), (Mode::Ssync, 30, 2));
    assert_eq!(c.balancer, BalancerKind::None);
    let e = c.apply_override("threads=").unwrap_err().to_string();
    assert!(e.contains("override `threads=`"), "{e}");
}

#[test]
fn noise_cores_take_levels_per_core() {
    let c = parse("noise = process\nnoise_cores = 1:0.19, 3:0.05, 4").unwrap();
    assert_eq!(c.noise, crate::noise::NoiseForm::Process);
    let at = |core, duty| NoiseCore {
        core: AutoOr::Value(core),
        duty,
        trace: None,
    };
    assert_eq!(
        c.noise_cores,
        vec![at(1, Some(0.19)), at(3, Some(0.05)), at(4, None)]
    );
    let c = parse("noise = thread\nnoise_cores = auto:0.19").unwrap();
    let auto = NoiseCore {
        core: AutoOr::Auto,
        duty: Some(0.19),
        trace: None,
    };
    assert_eq!(c.noise_cores, vec![auto]);
    let c = parse("noise = trace\nnoise_cores = auto:traces/a b.trace, 2: /t/c:d").unwrap();
    let traced = |core, file: &str| NoiseCore {
        core,
        duty: None,
        trace: Some(file.into()),
    };
    assert_eq!(
        c.noise_cores,
        vec![
            traced(AutoOr::Auto, "traces/a b.trace"),
            traced(AutoOr::Value(2), "/t/c:d")
        ]
    );
}

#[test]
fn synthetic_topologies_follow_hwlocs_syntax() {
    let c = parse("sim_topology = pack:2 l3:1 core:18 pu:1").unwrap();
    let SimTopology::Synthetic(t) = c.sim_topology else {
        panic!("{:?}", c.sim_topology)
    };
    assert_eq!((t.sockets, t.cores_per_socket), (2, 18));
    let c = parse("sim_topology = package:4 core:6").unwrap();
    assert_eq!(c.sim_topology.to_string(), "pack:4 core:6 pu:1");
    let xml = parse("sim_topology = xml:node.xml");
    if cfg!(feature = "hwloc") {
        let xml = xml.unwrap().sim_topology;
        assert_eq!(
            xml,
            SimTopology::Xml {
                xml: "node.xml".into()
            }
        );
    } else {
        assert!(xml.unwrap_err().to_string().contains("--features hwloc"));
    }
}

#[test]
fn core_lists_accept_ranges() {
    let c = parse("cores = 0, 2-4,7").unwrap();
    assert_eq!(c.cores, AutoOr::Value(vec![0, 2, 3, 4, 7]));
}

#[test]
fn a_simulated_machine_may_have_up_to_2_to_the_24_pus() {
    // A million cores (issue 47's machine) and 2^24 in all are machines.
    for (text, pus) in [
        ("host:16384 pack:2 core:32", 1usize << 20),
        ("host:262144 pack:2 core:32", 1 << 24),
    ] {
        let c = parse(&format!("sim_topology = {text}")).unwrap();
        let SimTopology::Synthetic(t) = c.sim_topology else {
            panic!("{:?}", c.sim_topology)
        };
        assert_eq!(t.sockets * t.cores_per_socket * t.pus_per_core, pus);
    }
    // One more node is not.
    let e = parse("sim_topology = host:262145 pack:2 core:32").unwrap_err();
    assert!(e.to_string().contains("more than 16777216 PUs"), "{e}");
}

/// `auto:19%` (or `auto:19`) is a duty written as a percentage, not the
/// name of a trace: the message gives the fraction to write instead.
#[test]
fn a_duty_written_as_a_percentage_is_answered_with_its_fraction() {
    for text in [
        "noise = thread\nnoise_cores = auto:19%",
        "noise = thread\nnoise_cores = 2:19",
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(
            e.contains("a duty is a fraction in (0, 1): 0.19 for 19%"),
            "{e}"
        );
    }
}
