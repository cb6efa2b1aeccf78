fn main() -> std::process::ExitCode {
    braid::main()
}
