//! Standard output that survives a closed pipe.
//!
//! `println!` panics when stdout is a pipe whose reader has gone
//! (`privalign reproduce … | head -1`, `privalign budget | true`). privalign
//! writes its stdout through [`outln!`]/[`out!`] instead, which return the
//! write error; `main` recognises a broken pipe anywhere in an error chain
//! ([`is_broken_pipe`]) and exits quietly with status 0, as ripgrep does —
//! the reader asked for no more output, which is not a failure.

use std::io::Write;

/// Write formatted text to stdout; `Err` (not a panic) on a closed pipe.
pub fn write_stdout(args: std::fmt::Arguments) -> std::io::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_fmt(args)?;
    o.flush()
}

/// `print!` that returns `std::io::Result<()>` instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` that returns `std::io::Result<()>` instead of panicking.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Whether `err` was caused by writing to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
