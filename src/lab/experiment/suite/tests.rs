use super::*;

const SUITE: &str = r#"
    name = "t"
    figure = "landscape"
    engine = "sim"
    variants = ["sync", "async(4)+joint(0.001)"]
    noise = [false, true]
    repetitions = 2
    [set]
    max_iterations = 100
    tolerance = 1e-4
    numerics = true
    sim_topology = "pack:2 core:2"
"#;

fn loaded(text: &str) -> LoadedSuite {
    LoadedSuite {
        suite: parse(text).unwrap(),
        path: PathBuf::from("x/t.toml"),
        calibrated: Vec::new(),
        places: Default::default(),
        digest: Default::default(),
    }
}

#[test]
fn samples_interleave_noise_within_each_repetition() {
    let keys: Vec<String> = loaded(SUITE).samples().iter().map(Sample::key).collect();
    assert_eq!(keys.len(), 8);
    assert_eq!(keys[0], "sync | quiet | 0");
    assert_eq!(keys[1], "sync | noise | 0");
    assert_eq!(keys[4], "sync | quiet | 1");
    let unique: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len());
}

#[test]
fn overrides_render_toml_values_as_braid_values_and_add_noise_keys() {
    let l = loaded(SUITE);
    let s = l.samples();
    assert_eq!(
        l.overrides(&s[0]),
        [
            "max_iterations=100",
            "numerics=true",
            "sim_topology=pack:2 core:2",
            "tolerance=0.0001"
        ]
    );
    let noisy = l.overrides(&s[1]);
    assert!(noisy.contains(&"noise=process".to_string()));
    assert!(noisy.contains(&"noise_cores=auto:0.19".to_string()));
}

#[test]
fn a_suite_of_billions_of_samples_is_refused_before_expansion() {
    let dir = braid_testkit::scratch_dir("suite");
    let path = dir.join("big.toml");
    std::fs::write(
        &path,
        SUITE.replace("repetitions = 2", "repetitions = 4000000000"),
    )
    .unwrap();
    let e = LoadedSuite::load(&path, None).unwrap_err().to_string();
    assert!(e.contains("16000000000 samples"), "{e}");
    std::fs::write(&path, SUITE).unwrap();
    let e = LoadedSuite::load(&path, Some(1 << 20))
        .unwrap_err()
        .to_string();
    assert!(e.contains("samples"), "{e}");
    assert!(LoadedSuite::load(&path, Some(3)).is_ok());
}

#[test]
fn a_payoff_suite_runs_each_variant_quiet_and_at_every_placement_and_duty() {
    let text = SUITE.replace("figure = \"landscape\"", "figure = \"payoff\"")
        + r#"
        [payoff]
        duties = [0.1, 0.5]
        placements = [
            { name = "edge", cores = "auto" },
            { name = "four", cores = "0, 1,2,3" },
        ]
    "#;
    let l = loaded(&text);
    let samples = l.samples();
    // 2 repetitions x 2 variants x (quiet + 2 placements x 2 duties).
    assert_eq!(samples.len(), 2 * 2 * 5);
    let keys: Vec<String> = samples.iter().map(Sample::key).collect();
    assert_eq!(keys[0], "sync | quiet | 0");
    assert_eq!(keys[1], "sync | edge @ 0.1 | 0");
    assert_eq!(keys[4], "sync | four @ 0.5 | 0");
    let unique: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len());
    assert!(
        !l.overrides(&samples[0])
            .iter()
            .any(|o| o.starts_with("noise"))
    );
    let four = l.overrides(&samples[4]);
    assert!(
        four.contains(&"noise_cores=0:0.5, 1:0.5, 2:0.5, 3:0.5".to_string()),
        "{four:?}"
    );
    assert!(four.contains(&"noise=process".to_string()), "{four:?}");
    // The placement stands in for the default `[noise_set]`'s cores: one
    // `noise_cores`, not two that the run would refuse.
    let cores = four
        .iter()
        .filter(|o| o.starts_with("noise_cores="))
        .count();
    assert_eq!(cores, 1, "{four:?}");
    // Old suites keep their digest: `payoff` is not serialised when absent.
    assert!(
        !serde_json::to_string(&loaded(SUITE).suite)
            .unwrap()
            .contains("payoff")
    );
    for (bad, needle) in [
        (text.replace("[0.1, 0.5]", "[0.1, 1.0]"), "duties"),
        (text.replace("[0.1, 0.5]", "[]"), "payoff"),
        (
            SUITE.replace("figure = \"landscape\"", "figure = \"payoff\""),
            "[payoff]",
        ),
    ] {
        let e = parse(&bad).unwrap_err();
        assert!(e.contains(needle), "{needle}: {e}");
    }
}

