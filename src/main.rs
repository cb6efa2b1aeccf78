fn main() -> std::process::ExitCode {
    braid::cli::main()
}
