//! braid as a library: plan a run, run it on an engine, read the report.
//!
//! Compares async(4) with and without Algorithm 1's balancer on the
//! simulator's 2 x 18 cores, quiet and with a 50% parasite on the centre
//! core, by spread and iteration rate. Run it with
//! `cargo run --release --example quiet_vs_noisy`.

use braid::{Config, Plan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "{:<24} {:<8} {:>8} {:>14}",
        "variant", "noise", "spread", "iterations/s"
    );
    for variant in ["async(4)", "async(4)+split(0.001)"] {
        for noise in ["none", "thread"] {
            let mut config = Config::default();
            config.apply_variant(variant)?;
            config.apply_overrides(&["domain_size=24", "max_iterations=2000"])?;
            if noise == "thread" {
                // Thread 14's domain is in the centre.
                config.apply_overrides(&["noise=thread", "noise_cores=14:0.5"])?;
            }
            let plan = Plan::simulated(&config)?; // Plan::new(&config, &Topology::detect()?) for real threads
            let (report, _outcome) = braid::run(&plan)?;
            println!(
                "{:<24} {:<8} {:>8} {:>14.0}",
                report.variant, noise, report.spread, report.iteration_rate
            );
        }
    }
    Ok(())
}
