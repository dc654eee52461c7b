//! The speed history the work queue starts from: each unit class's measured model, read before the run and stored after it (src/scheduler/history.rs holds the file).

use super::*;

/// The speed history of a run: each unit's starting model (from an earlier run of the same
/// work on the same kind of unit, else none: the queue probes) and, after the run, the models
/// it measured ([`crate::scheduler::history`]).
pub(super) struct SpeedHistory<'s> {
    pub(super) store: Option<crate::scheduler::history::History>,
    /// The session's history (in memory), read before the file's and stored beside it.
    session: Option<&'s parking_lot::Mutex<crate::scheduler::history::History>>,
    pub(super) keys: Vec<String>,
    pub(super) priors: Vec<Option<Estimate>>,
    /// For a device queue, how many of its device's queues an earlier run kept busy (rule
    /// *busy queues*), read with its model.
    pub(super) busy: Vec<Option<usize>>,
}

impl<'s> SpeedHistory<'s> {
    pub(super) fn open(
        plan: &Plan,
        opts: &RunOptions<'s>,
        prepared: &Prepared<'_>,
        units: &[Unit<'_>],
        node: &dyn Node,
    ) -> Self {
        // Under MPI the node layer's sources measure nothing they could report: no history.
        let on = !node.under_mpi()
            && plan.scheduler.history
            && (plan.scheduler.policy == Policy::WorkQueue
                || plan.scheduler.shares == crate::config::Shares::Speed);
        let session = opts.session.filter(|_| on).map(|s| &s.history);
        let path = (on && opts.speed_history)
            .then(crate::scheduler::history::path)
            .flatten();
        let store = match path {
            Some(path) => {
                let (store, note) = crate::scheduler::history::History::load(&path);
                if let Some(n) = note {
                    tracing::warn!("{n}");
                }
                store
            }
            // A session without the file: its own history alone.
            None if session.is_some() => crate::scheduler::history::History::default(),
            None => {
                return SpeedHistory {
                    store: None,
                    session: None,
                    keys: Vec::new(),
                    priors: vec![None; units.len()],
                    busy: vec![None; units.len()],
                }
            }
        };
        let workload = crate::plugin::workload(&*prepared.job).to_string();
        let cpus = units
            .iter()
            .filter(|u| matches!(u.spec, UnitSpec::Cpu))
            .count();
        let keys: Vec<String> = units
            .iter()
            .map(|u| {
                let class = match &u.spec {
                    UnitSpec::Cpu => format!("cpu {} x{cpus}", cpu_model()),
                    UnitSpec::Gpu { device, .. } => {
                        let queues = units
                            .iter()
                            .filter(|v| matches!(&v.spec, UnitSpec::Gpu { device: d, .. } if d.index == device.index))
                            .count();
                        format!(
                            "{} | {} | {queues} queues | chunk {}",
                            device.info.name, device.info.driver, u.chunk
                        )
                    }
                };
                crate::scheduler::history::key(prepared.plugin.name(), &workload, &class)
            })
            .collect();
        // What this session measured first: it is this process's own units, now. The count of
        // busy queues comes from where the model came from.
        let (priors, busy) = keys
            .iter()
            .map(|k| {
                let session = session.and_then(|s| {
                    let s = s.lock();
                    s.get(k).map(|e| (Some(e), s.busy(k)))
                });
                session.unwrap_or_else(|| (store.get(k), store.busy(k)))
            })
            .unzip();
        SpeedHistory {
            store: Some(store),
            session,
            keys,
            priors,
            busy,
        }
    }

    /// "history" or "probe" per unit, for the report (empty when the history is off).
    pub(super) fn starts(&self) -> Vec<&'static str> {
        if self.store.is_none() {
            return Vec::new();
        }
        self.priors
            .iter()
            .map(|p| if p.is_some() { "history" } else { "probe" })
            .collect()
    }

    /// Store the mean of each unit class's measured models (units that failed or ran nothing
    /// excluded).
    pub(super) fn store(
        &mut self,
        units: &[Unit<'_>],
        stats: &[UnitStats],
        measured: &[Option<Estimate>],
        busy: &[Option<usize>],
    ) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        let mut by_key: std::collections::BTreeMap<&str, (Estimate, u64, usize, Option<usize>)> =
            Default::default();
        for (i, key) in self.keys.iter().enumerate() {
            let (Some(Some(e)), Some(s)) = (measured.get(i), stats.get(i)) else {
                continue;
            };
            if s.failed.is_some() || s.tasks == 0 || i >= units.len() {
                continue;
            }
            let acc = by_key.entry(key).or_insert((
                Estimate {
                    latency: 0.0,
                    per_task: 0.0,
                },
                0,
                0,
                None,
            ));
            // Rule *busy queues*: the device's count (its queues agree), when decided.
            acc.3 = acc.3.or(busy.get(i).copied().flatten());
            acc.0.latency += e.latency;
            acc.0.per_task += e.per_task;
            acc.1 += s.tasks as u64;
            acc.2 += 1;
        }
        if by_key.is_empty() {
            return;
        }
        for (key, (sum, tasks, n, busy)) in by_key {
            let n = n as f64;
            let mean = Estimate {
                latency: sum.latency / n,
                per_task: sum.per_task / n,
            };
            store.put_busy(key.to_string(), mean, tasks, busy);
            if let Some(s) = self.session {
                s.lock().put_busy(key.to_string(), mean, tasks, busy);
            }
        }
        if let Err(e) = store.save() {
            tracing::warn!("the speed history could not be stored: {e}");
        }
    }
}

/// The CPU's model name (`/proc/cpuinfo`), for the speed history's key. Read once per process:
/// on a 16-core virtual machine one read of `/proc/cpuinfo` took most of a millisecond (it
/// samples every core's clock), which, once per CPU worker, added 10 ms to a 20 ms run.
pub(super) fn cpu_model() -> &'static str {
    static MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_string())
            })
            .unwrap_or_else(|| "cpu".into())
    })
}
