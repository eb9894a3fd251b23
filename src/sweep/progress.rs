//! A sweep's progress: a bar on a terminal, plain status lines otherwise.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// Status lines: through the bar on a terminal, plain stderr lines otherwise.
pub(crate) struct Reporter {
    pub(crate) bar: ProgressBar,
    drawing: bool,
}

impl Reporter {
    pub(crate) fn new(total: u64, want: bool) -> Self {
        let drawing = want && std::io::stderr().is_terminal();
        let bar = if drawing {
            let b = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} cells  {rate}  ETA {eta}  {msg}",
            ) {
                let rate = |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} cells/s", s.per_sec());
                };
                b.set_style(style.with_key("rate", rate).progress_chars("=> "));
            }
            b
        } else {
            ProgressBar::hidden()
        };
        Self { bar, drawing }
    }

    /// A status line; on a terminal the bar shows only its part before the
    /// first colon (e.g. "dataset `demo`, reward model `oasst`") so it fits
    /// on one line.
    pub(crate) fn stage(&self, msg: String) {
        if self.drawing {
            let short = msg.split(':').next().unwrap_or(&msg).to_string();
            self.bar.set_message(short);
        } else {
            eprintln!("sweep: {msg}");
        }
    }
}
