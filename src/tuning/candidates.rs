//! What `tune` may time: a plugin's knobs, each with the values to try ([`Knob`]), and the
//! default candidates every GPU half gets ([`default_candidates`]).
//!
//! `tune` tries the knobs one after another in the order given (each at the best values of
//! the knobs before it), times each candidate on the real device, and stores the winners in
//! the tuning cache under the half's cache key; `run` reads them back through the [`Tuner`]
//! (`batch` and `local_size` into [`LaunchParams`]' own fields, the plugin's own knobs into
//! [`LaunchParams::knob`]).
//!
//! [`Tuner`]: super::Tuner
//! [`LaunchParams`]: super::LaunchParams
//! [`LaunchParams::knob`]: super::LaunchParams::knob

use super::{LaunchParams, Source};
use crate::device::DeviceInfo;

/// The knob of tasks per launch ([`LaunchParams::batch`]).
pub const BATCH: &str = "batch";
/// The knob of the local size of the kernels that take any ([`LaunchParams::local`]; 0 = the
/// driver's choice).
pub const LOCAL_SIZE: &str = "local_size";

/// One tunable knob and the values `tune` tries for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// [`BATCH`], [`LOCAL_SIZE`] or a name of the plugin's own (read back with
    /// [`LaunchParams::knob`]).
    pub name: String,
    /// The values to try, in order (duplicates are timed once).
    pub values: Vec<usize>,
}

impl Knob {
    /// Tasks per launch: try `values`.
    pub fn batch(values: impl IntoIterator<Item = usize>) -> Self {
        Knob::own(BATCH, values)
    }
    /// The local size of the kernels free to take one: try `values` (0 = the driver's).
    pub fn local_size(values: impl IntoIterator<Item = usize>) -> Self {
        Knob::own(LOCAL_SIZE, values)
    }
    /// A knob of the plugin's own, named `name` (a word: it is a key of the tuning cache).
    pub fn own(name: &str, values: impl IntoIterator<Item = usize>) -> Self {
        let mut v: Vec<usize> = Vec::new();
        for x in values {
            if !v.contains(&x) {
                v.push(x);
            }
        }
        Knob {
            name: name.to_string(),
            values: v,
        }
    }
}

/// The local size the rules gave the kernels free to take one (neither fixed by their
/// characterization nor by the plugin), `None` when every kernel's is fixed.
pub fn free_local(predicted: &LaunchParams) -> Option<usize> {
    predicted
        .local
        .values()
        .find(|c| c.source != Source::Fixed)
        .map(|c| c.value)
}

/// The candidates every GPU half gets unless its job declares its own
/// ([`Job::tune_candidates`](crate::plugin::Job::tune_candidates)): the batch at half, once
/// and twice the prediction (unless the plugin's code fixes it), then local sizes 64, 128,
/// 256, 512 (those the device allows) and the driver's choice (unless every kernel's is
/// fixed).
pub fn default_candidates(device: &DeviceInfo, predicted: &LaunchParams) -> Vec<Knob> {
    let mut knobs = Vec::new();
    if predicted.batch.source != Source::Fixed {
        let b = predicted.batch.value.max(1);
        knobs.push(Knob::batch(
            [b / 2, b, b * 2].into_iter().filter(|&x| x >= 1),
        ));
    }
    if let Some(l) = free_local(predicted) {
        let sizes = [l, 64, 128, 256, 512, 0]
            .into_iter()
            .filter(|&x| x <= device.max_work_group);
        knobs.push(Knob::local_size(sizes));
    }
    knobs
}
