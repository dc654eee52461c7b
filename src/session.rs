//! Sessions: a runtime that stays up between jobs.
//!
//! A [`Session`] keeps what a run would otherwise set up from cold each time: the OpenCL
//! devices (discovered once; each keeps its context and its programs, built once per kernel
//! file and options), the speed history the work queue starts from (in memory), and the data
//! plugins chose to keep ([`Kept`]: on the host through [`PrepareCtx::keep`], on a device
//! through [`Device::keep`]). Jobs are submitted to it one after another or from several
//! threads at once ([`Session::run`]); each job still has its own output directory, journal
//! and units. The command line's `run` is one session with one job.
//!
//! ```no_run
//! # fn demo(plugin: &dyn tuccompi::plugin::Plugin, a: &tuccompi::Plan, b: &tuccompi::Plan)
//! # -> tuccompi::Result<()> {
//! let session = tuccompi::Session::new();
//! let first = session.run(a, &[plugin])?; // discovers the devices, builds the programs
//! let second = session.run(b, &[plugin])?; // reuses both, and what the plugin kept
//! # Ok(()) }
//! ```
//!
//! [`PrepareCtx::keep`]: crate::plugin::PrepareCtx::keep
//! [`Device::keep`]: crate::device::Device::keep

use crate::device::Device;
use crate::node::Single;
use crate::runtime::{Outcome, RunOptions};
use crate::scheduler::history::History;
use crate::{Plan, Result};
use parking_lot::Mutex;
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Devices, kept data and the speed history shared by the jobs submitted to it (module doc).
/// `Send + Sync`: jobs may run on several threads at once. Everything it holds is released
/// when it is dropped.
#[derive(Debug, Default)]
pub struct Session {
    /// The devices each device filter found (`units.device_type`, `units.opencl` names),
    /// discovered by the first job that asked.
    devices: Mutex<HashMap<String, Arc<DeviceList>>>,
    /// Host data plugins keep between jobs.
    kept: Kept,
    /// The work queue's speed models, measured by this session's jobs.
    pub(crate) history: Mutex<History>,
    /// Device discoveries so far (tests: a second job discovers nothing).
    discoveries: AtomicUsize,
}

/// One filter's discovery: the devices, or why none was found.
type DeviceList = std::result::Result<Vec<Arc<Device>>, String>;

impl Drop for Session {
    /// The devices are released together, each on a thread of its own (a driver takes tens of
    /// milliseconds to release a context; one after the other, that added up at the end of a
    /// run on several GPUs). A device a job still holds goes when that job drops it.
    fn drop(&mut self) {
        let lists: Vec<Arc<DeviceList>> = self.devices.get_mut().drain().map(|(_, l)| l).collect();
        let devices: Vec<Arc<Device>> = lists
            .into_iter()
            .filter_map(|l| Arc::try_unwrap(l).ok())
            .filter_map(|l| l.ok())
            .flatten()
            .collect();
        if devices.len() < 2 {
            return;
        }
        std::thread::scope(|s| {
            for d in devices {
                s.spawn(move || drop(d));
            }
        });
    }
}

impl Session {
    /// An empty session: devices are discovered by the first job that uses them.
    pub fn new() -> Session {
        Session::default()
    }

    /// Run `plan` on this machine (no MPI) as one job of the session, its plugin found among
    /// `plugins`; quiet (no progress bar). The job writes its output directory as
    /// [`crate::runtime::run`] does. Several threads may call it at once.
    pub fn run(&self, plan: &Plan, plugins: &[&dyn crate::plugin::Plugin]) -> Result<Outcome> {
        let opts = RunOptions {
            quiet: true,
            plugins: plugins.to_vec(),
            ..RunOptions::default()
        };
        self.run_with(plan, opts)
    }

    /// [`Session::run`] with options of the caller's (its `session` is set to this one).
    pub fn run_with(&self, plan: &Plan, opts: RunOptions<'_>) -> Result<Outcome> {
        let opts = RunOptions {
            session: Some(self),
            ..opts
        };
        crate::runtime::run(plan, &opts, &Single)
    }

    /// The data plugins keep on the host ([`crate::plugin::PrepareCtx::keep`]).
    pub fn kept(&self) -> &Kept {
        &self.kept
    }

    /// Every device this session's jobs have opened, in discovery order per filter.
    pub fn devices(&self) -> Vec<Arc<Device>> {
        let lists = self.devices.lock();
        let mut all: Vec<Arc<Device>> = Vec::new();
        for list in lists.values() {
            let Ok(devices) = &**list else { continue };
            for d in devices {
                if !all.iter().any(|a| Arc::ptr_eq(a, d)) {
                    all.push(d.clone());
                }
            }
        }
        all
    }

    /// How many times this session discovered OpenCL devices (once per device filter its jobs
    /// used).
    pub fn discoveries(&self) -> usize {
        self.discoveries.load(Ordering::Relaxed)
    }

    /// The devices `filter_key` names: discovered by `discover` the first time, the same
    /// devices (contexts, programs, kept data) afterwards. A failed discovery is kept too, as
    /// its message: a machine without OpenCL is not asked again.
    pub(crate) fn devices_for(
        &self,
        filter_key: &str,
        discover: impl FnOnce() -> Result<Vec<Arc<Device>>>,
    ) -> Result<Vec<Arc<Device>>> {
        let mut devices = self.devices.lock();
        let list = match devices.get(filter_key) {
            Some(l) => l.clone(),
            None => {
                self.discoveries.fetch_add(1, Ordering::Relaxed);
                let l = Arc::new(discover().map_err(|e| e.to_string()));
                devices.insert(filter_key.to_string(), l.clone());
                l
            }
        };
        match &*list {
            Ok(d) => Ok(d.clone()),
            Err(msg) => Err(crate::Error::Device(msg.clone())),
        }
    }
}

