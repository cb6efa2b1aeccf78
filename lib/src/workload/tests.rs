use super::*;

fn spec(text: &str) -> WorkloadSpec {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn every_form_round_trips_through_its_text() {
    for text in [
        "uniform",
        "random(0.5,1.5)",
        "hotspot(4,0.5,0.5,0.1)",
        "moving(4,0.2,0.5,0.1,0.0001,0)",
        "growing(3,0.5,0.5,0.05,0.00002)",
        "map:maps/a b.txt",
    ] {
        assert_eq!(spec(text).to_string(), text);
    }
    assert_eq!(
        spec(" hotspot( 4 , 0.5,0.5 , 0.1 ) ").to_string(),
        "hotspot(4,0.5,0.5,0.1)"
    );
}

#[test]
fn bad_workloads_are_refused_naming_the_problem() {
    for (text, why) in [
        ("lumpy(1)", "no workload named `lumpy`"),
        ("hotspot(4, 0.5, 0.5)", "takes 4 numbers"),
        ("hotspot(0, 0.5, 0.5, 0.1)", "cost factor"),
        ("hotspot(-2, 0.5, 0.5, 0.1)", "cost factor"),
        ("hotspot(nan, 0.5, 0.5, 0.1)", "cost factor"),
        ("hotspot(4, 0.5, 0.5, 1.5)", "radius"),
        ("hotspot(4, 0.5, -0.1, 0.1)", "y -0.1"),
        ("random(2, 1)", "above hi"),
        ("random(0, 1)", "cost factor"),
        ("random(1, inf)", "cost factor"),
        ("moving(4, 0.5, 0.5, 0.1, 2, 0)", "vx"),
        ("growing(4, 0.5, 0.5, 0.1, -0.1)", "dr"),
        ("hotspot(4, x, 0.5, 0.1)", "`x` is not a number"),
        ("hotspot", "NAME(numbers)"),
        ("hotspt(4, 0.5, 0.5, 0.1)", "did you mean `hotspot`?"),
        (
            "hotspot(4, 0.5, 0.5)",
            "hotspot takes 4 numbers (f,x,y,r), got 3",
        ),
        ("map:", "names no file"),
    ] {
        let e = WorkloadSpec::parse(text).unwrap_err().to_string();
        assert!(e.contains(why), "{text}: {e}");
    }
}

/// 2 x 2 domains of 8 x 8 cells, each in 4: a 4 x 4 grid of subdomains.
fn problem() -> Problem {
    Problem::new(8, 4, 4).unwrap()
}

fn factors(text: &str) -> Vec<f64> {
    let p = problem();
    Workload::build(&spec(text), &p, 7)
        .unwrap()
        .factors(p.subs.len(), 0.0)
}

#[test]
fn a_hotspot_in_the_centre_weighs_the_four_middle_subdomains_by_the_cells_it_covers() {
    // 16 x 16 cells, a circle of radius 3.2 about the centre: a quarter of
    // it in each middle subdomain of 4 x 4 cells, none in the others.
    let p = problem();
    let f = factors("hotspot(4, 0.5, 0.5, 0.2)");
    let (rows, cols) = p.sub_grid();
    assert_eq!((rows, cols), (4, 4));
    let quarter = std::f64::consts::PI * 3.2 * 3.2 / 4.0;
    let middle_factor = 1.0 + 3.0 * quarter / 16.0;
    for i in 0..rows {
        for j in 0..cols {
            let middle = (1..=2).contains(&i) && (1..=2).contains(&j);
            let want = if middle { middle_factor } else { 1.0 };
            let got = f[p.sub_at(i, j)];
            assert!(
                (got - want).abs() < 1e-12,
                "({i}, {j}): {got} against {want}"
            );
        }
    }
}

/// Total work over a uniform grid's, at progress `at`.
fn total_work(w: &Workload, p: &Problem, at: f64) -> f64 {
    let cells: f64 = p.subs.iter().map(|g| g.cells() as f64).sum();
    let work: f64 = (p.subs.iter().enumerate())
        .map(|(s, g)| w.factor(s, at) * g.cells() as f64)
        .sum();
    work / cells
}

#[test]
fn a_region_is_the_same_work_whatever_the_decomposition() {
    // 36 domains of 24 x 24 cells, each in 1, 4, 16 or 9 subdomains: the
    // circle covers pi x 0.1^2 of the grid in every one.
    let spec = spec("hotspot(4, 0.5, 0.5, 0.1)");
    let mut seen = Vec::new();
    for subs in [1, 4, 16, 9] {
        let p = Problem::new(24, 36, subs).unwrap();
        let w = Workload::build(&spec, &p, 0).unwrap();
        seen.push(total_work(&w, &p, 0.0));
    }
    // The grid is 144 x 144 cells: radius 14.4, all of it inside.
    let want = 1.0 + 3.0 * std::f64::consts::PI * 14.4 * 14.4 / (144.0 * 144.0);
    for (k, got) in seen.iter().enumerate() {
        assert!(
            (got - want).abs() < 1e-12,
            "decomposition {k}: {got} against {want}"
        );
    }
    assert!((want - 1.094).abs() < 0.001);
}
#[test]
fn overloading_grows_the_grid_by_x_of_a_domain_a_step_a_share_y_of_it_on_n_seeded_domains() {
    // ULBA's Table II: Delta_W = x W(0) / P = a P + m N, with a = x (1 - y)
    // / P and m = x y / N of a domain's starting work.
    let spec = spec("overloading(0.1, 0.2, 0.8)");
    let p = Problem::new(8, 40, 4).unwrap();
    let w = Workload::build(&spec, &p, 3).unwrap();
    assert!(w.moves());
    for progress in [0.0, 1.0, 7.5] {
        let got = total_work(&w, &p, progress);
        let want = 1.0 + 0.2 / 40.0 * progress;
        assert!(
            (got - want).abs() < 1e-12,
            "at {progress}: {got} against {want}"
        );
    }
    // 4 of 40 domains overload, each subdomain of theirs alike.
    let rate = |s: usize| w.factor(s, 1.0) - 1.0;
    let a = 0.2 * (1.0 - 0.8) / 40.0;
    let over: Vec<usize> = (0..40).filter(|&d| rate(d * 4) > a + 1e-12).collect();
    assert_eq!(over.len(), 4, "{over:?}");
    for &d in &over {
        for k in 0..4 {
            assert!((rate(d * 4 + k) - (a + 0.2 * 0.8 / 4.0)).abs() < 1e-12);
        }
    }
    // Another seed picks other domains.
    let other = Workload::build(&spec, &p, 4).unwrap();
    assert_ne!(w.factors(160, 1.0), other.factors(160, 1.0));
    for bad in [
        "overloading(0, 0.1, 0.9)",
        "overloading(1, 0.1, 0.9)",
        "overloading(0.1, 0, 0.9)",
        "overloading(0.1, 0.1, 1.5)",
    ] {
        assert!(bad.parse::<WorkloadSpec>().is_err(), "{bad}");
    }
}

#[test]
fn random_factors_are_seeded_and_within_their_bounds() {
    let a = factors("random(0.5, 1.5)");
    assert!(a.iter().all(|&f| (0.5..=1.5).contains(&f)), "{a:?}");
    assert_eq!(a, factors("random(0.5, 1.5)"));
    let p = problem();
    let other = Workload::build(&spec("random(0.5, 1.5)"), &p, 8).unwrap();
    assert_ne!(a, other.factors(p.subs.len(), 0.0));
    assert!(a.iter().any(|&f| f < 0.9) && a.iter().any(|&f| f > 1.1));
}

#[test]
fn a_moving_hotspot_follows_progress_and_a_growing_one_widens() {
    let p = problem();
    let n = p.subs.len();
    // From the west edge's middle, a quarter of the grid per 100 iterations;
    // radius 1.6 cells about the centre of a subdomain of 4 x 4.
    let w = Workload::build(&spec("moving(2, 0.125, 0.375, 0.1, 0.0025, 0)"), &p, 0).unwrap();
    assert!(w.moves());
    let hot = |p: f64| -> Vec<usize> { (0..n).filter(|&s| w.factor(s, p) > 1.0).collect() };
    assert_eq!(hot(0.0), [p.sub_at(1, 0)]);
    assert_eq!(hot(100.0), [p.sub_at(1, 1)]);
    assert_eq!(hot(300.0), [p.sub_at(1, 3)]);
    assert_eq!(hot(400.0), [p.sub_at(1, 0)], "it wraps around");
    // Across the east edge it is in two subdomains, and the same work.
    let across = hot(350.0);
    assert_eq!(
        across,
        [p.sub_at(1, 0), p.sub_at(1, 3)],
        "half on each side"
    );
    let whole = total_work(&w, &p, 0.0);
    assert!((total_work(&w, &p, 350.0) - whole).abs() < 1e-12);
    let g = Workload::build(&spec("growing(2, 0.5, 0.5, 0.0, 0.001)"), &p, 0).unwrap();
    let count = |p: f64| (0..n).filter(|&s| g.factor(s, p) > 1.0).count();
    assert_eq!(count(0.0), 0);
    assert_eq!(count(200.0), 4);
    assert_eq!(count(1000.0), 16);
    assert!(
        !Workload::build(&spec("hotspot(2, 0.5, 0.5, 0.2)"), &p, 0)
            .unwrap()
            .moves()
    );
}

fn scratch(name: &str) -> braid_testkit::Scratch {
    braid_testkit::scratch_dir(&format!("workload-{name}"))
}

#[test]
fn a_map_gives_each_subdomain_its_value_north_row_first() {
    let p = problem();
    let dir = scratch("map");
    let text = dir.join("m.txt");
    std::fs::write(
        &text,
        "# north\n1 2 3 4\n1,1,1,1\n5 1 1 1\n1 1 1 0.5 # south\n",
    )
    .unwrap();
    let w = Workload::build(&WorkloadSpec::Map(text), &p, 0).unwrap();
    assert_eq!(w.factor(p.sub_at(0, 1), 0.0), 2.0);
    assert_eq!(w.factor(p.sub_at(2, 0), 0.0), 5.0);
    assert_eq!(w.factor(p.sub_at(3, 3), 0.0), 0.5);
    assert_eq!(w.least_factor(), 0.5);
    // The same grid as .npy.
    let grid = ndarray::Array2::from_shape_fn((4, 4), |(i, j)| (i * 4 + j + 1) as f64);
    let npy = dir.join("m.npy");
    ndarray_npy::write_npy(&npy, &grid).unwrap();
    let w = Workload::build(&WorkloadSpec::Map(npy), &p, 0).unwrap();
    assert_eq!(w.factor(p.sub_at(3, 2), 0.0), 15.0);
}

#[test]
fn a_coarser_map_is_spread_over_its_cells_and_a_finer_one_averaged() {
    // 16 x 16 cells in 4 x 4 subdomains of 4 x 4.
    let p = problem();
    let dir = scratch("spread");
    let build = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        Workload::build(&WorkloadSpec::Map(f), &p, 0).unwrap()
    };
    // 1 x 2: the west half at 3, the east at 1.
    let halves = build("halves.txt", "3 1\n");
    for i in 0..4 {
        assert_eq!(halves.factor(p.sub_at(i, 1), 0.0), 3.0);
        assert_eq!(halves.factor(p.sub_at(i, 2), 0.0), 1.0);
    }
    // 1 x 3: a value every 16/3 cells; subdomain column 1 (cells 4-8)
    // holds 4/3 of the first and 8/3 of the second.
    let thirds = build("thirds.txt", "4 1 1\n");
    let want = (4.0 * 4.0 / 3.0 + 8.0 / 3.0) / 4.0;
    assert!((thirds.factor(p.sub_at(0, 1), 0.0) - want).abs() < 1e-12);
    // 8 x 8 (two values a side per subdomain): the mean of its four.
    let fine: String = (0..8)
        .map(|i| {
            (0..8)
                .map(|j| format!("{} ", 1 + (i + j) % 2 * 2))
                .collect::<String>()
                + "\n"
        })
        .collect();
    let fine = build("fine.txt", &fine);
    assert!((0..16).all(|s| (fine.factor(s, 0.0) - 2.0).abs() < 1e-12));
    // Whatever the map, the total work is the map's mean over the grid.
    let q = Problem::new(8, 4, 16).unwrap();
    let f = dir.join("thirds.txt");
    let on_q = Workload::build(&WorkloadSpec::Map(f), &q, 0).unwrap();
    for (w, p) in [(&thirds, &p), (&on_q, &q)] {
        assert!((total_work(w, p, 0.0) - 2.0).abs() < 1e-12);
    }
}

