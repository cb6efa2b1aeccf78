//! `braid-noise`: the parasite on its own. See `braid-noise --help`.

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "braid-noise",
    version,
    about = "A pinned parasite that alternates sleeping and bursts of sum = sum * a + b"
)]
struct Cli {
    #[command(flatten)]
    args: braid_noise::cli::NoiseArgs,
}

fn main() -> std::process::ExitCode {
    braid_noise::cli::main_with(Cli::parse().args)
}