/// Values kept between jobs under keys their makers choose (an input's fingerprint), bounded
/// in bytes: the least recently used go first when a new one would pass the bound, and all
/// go when their owner (the session, or the device) is dropped. A value in use by a job when
/// it is dropped from here lives on until that job lets go of it.
#[derive(Default)]
pub struct Kept {
    /// The most bytes kept; 0: no bound.
    limit: u64,
    inner: Mutex<KeptInner>,
}

#[derive(Default)]
struct KeptInner {
    entries: HashMap<String, Entry>,
    /// Increases at each use: an entry's `used` orders them for eviction.
    clock: u64,
    bytes: u64,
    /// Values made (tests: the second job on the same data makes nothing).
    made: usize,
}

struct Entry {
    value: Arc<dyn Any + Send + Sync>,
    bytes: u64,
    used: u64,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("Kept")
            .field("limit", &self.limit)
            .field("entries", &inner.entries.len())
            .field("bytes", &inner.bytes)
            .finish()
    }
}

impl Kept {
    /// A store of at most `limit` bytes (0: no bound).
    pub fn with_limit(limit: u64) -> Kept {
        Kept {
            limit,
            inner: Mutex::default(),
        }
    }

    /// The value kept under `key`, else `make()`'s (the value and its size in bytes), kept
    /// from now on unless it alone exceeds the bound (then it is handed back and not kept).
    /// `make` runs without the store's lock: two jobs asking for one new key at once may
    /// both make it, and the first one kept wins. A key kept with another type is made anew
    /// and replaced.
    pub fn get_or_make<T: Any + Send + Sync>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<(T, u64)>,
    ) -> Result<Arc<T>> {
        if let Some(v) = self.get::<T>(key) {
            return Ok(v);
        }
        let (value, bytes) = make()?;
        let value = Arc::new(value);
        let mut inner = self.inner.lock();
        inner.made += 1;
        if let Some(v) = inner
            .entries
            .get(key)
            .and_then(|e| e.value.clone().downcast().ok())
        {
            return Ok(v);
        }
        if self.limit > 0 && bytes > self.limit {
            return Ok(value);
        }
        if let Some(old) = inner.entries.remove(key) {
            inner.bytes -= old.bytes;
        }
        while self.limit > 0 && inner.bytes + bytes > self.limit {
            let Some(lru) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            let e = inner.entries.remove(&lru).expect("present");
            inner.bytes -= e.bytes;
            tracing::debug!("kept data {lru} ({} bytes) released for {key}", e.bytes);
        }
        inner.clock += 1;
        let used = inner.clock;
        inner.bytes += bytes;
        inner.entries.insert(
            key.to_string(),
            Entry {
                value: value.clone(),
                bytes,
                used,
            },
        );
        Ok(value)
    }

    /// The value kept under `key`, when there is one of type `T` (marked as just used).
    pub fn get<T: Any + Send + Sync>(&self, key: &str) -> Option<Arc<T>> {
        let mut inner = self.inner.lock();
        inner.clock += 1;
        let clock = inner.clock;
        let e = inner.entries.get_mut(key)?;
        let v = e.value.clone().downcast().ok()?;
        e.used = clock;
        Some(v)
    }

    /// Bytes kept now.
    pub fn bytes(&self) -> u64 {
        self.inner.lock().bytes
    }

    /// Values kept now.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values made through [`get_or_make`](Kept::get_or_make) so far (kept or not).
    pub fn made(&self) -> usize {
        self.inner.lock().made
    }

    /// Release everything kept.
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.entries.clear();
        inner.bytes = 0;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_kept_value_is_made_once_and_the_least_recently_used_goes_first() {
        let k = Kept::with_limit(100);
        let a = k.get_or_make("a", || Ok((1u32, 40))).unwrap();
        let again = k.get_or_make("a", || Ok((2u32, 40))).unwrap();
        assert_eq!((*a, *again, k.made()), (1, 1, 1));
        k.get_or_make("b", || Ok((2u32, 40))).unwrap();
        // "a" used after "b" was made: "b" is the least recently used.
        assert!(k.get::<u32>("a").is_some());
        k.get_or_make("c", || Ok((3u32, 40))).unwrap();
        assert!(k.get::<u32>("b").is_none(), "b was the least recently used");
        assert!(k.get::<u32>("a").is_some() && k.get::<u32>("c").is_some());
        assert_eq!(k.bytes(), 80);
        // Too large to keep: handed back, nothing released.
        assert_eq!(*k.get_or_make("d", || Ok((4u32, 101))).unwrap(), 4);
        assert_eq!((k.len(), k.bytes()), (2, 80));
        // Another type under a key: made anew and replaced.
        assert_eq!(*k.get_or_make("a", || Ok(("x", 10))).unwrap(), "x");
        assert_eq!(k.bytes(), 50);
        k.clear();
        assert!(k.is_empty());
    }

    #[test]
    fn a_failed_make_keeps_nothing() {
        let k = Kept::default();
        let r = k.get_or_make::<u32>("a", || Err(crate::Error::Input("no".into())));
        assert!(r.is_err());
        assert!(k.is_empty());
        assert_eq!(*k.get_or_make("a", || Ok((5u32, 1))).unwrap(), 5);
    }
}
