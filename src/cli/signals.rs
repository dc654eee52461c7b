//! SIGINT / SIGTERM, in two regimes.
//!
//! - **Before the run writes anything** (config, input loading, preprocessing such as a
//!   hierarchy build, device set-up): the process ends at once with 128 + the signal, saying
//!   that nothing was written. There is nothing to resume, so there is no reason to wait.
//! - **From the moment the output directory is touched** ([`begin_writing`], called by the
//!   runtime just before it locks the directory): the first signal stops the run after its
//!   running chunks (the journal is written out); a second one, or running chunks that outlast
//!   the grace period, end the process at once. The journal stays valid either way: every entry
//!   carries its checksum, and a torn last entry is dropped when resuming.
//!
//! The switch between the two is one compare-and-swap on [`PHASE`], so a signal that arrives
//! as the run starts writing is handled by exactly one regime.
//!
//! Ending "at once" is [`end_now`]: `_exit`, not `std::process::exit`. The latter runs the C
//! library's exit handlers and static destructors (the OpenCL ICD loader's, PoCL's, LLVM's)
//! while other threads still run; a device discovery thread inside the ICD then touches
//! what they tore down and the process dies of a segmentation fault instead of ending with the
//! signal's status. `_exit` ends every thread at once and runs nothing.

use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::time::Duration;

/// How long running chunks get to finish after the first signal.
pub(super) const GRACE: Duration = Duration::from_secs(10);

/// Nothing written yet: a signal ends the process at once.
const PREPARING: u8 = 0;
/// The output directory is being written: a signal stops the run cleanly.
const WRITING: u8 = 1;
/// A signal came while preparing: the process is ending.
const ENDING: u8 = 2;

static PHASE: AtomicU8 = AtomicU8::new(PREPARING);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static STOP: AtomicBool = AtomicBool::new(false);

/// The exit code for the signal received: 128 + its number (130 for SIGINT).
pub(super) fn exit_code() -> u8 {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => 130,
        s => (128 + s) as u8,
    }
}

/// Called by the runtime before it first touches the output directory: from now on a signal
/// stops the run cleanly. `false` when a signal already came (the process is ending).
pub(super) fn begin_writing() -> bool {
    match PHASE.compare_exchange(PREPARING, WRITING, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => true,
        Err(p) => p == WRITING,
    }
}

/// Watch for the signals on a thread of its own (once per process); returns the flag the run
/// polls.
pub(super) fn install() -> Result<&'static AtomicBool, std::io::Error> {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(&STOP);
    }
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let _ = INSTALLED.set(());
    let name = super::bin_name();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                let signame = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
                let first = SIGNAL.swap(sig, Ordering::Relaxed) == 0;
                if first
                    && PHASE
                        .compare_exchange(PREPARING, ENDING, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    say(&format!(
                        "{name}: {signame}: stopped before the run started; nothing was written, \
                         so there is nothing to resume\n"
                    ));
                    end_now();
                }
                if !first {
                    say(&format!(
                        "{name}: second signal ({signame}): stopping now\n{name}: {}\n",
                        super::resume_hint()
                    ));
                    end_now();
                }
                STOP.store(true, Ordering::Relaxed);
                say(&format!(
                    "{name}: {signame}: no more chunks are handed out; the running ones get {} s \
                     to finish (send it again to stop at once)\n",
                    GRACE.as_secs()
                ));
                let name = name.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(GRACE);
                    say(&format!(
                        "{name}: running chunks did not finish within {} s: stopping now\n{name}: {}\n",
                        GRACE.as_secs(),
                        super::resume_hint()
                    ));
                    end_now();
                });
            }
        })?;
    Ok(&STOP)
}

/// End the process with [`exit_code`] at once, from any thread while others run: standard
/// output is flushed (standard error is unbuffered), then `_exit`, which runs no exit handler
/// or destructor (module doc).
fn end_now() -> ! {
    // The lock files this process holds are emptied first: `_exit` runs no destructor, and a
    // lock left with its holder's name reads as a run that died without releasing it.
    crate::sink::outdir::release_for_exit();
    // Scratch folders (`tune`'s) are removed: nothing else would.
    crate::owned::remove_scratch_for_exit();
    let _ = std::io::Write::flush(&mut std::io::stdout());
    signal_hook::low_level::exit(exit_code().into())
}

/// One line on stderr in one write.
fn say(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}
