//! Several OpenCL devices in one process, for real on PoCL: `POCL_DEVICES="pthread
//! pthread"` makes PoCL list two CPU devices, each set up on its own thread (the GPU PHAST
//! hierarchy uploaded to each), each fed by the work queue or an equitable share. Summaries and
//! distance rows equal CPU Dijkstra's byte for byte. The binary runs in a child process: PoCL
//! reads `POCL_DEVICES` once, when this test process may already have opened it.

use crate::util::*;
use std::path::Path;
use std::process::Command;

/// The `POCL_DEVICES` value that makes PoCL list two devices (PoCL 3 calls its CPU driver
/// `pthread`, PoCL 4+ `cpu`), or `None` (no PoCL: the test says it did not run, or fails
/// under `TUCCOMPI_REQUIRE_OPENCL`).
pub fn two_pocl_devices() -> Option<&'static str> {
    if !opencl() {
        return None;
    }
    for spec in ["pthread pthread", "cpu cpu"] {
        let out = Command::new(env!("CARGO_BIN_EXE_tuccompi"))
            .current_dir(tmpdir("devcwd"))
            .arg("devices")
            .env("POCL_DEVICES", spec)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if text.contains("OpenCL 1:") && text.contains("Portable Computing Language") {
            return Some(spec);
        }
    }
    if std::env::var_os("TUCCOMPI_REQUIRE_OPENCL").is_some() {
        panic!("TUCCOMPI_REQUIRE_OPENCL is set but PoCL does not list two devices");
    }
    eprintln!("NOT RUN: PoCL does not list two devices with POCL_DEVICES");
    None
}

/// Run the binary on `cfg` with `sets`, `env` and `POCL_DEVICES=spec`; (report, output dir, stderr).
fn run_on(
    spec: &str,
    env: &[(&str, &str)],
    cfg: &str,
    sets: &[&str],
) -> (serde_json::Value, std::path::PathBuf, String) {
    let dir = tmpdir("manygpu");
    let path = dir.join("c.toml");
    std::fs::write(&path, cfg).unwrap();
    let out = dir.join("out");
    let mut c = Command::new(env!("CARGO_BIN_EXE_tuccompi"));
    c.current_dir(&dir)
        .env("POCL_DEVICES", spec)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .envs(env.iter().copied())
        .args(["run", path.to_str().unwrap(), "-q", "--set"])
        .arg(format!("output.dir={:?}", out.display().to_string()));
    for s in sets {
        c.args(["--set", s]);
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "the run failed: {err}");
    let report =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    (report, out, err)
}

/// Tasks each device's units ran, by device id (`gpu0`, `gpu1`).
fn tasks_by_device(report: &serde_json::Value) -> std::collections::BTreeMap<String, u64> {
    let mut by = std::collections::BTreeMap::new();
    for u in report["units"].as_array().unwrap() {
        if u["kind"] == "gpu" {
            let name = u["name"].as_str().unwrap();
            let dev = name.rsplit('/').next().unwrap().split('.').next().unwrap();
            *by.entry(dev.to_string()).or_default() += u["tasks"].as_u64().unwrap();
        }
    }
    by
}

fn same_bytes(a: &Path, b: &Path) {
    assert!(
        std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
        "{} and {} differ",
        a.display(),
        b.display()
    );
}

#[test]
fn gpu_phast_on_two_devices_equals_dijkstra() {
    let Some(spec) = two_pocl_devices() else {
        return;
    };
    let cfg = apsp_gen("road", 3000, "seed = 11", "192");
    let want = dijkstra(&cfg, &["output.distances=true"]);
    for policy in ["equitable", "work-queue"] {
        let dir = tmpdir("twodev");
        let hierarchy = format!(
            "apsp.hierarchy={:?}",
            dir.join("h.ch").display().to_string()
        );
        let pol = format!("scheduler.policy=\"{policy}\"");
        let (report, out, err) = run_on(
            spec,
            &[],
            &cfg,
            &[
                "units.device_type=all",
                "units.cpu_workers=0",
                "apsp.gpu_algorithm=\"phast\"",
                "scheduler.gpu_chunk=16",
                "output.distances=true",
                &hierarchy,
                &pol,
            ],
        );
        assert_eq!(report["input"]["gpu_algorithm"], "phast", "{err}");
        let devices = report["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 2, "two devices set up: {devices:?}");
        assert_eq!(devices[0]["id"], "gpu0");
        assert_eq!(devices[1]["id"], "gpu1");
        // Set up in parallel: each device's setup began before the other's ended.
        let w = |d: &serde_json::Value| {
            let w = d["setup_window"].as_array().unwrap();
            (w[0].as_f64().unwrap(), w[1].as_f64().unwrap())
        };
        let ((b0, e0), (b1, e1)) = (w(&devices[0]), w(&devices[1]));
        assert!(
            b0 < e1 && b1 < e0,
            "the devices' setups did not overlap: {:?}",
            [(b0, e0), (b1, e1)]
        );
        // The driver's share of the prepare phase: the listing (once, the same for both)
        // and each context, within the prepare phase.
        let prepare = report["phase_seconds"]["prepare"].as_f64().unwrap();
        for d in devices {
            let o: Vec<f64> = d["opened"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert!(
                o[0] > 0.0 && o[1] > 0.0 && o[0] + o[1] <= prepare,
                "{o:?} against prepare {prepare}"
            );
        }
        assert_eq!(devices[0]["opened"][0], devices[1]["opened"][0]);
        let by = tasks_by_device(&report);
        assert_eq!(by.values().sum::<u64>(), 192, "{by:?}");
        if policy == "equitable" {
            // Equal shares: each device ran its half.
            assert_eq!(by.get("gpu0"), Some(&96), "{by:?}");
            assert_eq!(by.get("gpu1"), Some(&96), "{by:?}");
        }
        assert_eq!(
            read_summary(&out.join("summary.csv")),
            want.summary(),
            "two devices ({policy}) differ from Dijkstra"
        );
        same_bytes(&out.join("distances.npy"), &want.dir.join("distances.npy"));
    }
}

#[test]
fn devices_failing_their_parallel_setup_are_each_taken_out_once() {
    // A kernel that does not build fails every device's setup (each on its own thread): under
    // "retry" each device is said out once, by its id, and the CPU half runs every task.
    let Some(spec) = two_pocl_devices() else {
        return;
    };
    let cfg = apsp_gen("road", 1500, "seed = 3", "64");
    let want = dijkstra(&cfg, &[]);
    let kdir = tmpdir("badkernels");
    write_broken_sssp_kernels(&kdir);
    let (report, out, err) = run_on(
        spec,
        &[("TUCCOMPI_KERNELS", kdir.to_str().unwrap())],
        &cfg,
        &[
            "units.device_type=all",
            "units.cpu_workers=1",
            "apsp.gpu_algorithm=\"worklist\"",
            "apsp.cpu_algorithm=\"dijkstra\"",
        ],
    );
    for id in ["gpu0", "gpu1"] {
        assert_eq!(
            err.matches(&format!("unit {id} ")).count(),
            1,
            "{id}'s failure said once: {err}"
        );
    }
    assert!(err.contains("undeclared_name"), "{err}");
    assert_eq!(report["devices"].as_array().unwrap().len(), 0);
    assert_eq!(read_summary(&out.join("summary.csv")), want.summary());
}
