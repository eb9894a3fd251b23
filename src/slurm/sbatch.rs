//! Talking to Slurm: `sbatch --parsable` to submit, `squeue` to see what is
//! still queued. Only through the commands a user would type; privalign has
//! no scheduler, poller or process pool of its own.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::Command;

use crate::bail_input;

/// The job id in `sbatch --parsable`'s output, `ID` or `ID;CLUSTER`.
pub fn parse_job_id(stdout: &str) -> Option<String> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let id = line.split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

fn run(cmd: &mut Command, what: &str) -> Result<std::process::Output> {
    match cmd.output() {
        Ok(o) => Ok(o),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail_input!(
            "`{what}` is not on PATH: `privalign slurm` submits through Slurm's own commands; run it on a node where `sbatch` works (a login node), or pass --dry-run to print the scripts"
        ),
        Err(e) => Err(e).with_context(|| format!("running {what}")),
    }
}

/// Submit `script` with `sbatch --parsable [extra…]` and return the job id.
/// sbatch's refusal (an unknown partition, account or time limit) is an
/// input error carrying its message.
pub fn submit(script: &Path, extra: &[String]) -> Result<String> {
    let out = run(
        Command::new("sbatch")
            .arg("--parsable")
            .args(extra)
            .arg(script),
        "sbatch",
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail_input!(
            "sbatch {} refused the job ({}): {}",
            script.display(),
            out.status,
            stderr.trim()
        );
    }
    parse_job_id(&stdout).with_context(|| {
        format!(
            "sbatch --parsable {} printed no job id: {:?} {:?}",
            script.display(),
            stdout.trim(),
            stderr.trim()
        )
    })
}

/// Job ids (array job id and plain job id of every queued or running job,
/// `squeue -h -o '%F %A'`) — to refuse a `--resume` while a previous
/// submission's jobs are still in the queue.
pub fn queued_job_ids() -> Result<Vec<String>> {
    let out = run(
        Command::new("squeue").args([
            "-h",
            "-t",
            "PENDING,RUNNING,CONFIGURING,COMPLETING,REQUEUED,RESIZING,SUSPENDED",
            "-o",
            "%F %A",
        ]),
        "squeue",
    )?;
    if !out.status.success() {
        anyhow::bail!(
            "squeue failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsable_output() {
        assert_eq!(parse_job_id("123\n").as_deref(), Some("123"));
        assert_eq!(parse_job_id("123;cluster-a\n").as_deref(), Some("123"));
        assert_eq!(parse_job_id("\n 77 \n").as_deref(), Some("77"));
        assert_eq!(parse_job_id("Submitted batch job 5"), None);
        assert_eq!(parse_job_id(""), None);
    }
}
