use super::*;
use crate::noise::{Level, NoiseForm};
use crate::policy::Homes;

#[test]
fn auto_threads_take_every_selected_core() {
    // A machine larger than this one: planned, as runs on it are, with
    // oversubscribe (a real run refuses more threads than it may use).
    let cfg = Config {
        oversubscribe: true,
        ..Config::default()
    };
    let plan = Plan::new(&cfg, &Topology::uniform(2, 3)).unwrap();
    assert_eq!(plan.config.threads, AutoOr::Value(6));
    assert_eq!(plan.placement.sockets, vec![0, 0, 0, 1, 1, 1]);
    assert_eq!(plan.settings.update_budget, 5000 * 4);
}

#[test]
fn more_threads_than_cores_need_oversubscribe() {
    let mut cfg = Config {
        threads: AutoOr::Value(3),
        ..Config::default()
    };
    let e = Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap_err();
    assert!(e.to_string().contains("oversubscribe"), "{e}");
    cfg.oversubscribe = true;
    assert!(Plan::new(&cfg, &Topology::uniform(1, 2)).is_ok());
}

#[test]
fn auto_noise_goes_on_the_core_of_the_source_domains_thread() {
    let cfg = Config {
        noise: NoiseForm::Thread,
        threads: AutoOr::Value(4),
        oversubscribe: true,
        ..Config::default()
    };
    // 4 threads tile 2 x 2; the north row holds domains 0 and 1, and the
    // middle one of that row is domain 1 -> thread 1 -> core 1.
    let plan = Plan::new(&cfg, &Topology::uniform(2, 2)).unwrap();
    let noise = plan.noise.unwrap();
    assert_eq!(noise.parasites.len(), 1);
    assert_eq!(noise.parasites[0].core, plan.placement.cores[1]);
    assert_eq!(noise.parasites[0].level, Level::Iterations(10_000));
}

#[test]
fn noise_on_a_missing_core_is_named() {
    let mut cfg = Config {
        noise: NoiseForm::Process,
        ..Config::default()
    };
    cfg.apply_override("noise_cores=1:0.19, 7").unwrap();
    let e = Plan::new(&cfg, &Topology::uniform(1, 2)).unwrap_err();
    assert!(e.to_string().contains("core 7"), "{e}");
}

#[test]
fn a_run_bigger_than_the_memory_limit_is_refused_before_it_allocates() {
    let mut cfg = Config {
        threads: AutoOr::Value(1),
        ..Config::default()
    };
    let mut plan = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap();
    // 300 x 300 in 4 pieces: 2 buffers of ~151^2 cells each, 3 grids.
    let needed = plan.memory_needed(Numbers::Held).0;
    assert!((3_500_000..4_500_000).contains(&needed), "{needed}");
    assert!(plan.memory_needed(Numbers::Counted).0 < 10_000);
    plan.config.memory_limit = AutoOr::Value(0.001); // 1 MiB
    let e = plan.check_memory(Numbers::Held).unwrap_err().to_string();
    assert!(e.contains("memory_limit") && e.contains("MiB"), "{e}");
    assert!(plan.check_memory(Numbers::Counted).is_ok());
    // A plan is checked when it is built: it is refused there.
    cfg.memory_limit = AutoOr::Value(0.001);
    let e = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap_err();
    assert!(matches!(e, PlanError::Memory { .. }), "{e}");
    // Two million cells a side: about 100 TB, whatever the machine has.
    cfg.domain_size = 2_000_000;
    cfg.memory_limit = AutoOr::Value(1e9);
    let mut plan = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap();
    plan.config.memory_limit = AutoOr::Auto;
    if memory::available_memory().is_some() {
        let e = plan.check_memory(Numbers::Held).unwrap_err().to_string();
        assert!(e.contains("available"), "{e}");
    }
}

#[test]
fn too_many_subdomains_are_refused_before_the_geometry_is_built() {
    let cfg = Config {
        threads: AutoOr::Value(64),
        subdomains: 1 << 19,
        domain_size: 1 << 10,
        oversubscribe: true,
        ..Config::default()
    };
    let e = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap_err();
    assert!(matches!(e, PlanError::TooManySubdomains { .. }), "{e}");
}

