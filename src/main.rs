use clap::Parser;

fn main() {
    let cli = privalign::cli::Cli::parse();
    if let Err(err) = privalign::cli::run(cli) {
        // The reader of our stdout has gone (`… | head -1`): stop quietly.
        if privalign::out::is_broken_pipe(&err) {
            std::process::exit(privalign::error::EXIT_OK);
        }
        eprintln!("error: {err:#}");
        std::process::exit(privalign::error::exit_code(&err));
    }
}