#[test]
fn workloads_and_sweeps_are_axes_whose_keys_leave_older_suites_alone() {
    let text = SUITE.replace(
        "repetitions = 2",
        "repetitions = 1\nworkloads = [\"uniform\", \"hotspot(4, 0.5, 0.5, 0.1)\"]\n\
         [sweep]\nlb_alpha = [0.1, 0.2]\nlb_history = [2]",
    );
    let l = loaded(&text);
    let s = l.samples();
    // 2 workloads x 2 variants x 2 alphas x 1 history x 2 noise settings.
    assert_eq!(s.len(), 16);
    assert_eq!(
        s[0].key(),
        "sync | quiet | 0 | uniform | lb_alpha=0.1 | lb_history=2"
    );
    assert_eq!(
        s[2].key(),
        "sync | quiet | 0 | uniform | lb_alpha=0.2 | lb_history=2"
    );
    assert_eq!(s[8].workload.as_deref(), Some("hotspot(4, 0.5, 0.5, 0.1)"));
    let o = l.overrides(&s[8]);
    assert!(
        o.contains(&"workload=hotspot(4, 0.5, 0.5, 0.1)".to_string()),
        "{o:?}"
    );
    assert!(o.contains(&"lb_alpha=0.1".to_string()), "{o:?}");
    // Swept for one variant only: the other runs once per workload.
    let only = loaded(&text.replace(
        "[sweep]",
        "swept_variants = [\"async(4)+joint(0.001)\"]\n[sweep]",
    ));
    let s = only.samples();
    assert_eq!(s.len(), 2 * (2 + 2 * 2));
    assert_eq!(s[0].key(), "sync | quiet | 0 | uniform");
    // A suite without them keeps its samples' keys and its digest's input.
    let plain = loaded(SUITE);
    assert_eq!(plain.samples()[0].key(), "sync | quiet | 0");
    let json = serde_json::to_string(&plain.suite).unwrap();
    assert!(
        !json.contains("workloads") && !json.contains("sweep"),
        "{json}"
    );
    let sample = serde_json::to_string(&plain.samples()[0]).unwrap();
    assert!(
        !sample.contains("workload") && !sample.contains("sweep"),
        "{sample}"
    );
}

#[test]
fn a_payoff_suite_can_raise_a_workload_factor_instead_of_noise() {
    let text = r#"
        name = "p"
        figure = "payoff"
        engine = "sim"
        variants = ["async(4)", "async(4)+greedy(0.001)"]
        [payoff]
        workloads = [{ name = "a central hotspot", shape = "hotspot(F, 0.5, 0.5, 0.1)", factors = [2, 4] }]
    "#;
    let l = loaded(text);
    let keys: Vec<String> = l.samples().iter().map(Sample::key).collect();
    assert_eq!(
        keys,
        [
            "async(4) | quiet | 0",
            "async(4) | a central hotspot x 2 | 0",
            "async(4) | a central hotspot x 4 | 0",
            "async(4)+greedy(0.001) | quiet | 0",
            "async(4)+greedy(0.001) | a central hotspot x 2 | 0",
            "async(4)+greedy(0.001) | a central hotspot x 4 | 0",
        ]
    );
    let o = l.overrides(&l.samples()[2]);
    assert!(
        o.contains(&"workload=hotspot(4, 0.5, 0.5, 0.1)".to_string()),
        "{o:?}"
    );
}

