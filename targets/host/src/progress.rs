//! Progress bars for long verbs (unpack, pack, load of big files), counted in bytes.
//!
//! A bar is drawn only when stderr is a terminal: in a pipe or under a test nothing is
//! printed, so scripts and logs see only results, errors and warnings. Without the `progress`
//! feature (a binding's build) no bar is ever drawn and indicatif is not linked.

use std::io::IsTerminal;

#[cfg(feature = "progress")]
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
#[cfg(not(feature = "progress"))]
use quiet::ProgressBar;

/// Files smaller than this finish before a bar would be worth drawing.
pub const MIN_BYTES_FOR_BAR: u64 = 4 * 1024 * 1024;

/// A byte-counting progress bar, or nothing.
#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A progress that never draws.
    pub fn hidden() -> Self {
        Self { bar: None }
    }

    /// A bar labelled `what` for `total` bytes, drawn only when stderr is a terminal and
    /// the job is big enough to need one.
    pub fn for_bytes(what: &str, total: u64) -> Self {
        if total < MIN_BYTES_FOR_BAR || !std::io::stderr().is_terminal() {
            return Self::hidden();
        }
        #[cfg(not(feature = "progress"))]
        {
            let _ = what;
            Self::hidden()
        }
        #[cfg(feature = "progress")]
        Self::drawn(what, total)
    }

    #[cfg(feature = "progress")]
    fn drawn(what: &str, total: u64) -> Self {
        // Cleared when the last handle drops, on success or on error alike.
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_finish(ProgressFinish::AndClear);
        let style = ProgressStyle::with_template("{msg:>8} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_owned());
        Self { bar: Some(bar) }
    }

    /// Sets the total.
    pub fn set_length(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
        }
    }

    /// Sets the count done.
    pub fn set_position(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }

    /// Adds to the count done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// How long a job over many items runs before [`ItemProgress`] draws its line: a cache that is
/// checked within it shows none.
pub const ITEMS_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// A count of items done (`neff cache`'s entries, `neff check`'s files) on one line of stderr,
/// drawn once the job has run for [`ITEMS_DELAY`] and only when stderr is a terminal.
pub struct ItemProgress {
    bar: Option<ProgressBar>,
    start: std::time::Instant,
    shown: bool,
}

impl ItemProgress {
    /// A count labelled `what` of `total` items; nothing is drawn unless `show` and stderr is
    /// a terminal.
    pub fn new(what: &str, total: u64, show: bool) -> Self {
        let start = std::time::Instant::now();
        if !show || !std::io::stderr().is_terminal() {
            return Self { bar: None, start, shown: false };
        }
        #[cfg(not(feature = "progress"))]
        {
            let _ = (what, total);
            Self { bar: None, start, shown: false }
        }
        #[cfg(feature = "progress")]
        Self::drawn(what, total, start)
    }

    #[cfg(feature = "progress")]
    fn drawn(what: &str, total: u64, start: std::time::Instant) -> Self {
        // Hidden until the delay has passed; cleared when it drops, on success or on error.
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
            .with_finish(ProgressFinish::AndClear);
        let style = ProgressStyle::with_template("{msg:>8} [{bar:30}] {pos}/{len} {per_sec} eta {eta}")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(what.to_owned());
        Self { bar: Some(bar), start, shown: false }
    }

    /// One more item done.
    pub fn inc(&mut self) {
        let Some(bar) = &self.bar else { return };
        bar.inc(1);
        if !self.shown && self.start.elapsed() >= ITEMS_DELAY {
            self.shown = true;
            #[cfg(feature = "progress")]
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Removes the line from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The bar of a build without the `progress` feature: a type with no values, so every bar
/// method above compiles and none can run.
#[cfg(not(feature = "progress"))]
mod quiet {
    /// No bar.
    #[derive(Clone)]
    pub enum ProgressBar {}

    impl ProgressBar {
        pub fn set_length(&self, _total: u64) {
            match *self {}
        }
        pub fn set_position(&self, _done: u64) {
            match *self {}
        }
        pub fn inc(&self, _n: u64) {
            match *self {}
        }
        pub fn finish_and_clear(&self) {
            match *self {}
        }
    }
}