#[test]
fn a_map_of_the_wrong_shape_or_values_is_refused() {
    let p = problem();
    let dir = scratch("badmap");
    for (text, why) in [
        (
            "1 1 1 1\n1 1 1 1\n1 1 1 1\n1 1 1\n",
            "row 4 has 3 values and row 1 has 4",
        ),
        ("# nothing\n", "a map with no values"),
        (
            "1 1 1 1\n1 1 x 1\n1 1 1 1\n1 1 1 1\n",
            "line 2: `x` is not a number",
        ),
        (
            "1 1 1 1\n1 1 0 1\n1 1 1 1\n1 1 1 1\n",
            "row 2, column 3: 0 is not a cost factor",
        ),
    ] {
        let f = dir.join("m.txt");
        std::fs::write(&f, text).unwrap();
        let e = Workload::build(&WorkloadSpec::Map(f), &p, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{text:?}: {e}");
    }
    let missing = Workload::build(&WorkloadSpec::Map(dir.join("none.txt")), &p, 0);
    assert!(matches!(missing, Err(MapError::Read(_))));
    let not_npy = dir.join("m.npy");
    std::fs::write(&not_npy, "1 1 1 1").unwrap();
    let e = Workload::build(&WorkloadSpec::Map(not_npy), &p, 0).unwrap_err();
    assert!(e.to_string().contains(".npy"), "{e}");
}

#[test]
fn every_named_workload_in_the_one_list_parses_and_is_hinted() {
    let forms = super::forms();
    for (name, params) in super::NAMED {
        // Numbers that every bound accepts (a factor of 2, a centre of
        // 0.5, a radius or rate of 0.1, lo = 1 < hi = 2, or shares of 0.1).
        let args = vec!["1"; params.len()].join(",");
        let args = if *name == "random" {
            "1,2".into()
        } else {
            args
        };
        let text = format!("{name}({args})");
        let spec = WorkloadSpec::parse(&text).or_else(|_| {
            let ok = vec!["0.1"; params.len() - 1].join(",");
            WorkloadSpec::parse(&format!("{name}(2,{ok})"))
        });
        // Shares only (overloading's v, x and y).
        let spec = spec.or_else(|_| {
            WorkloadSpec::parse(&format!("{name}({})", vec!["0.1"; params.len()].join(",")))
        });
        assert!(spec.is_ok(), "{text}: {spec:?}");
        assert!(
            forms.contains(&format!("{name}({})", params.join(","))),
            "{forms}"
        );
    }
    for form in ["uniform", "map:FILE", "lbdata"] {
        assert!(forms.contains(form), "{form} missing: {forms}");
    }
}

#[test]
fn overloading_threads_reads_back_as_written_and_starts_as_overloading() {
    let text = "overloading-threads(0.1,0.2,0.8)";
    let threads = spec(text);
    assert_eq!(threads.to_string(), text);
    assert_eq!(
        spec("overloading(0.1,0.2,0.8)").to_string(),
        "overloading(0.1,0.2,0.8)"
    );
    // The same picks and rates: until a subdomain moves (which only the
    // simulator follows, `sim::growth`), the same factors.
    let p = Problem::new(8, 40, 4).unwrap();
    let tied = Workload::build(&threads, &p, 3).unwrap();
    let cells = Workload::build(&spec("overloading(0.1,0.2,0.8)"), &p, 3).unwrap();
    assert!(tied.thread_growth().is_some() && cells.thread_growth().is_none());
    assert_eq!(tied.factors(160, 7.5), cells.factors(160, 7.5));
    assert!(tied.greatest_factor().is_infinite(), "braid run refuses it");
}