#[test]
fn a_split_that_does_not_fit_is_named() {
    let cfg = Config {
        domain_size: 2,
        subdomains: 9,
        ..Config::default()
    };
    let e = Plan::new(&cfg, &Topology::uniform(1, 1)).unwrap_err();
    assert!(e.to_string().contains("subdomains"), "{e}");
}

fn checked(text: &str) -> Result<Config, PlanError> {
    let mut c = Config::default();
    c.apply_text(text, std::path::Path::new("test.txt"))?;
    checks::cross_keys(&c)?;
    Ok(c)
}

#[test]
fn a_strategy_without_a_balancer_scope_is_refused_not_ignored() {
    let e = checked("lb_strategy = steal\n").unwrap_err().to_string();
    assert!(e.contains("lb_strategy") && e.contains("balancer"), "{e}");
    let c = checked("lb_strategy = steal\nbalancer = split\n").unwrap();
    assert_eq!(c.variant().to_string(), "async(4)+steal-split(0.001)");
    // A label sets the whole balancer, strategy included.
    let mut c = c;
    c.apply_variant("async(4)").unwrap();
    checks::cross_keys(&c).unwrap();
    c.apply_variant("async(4)+joint(0.001)").unwrap();
    assert_eq!(c.lb_strategy.kind, crate::variant::Strategy::PROGRESSIVE);
}

#[test]
fn impossible_combinations_are_rejected() {
    for (text, key) in [
        ("mode = ssync\nbalancer = joint", "balancer"),
        (
            "balancer = joint\nlb_interval = degradation",
            "bulk-synchronous",
        ),
        ("mode = sync\nstaleness = 3", "staleness"),
        (
            "noise = trace\nnoise_cores = 1:x.trace, 2",
            "core 2 as CORE:FILE",
        ),
        ("noise = trace", "core auto as CORE:FILE"),
        ("low_threshold = 6\nhigh_threshold = 6", "low_threshold"),
        ("balancer = split\nhigh_threshold = 4", "high_threshold"),
        (
            "balancer = joint\nsubdomains = 8\nlow_threshold = 2\nhigh_threshold = 6",
            "never",
        ),
        ("balancer = joint\nlow_threshold = 4", "low_threshold"),
        ("threads = 2\nstall = 2@1:1", "stall"),
        ("threads = 2\nslow = 5:1", "slow"),
        (
            "noise = thread\nnoise_sleep_us = 0\nnoise_work_iters = 0",
            "noise_sleep_us",
        ),
    ] {
        let e = checked(text).unwrap_err().to_string();
        assert!(e.contains(key), "{text:?} -> {e}");
    }
}

