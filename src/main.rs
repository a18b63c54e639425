#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    verdict::cli::run()
}
