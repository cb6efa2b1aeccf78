//! The `braid` binary: the command line of the `braid-cli` crate.

fn main() -> std::process::ExitCode {
    braid_cli::main()
}