#[test]
fn a_sync_run_is_balanced_at_its_barrier_in_the_simulator_and_refused_on_real_threads() {
    let cfg = checked("mode = sync\nbalancer = joint\nthreads = 2\n").unwrap();
    assert_eq!(cfg.variant().to_string(), "sync(4)+joint(0.001)");
    let e = Plan::new(&cfg, &Topology::uniform(1, 2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("balancer") && e.contains("braid sim"), "{e}");
    let plan = Plan::simulated(&cfg).unwrap();
    assert!(matches!(plan.settings.scheme, Scheme::Bulk { .. }));
    assert_eq!(plan.settings.scheme.mode(), Mode::Sync);
}

/// `cfg` simulated on the largest machine braid takes: 2^24 cores.
fn on_2_to_the_24_cores(cfg: Config) -> Config {
    let t = crate::topology::SyntheticTopology::parse(
        "host:262144 pack:2 core:32",
        crate::limits::MAX_SIM_CPUS,
    )
    .unwrap();
    Config {
        sim_topology: crate::topology::SimTopology::Synthetic(t),
        ..cfg
    }
}

#[test]
fn a_simulated_machine_with_more_threads_than_subdomains_allow_is_refused() {
    // 2^24 cores of 4 subdomains: 2^26 subdomains, refused by the count
    // (before the machine's 2^24 cores are listed, which takes gigabytes).
    let cfg = on_2_to_the_24_cores(Config::default());
    let e = Plan::simulated(&cfg).unwrap_err();
    assert!(matches!(e, PlanError::TooManySubdomains { .. }), "{e}");
}

#[test]
fn subdomains_that_would_not_fit_in_memory_are_refused_before_they_are_built() {
    // 2^24 cores of one subdomain each: within the count, but 2^24
    // subdomains need gigabytes; with 1 GiB allowed the plan is refused
    // by its memory, naming the estimate.
    let cfg = on_2_to_the_24_cores(Config {
        subdomains: 1,
        memory_limit: AutoOr::Value(1.0),
        ..Config::default()
    });
    let e = Plan::simulated(&cfg).unwrap_err();
    assert!(matches!(e, PlanError::Memory { .. }), "{e}");
    // The same count on a machine given the memory passes this check (a
    // run of 2^24 threads is not built here: only the plan's first steps).
    assert!(super::memory::check_subdomains(&Config::default(), 1 << 10).is_ok());
}

/// The replayed traces of a plan's parasites.
fn traces(plan: &Plan) -> Vec<Arc<braid_noise::trace::Trace>> {
    let noise = plan.noise.as_ref().expect("a noisy plan");
    noise
        .parasites
        .iter()
        .map(|p| match &p.level {
            Level::Trace(r) => r.trace.clone(),
            other => panic!("not a trace: {other:?}"),
        })
        .collect()
}

#[test]
fn a_trace_is_read_once_while_held_and_again_once_its_file_changes() {
    let dir = braid_testkit::scratch_dir("plan-trace-held");
    let file = dir.join("t.trace");
    std::fs::write(&file, "100\t10\n500\t20\n# duration_ns 1000\n").unwrap();
    let mut cfg = Config::default();
    let t = file.display();
    cfg.apply_overrides(&["noise=thread", &format!("noise_cores=0:{t},1:{t}")])
        .unwrap();
    let first = Plan::simulated(&cfg).unwrap();
    let held = traces(&first);
    // Two cores of one plan, and a second plan while the first lives: one
    // copy.
    assert!(Arc::ptr_eq(&held[0], &held[1]));
    let second = Plan::simulated(&cfg).unwrap();
    assert!(Arc::ptr_eq(&held[0], &traces(&second)[0]));
    // A changed file (another length) is read again, not taken from memory.
    std::fs::write(&file, "100\t10\n500\t30\n# duration_ns 1000\n").unwrap();
    let changed = traces(&Plan::simulated(&cfg).unwrap());
    assert!(!Arc::ptr_eq(&held[0], &changed[0]));
    assert_eq!(changed[0].detours[1].duration_ns, 30);
}

#[test]
fn a_balancer_knows_each_subdomains_home_and_prices_leaving_it_only_when_asked() {
    let plan_of = |overrides: &[&str]| {
        let mut cfg = Config::default();
        let mut all = vec!["balancer=split".to_string(), "domain_size=150".into()];
        all.extend(overrides.iter().map(|o| o.to_string()));
        cfg.apply_overrides(&all).unwrap();
        Plan::simulated(&cfg).unwrap()
    };
    let homes = |plan: &Plan| plan.settings.scheme.balancer().unwrap().homes;
    // By default: homes (4 subdomains a domain), no price.
    let plain = plan_of(&[]);
    assert_eq!(
        homes(&plain),
        Homes {
            per_domain: 4,
            away_cost: 0.0
        }
    );
    // auto: the cost model's at 75 x 75 cells (update 100 ns shared by 4,
    // 18 ns a row shared by the 2 side by side, 0.29 ns a cell).
    let auto = homes(&plan_of(&["lb_away_cost=auto"]));
    let (home, away) = (
        25.0 + 75.0 * 9.0 + 5625.0 * 0.29,
        100.0 + 75.0 * 18.0 + 5625.0 * 0.29,
    );
    assert!(
        (auto.away_cost - (away / home - 1.0)).abs() < 1e-12,
        "{auto:?}"
    );
    assert_eq!(homes(&plan_of(&["lb_away_cost=0.5"])).away_cost, 0.5);
}