#[test]
fn the_digest_ignores_repetitions_but_not_the_definition() {
    let a = loaded(SUITE);
    let more = loaded(&SUITE.replace("repetitions = 2", "repetitions = 9"));
    let other = loaded(&SUITE.replace("max_iterations = 100", "max_iterations = 101"));
    assert_eq!(a.digest(), more.digest());
    assert_ne!(a.digest(), other.digest());
}

#[test]
fn bad_suites_name_the_problem() {
    for (text, needle) in [
        (
            SUITE.replace("engine = \"sim\"", "engine = \"gpu\""),
            "engine",
        ),
        (SUITE.replace("name = \"t\"", "nme = \"t\""), "nme"),
        (
            SUITE.replace("repetitions = 2", "repetitions = 0"),
            "repetitions",
        ),
        (
            SUITE.replace("[\"sync\", \"async(4)+joint(0.001)\"]", "[]"),
            "variants",
        ),
        (
            SUITE.replace("max_iterations = 100", "max_iterations = [1]"),
            "max_iterations",
        ),
        (
            SUITE.replace("repetitions = 2", "repetitions = 2\ntimeout_s = 1e300"),
            "timeout_s",
        ),
        (
            SUITE.replace("repetitions = 2", "repetitions = 2\ntimeout_s = nan"),
            "timeout_s",
        ),
        (
            SUITE.replace("repetitions = 2", "repetitions = 2\nlauncher = \"mpirun\""),
            "launcher",
        ),
        (
            SUITE
                .replace("engine = \"sim\"", "engine = \"run\"")
                .replace("repetitions = 2", "repetitions = 2\nlauncher = \" \""),
            "launcher",
        ),
        (
            SUITE.replace(
                "repetitions = 2",
                "repetitions = 2\nworkloads = [\"blob(1)\"]",
            ),
            "no workload named `blob`",
        ),
        (
            SUITE.replace("repetitions = 2", "repetitions = 2\n[sweep]\nlb_alpha = []"),
            "`sweep.lb_alpha` is empty",
        ),
        (
            SUITE.replace("figure = \"landscape\"", "figure = \"gains\""),
            "needs `workloads`",
        ),
        (
            SUITE
                .replace("figure = \"landscape\"", "figure = \"gains\"")
                .replace(
                    "repetitions = 2",
                    "repetitions = 2\nworkloads = [\"uniform\"]",
                ),
            "lb_alpha",
        ),
        (
            SUITE.replace("figure = \"landscape\"", "figure = \"scale\""),
            "a [sweep] of sim_topology",
        ),
        (
            SUITE
                .replace("figure = \"landscape\"", "figure = \"scale\"")
                .replace("engine = \"sim\"", "engine = \"run\"")
                .replace(
                    "repetitions = 2",
                    "repetitions = 2\n[sweep]\nsim_topology = [\"pack:1 core:2\"]",
                ),
            "needs engine = \"sim\"",
        ),
    ] {
        let e = parse(&text).unwrap_err();
        assert!(e.contains(needle), "{needle}: {e}");
    }
    // A placement name that would read as another part of a sample's key.
    let payoff = |name: &str| {
        SUITE.replace("figure = \"landscape\"", "figure = \"payoff\"")
            + &format!(
                "[payoff]\nduties = [0.1]\nplacements = [{{ name = \"{name}\", cores = \"auto\" }}]\n"
            )
    };
    assert!(parse(&payoff("edge")).is_ok());
    for name in ["a @ 0.1", "a | 2", "a x 3", " "] {
        let e = parse(&payoff(name)).unwrap_err();
        assert!(
            e.contains("placement name") && e.contains("sample's key"),
            "{name}: {e}"
        );
    }
}

