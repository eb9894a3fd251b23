use clap::Parser;

fn main() {
    let cli = privalign::cli::Cli::parse();
    if let Err(err) = privalign::cli::run(cli) {
        eprintln!("error: {err:#}");
        std::process::exit(privalign::error::exit_code(&err));
    }
}
