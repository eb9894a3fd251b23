//! Error kinds and the process exit codes they map to.
//!
//! privalign uses `anyhow` for context chains everywhere; the only thing the
//! binary needs to know about an error is whether the *user* can fix it by
//! changing their input or invocation (exit code 2) or whether the run itself
//! failed (exit code 1). A function that detects bad input wraps its message in
//! [`InputError`]; `main` walks the chain looking for it.

/// Exit code for a successful run.
pub const EXIT_OK: i32 = 0;
/// Exit code when the run itself failed (I/O error, internal failure).
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for bad usage or bad input (clap also uses 2 for usage errors).
pub const EXIT_BAD_INPUT: i32 = 2;

/// An error the user fixes by changing their input files, config or flags.
///
/// The message must name the offending file, row, prompt or key, and say how to
/// fix it: "responses.parquet: row 17 (prompt p3, response 4): `correct` is 1.5,
/// outside [0, 1]; correctness must be a bool or a number in [0, 1]".
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

/// Build an `anyhow::Error` carrying an [`InputError`].
pub fn input_error(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(InputError(msg.into()))
}

/// Return early with an [`InputError`], formatted like `anyhow::bail!`.
#[macro_export]
macro_rules! bail_input {
    ($($arg:tt)*) => {
        return Err($crate::error::input_error(format!($($arg)*)))
    };
}

/// The exit code an error should produce: 2 when any error in its chain is an
/// [`InputError`], 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    if err.chain().any(|e| e.is::<InputError>()) {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn input_errors_map_to_two_even_under_context() {
        let e: anyhow::Result<()> = Err(input_error("bad row"));
        let e = e.context("while ingesting x").unwrap_err();
        assert_eq!(exit_code(&e), EXIT_BAD_INPUT);
        let io = anyhow::anyhow!("disk full");
        assert_eq!(exit_code(&io), EXIT_FAILURE);
    }
}
