//! Phase 2, select: the OpenCL devices and CPU workers the plan selects, and the CPU affinity they may use. Nothing is written.

use super::*;

/// The OpenCL devices a plan selects, or `None` when it asks for none. `Err` only when the
/// config names devices explicitly (or asks for no CPU workers) and none can be opened.
pub fn select_devices(plan: &Plan) -> Result<Vec<Arc<device::Device>>> {
    select_devices_noting(plan, None).map(|(d, _)| d)
}

/// [`select_devices`], and why none was found when the plan asked for every device and
/// there is none (the run then goes on with CPU workers). A job of a `session` gets the
/// session's devices, discovered by its first job that used this filter.
pub(super) fn select_devices_noting(plan: &Plan, session: Option<&crate::Session>) -> Found {
    let names = match &plan.units.opencl {
        DeviceSel::None => return Ok((Vec::new(), None)),
        DeviceSel::All | DeviceSel::LocalRank => Vec::new(),
        DeviceSel::Names(n) => n.clone(),
    };
    let filter = Filter {
        device_type: plan.units.device_type.clone(),
        names,
    };
    let every = matches!(plan.units.opencl, DeviceSel::All | DeviceSel::LocalRank);
    let (index, ranks) = crate::node::local_rank();
    let discovered = match session {
        Some(s) => s.devices_for(&format!("{filter:?}"), || device::discover(&filter)),
        None => device::discover(&filter),
    };
    match discovered {
        Ok(d) => {
            let divided = plan.units.opencl == DeviceSel::LocalRank;
            let sharers = crate::node::ranks_per_device(divided, ranks, d.len());
            d.iter().for_each(|dev| dev.set_sharers(sharers));
            Ok((
                if divided {
                    local_share(d, index, ranks)
                } else {
                    d
                },
                None,
            ))
        }
        Err(e) if every && plan.units.cpu_workers > 0 => Ok((Vec::new(), Some(e.to_string()))),
        Err(e) => Err(e),
    }
}

/// The devices of `all` (a machine's, in discovery order) that its local rank `index` of
/// `ranks` takes ([`crate::node::devices_of_local_rank`]).
fn local_share(all: Vec<Arc<Device>>, index: usize, ranks: usize) -> Vec<Arc<Device>> {
    let mine = crate::node::devices_of_local_rank(index, ranks, all.len());
    if ranks > all.len() && !all.is_empty() {
        tracing::warn!(
            "units.opencl = \"local_rank\": {ranks} ranks on this machine share its {} \
             OpenCL device(s); this rank takes device {}",
            all.len(),
            mine[0]
        );
    }
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| mine.contains(i))
        .map(|(_, d)| d)
        .collect()
}

/// The CPUs this process may run on (its affinity mask) and the machine's online CPUs, from
/// `/proc/self/status` and `/sys/devices/system/cpu/online`; `None` where they cannot be read.
pub fn cpu_affinity() -> Option<(usize, usize)> {
    fn count(list: &str) -> Option<usize> {
        list.trim().split(',').try_fold(0, |n, part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            Some(n + b.checked_sub(a)? + 1)
        })
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(count)?;
    let online = count(&std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?)?;
    Some((allowed, online))
}

/// `line` (ending in a newline) on stderr in one write, so that the lines of several ranks do
/// not interleave (`eprintln!` writes in pieces).
pub(super) fn say(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}

/// Say once per process when the affinity mask is narrower than the machine (Open MPI binds
/// each rank to one core by default), with the fix.
pub(super) fn warn_narrow_affinity(node: &dyn Node) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if let Some((allowed, online)) = cpu_affinity().filter(|(a, o)| a < o) {
        ONCE.call_once(|| {
            let line = format!(
                "{}: warning: rank {} on {}: this process may run on {allowed} of the \
                 machine's {online} CPUs (its CPU affinity mask), so its CPU workers share \
                 {allowed}. Under mpirun, which binds each rank to one core by default, start \
                 with `mpirun --bind-to none ...` (or give each rank its cores, e.g. `--map-by \
                 ppr:1:node:PE={online} --bind-to core`).\n",
                crate::program_name(),
                node.rank(),
                crate::node::host_name()
            );
            say(&line);
        });
    }
}

/// Phase 2's result: the devices to set up and the CPU workers to start.
#[derive(Debug)]
pub struct Selection {
    /// The OpenCL devices the GPU half will run on (none without a GPU half).
    pub devices: Vec<Arc<Device>>,
    /// CPU workers asked for (0 without a CPU half). With `"auto"`, the runtime leaves one
    /// core to the host thread of each GPU queue once the queues are known.
    pub cpu_workers: usize,
    /// Why no device was found although the plan asked for every device (report and output).
    pub device_note: Option<String>,
}

/// Phase 2: the units a plan selects for a prepared job on a run of `nodes` nodes. Opens no
/// device context beyond discovery and writes nothing.
pub fn select_units(plan: &Plan, prepared: &Prepared<'_>, nodes: usize) -> Result<Selection> {
    select_units_from(plan, prepared, nodes, None, None)
}

/// The devices a plan selects, and why none was found (see [`select_devices_noting`]).
pub(super) type Found = Result<(Vec<Arc<device::Device>>, Option<String>)>;

/// [`select_units`] with the devices `found` beforehand ([`RunOptions::discover_early`]), or
/// discovered here when `None`.
pub(super) fn select_units_from(
    plan: &Plan,
    prepared: &Prepared<'_>,
    nodes: usize,
    found: Option<Found>,
    session: Option<&crate::Session>,
) -> Result<Selection> {
    let job = prepared.job.as_ref();
    let name = prepared.plugin.name();
    let mut device_note = None;
    let devices = if crate::plugin::has_gpu(job) {
        let (devices, note) = found.unwrap_or_else(|| select_devices_noting(plan, session))?;
        if let Some(why) = note {
            // The device layer's message names the filter when devices exist but none
            // matches; otherwise (no OpenCL at all) name it here.
            device_note = Some(if why.contains("units.device_type") {
                format!("{why}; running on CPU workers only")
            } else {
                format!(
                    "units.opencl = \"all\" with units.device_type = \"{}\" found no OpenCL \
                     device ({why}); running on CPU workers only",
                    plan.units.device_type
                )
            });
        }
        devices
    } else if plan.units.opencl != DeviceSel::None && plan.units.cpu_workers == 0 {
        return Err(Error::Config(format!(
            "plugin {name} has no GPU half; set units.cpu_workers >= 1"
        )));
    } else {
        Vec::new()
    };
    let cpu_workers = if job.details().cpu_half {
        plan.units.cpu_workers
    } else {
        if plan.units.cpu_workers > 0 {
            tracing::info!("plugin {name} has no CPU half; CPU workers stay idle");
        }
        0
    };
    if devices.is_empty() && cpu_workers == 0 && nodes == 1 {
        return Err(Error::Config(
            "no computational units: units.cpu_workers = 0 and no OpenCL device was selected; \
             set units.cpu_workers >= 1 or select a device with units.opencl"
                .into(),
        ));
    }
    Ok(Selection {
        devices,
        cpu_workers,
        device_note,
    })
}