/// One variant or workload spelled two ways would run twice under two
/// keys: refused naming both spellings.
#[test]
fn a_sample_spelled_two_ways_is_refused_naming_both_spellings() {
    let e = parse(&SUITE.replace(
        "[\"sync\", \"async(4)+joint(0.001)\"]",
        "[\"async(4)+joint(0.001)\", \"async( 4 ) + joint( 1e-3 )\"]",
    ))
    .unwrap_err();
    assert!(
        e.contains("`async(4)+joint(0.001)` and `async( 4 ) + joint( 1e-3 )` are one variant"),
        "{e}"
    );
    let e = parse(&SUITE.replace(
        "repetitions = 2",
        "repetitions = 2\nworkloads = [\"hotspot(2, 0.5, 0.5, 0.1)\", \"hotspot(2.0,0.5,0.5,0.1)\"]",
    ))
    .unwrap_err();
    assert!(e.contains("are one workload spelled two ways"), "{e}");
}

/// A suite's name may become part of file names: no separators, no `..`,
/// not empty, no NUL.
#[test]
fn a_suite_name_that_is_a_path_is_refused() {
    for name in ["../escaped", "a/b", "", " ", "a\\u0000b", ".hidden"] {
        let text = SUITE.replace("name = \"t\"", &format!("name = \"{name}\""));
        let e = parse(&text).unwrap_err();
        assert!(
            e.contains("`name`") && e.contains("part of file names"),
            "{name:?}: {e}"
        );
    }
    assert!(parse(&SUITE.replace("name = \"t\"", "name = \"tts-sim.v2\"")).is_ok());
}

#[test]
fn each_sample_has_a_folder_name_of_its_own_made_of_safe_characters() {
    let samples = loaded(SUITE).samples();
    let folders: Vec<String> = samples.iter().map(Sample::folder).collect();
    assert!(
        folders[0].starts_with("sync___quiet___0-"),
        "{}",
        folders[0]
    );
    assert!(
        folders[2].starts_with("async_4_+joint_0.001____quiet___0-"),
        "{}",
        folders[2]
    );
    let unique: std::collections::HashSet<_> = folders.iter().collect();
    assert_eq!(unique.len(), folders.len());
    let safe = |c: char| c.is_ascii_alphanumeric() || ".+-_".contains(c);
    assert!(folders.iter().all(|f| f.chars().all(safe)));
    // Keys that read the same once cleaned keep apart by their hash.
    let mut a = samples[0].clone();
    let mut b = samples[0].clone();
    a.variant = "x(1)".into();
    b.variant = "x)1(".into();
    assert_ne!(a.folder(), b.folder());
}

#[test]
fn a_calibration_file_applies_before_set_and_is_part_of_the_digest() {
    let dir = braid_testkit::scratch_dir("suite-cal");
    let suite = dir.join("s.toml");
    let write_cal = |cell: &str| {
        std::fs::write(
            dir.join("calibration.txt"),
            format!("# braid validate, a date\nsim_cell_ns = {cell}   # what measured it\n\nsim_jitter = 0.05:0.001:0.01\n"),
        )
        .unwrap();
    };
    let text = "name = \"c\"\nfigure = \"tts\"\nengine = \"sim\"\nvariants = [\"async(4)\"]\n\
                calibration = \"calibration.txt\"\n[set]\nsim_jitter = \"none\"\n";
    std::fs::write(&suite, text).unwrap();
    write_cal("0.25");
    let loaded = LoadedSuite::load(&suite, None).unwrap();
    let sample = &loaded.samples()[0];
    assert_eq!(
        loaded.overrides(sample),
        [
            "sim_cell_ns=0.25",
            "sim_jitter=0.05:0.001:0.01",
            "sim_jitter=none"
        ]
    );
    let digest = loaded.digest();
    write_cal("0.3");
    assert_ne!(LoadedSuite::load(&suite, None).unwrap().digest(), digest);
    // Not for real runs, and not a line that is no KEY = VALUE.
    std::fs::write(&suite, text.replace("\"sim\"", "\"run\"")).unwrap();
    let e = LoadedSuite::load(&suite, None).unwrap_err().to_string();
    assert!(e.contains("engine = \"sim\""), "{e}");
    std::fs::write(&suite, text).unwrap();
    std::fs::write(dir.join("calibration.txt"), "sim_cell_ns 0.3\n").unwrap();
    let e = LoadedSuite::load(&suite, None).unwrap_err().to_string();
    assert!(e.contains("line 1 is not KEY = VALUE"), "{e}");
}
