use super::*;

fn plan(text: &str, sets: &[&str]) -> Result<Plan> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Plan::from_toml(text, Path::new("c.toml"), &sets)
}

const MIN: &str = "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr\"\n";

#[test]
fn defaults() {
    let p = plan(MIN, &[]).unwrap();
    assert_eq!(p.sources, Sources::All);
    assert_eq!(p.scheduler.policy, Policy::WorkQueue);
    assert!(p.units.cpu_workers >= 1);
    assert!(matches!(p.input, Some(InputSpec::Path(ref x)) if x == Path::new("g.gr")));
}

#[test]
fn unknown_key_is_named_with_its_line() {
    let e = plan(&format!("{MIN}[units]\ncpu_workerz = 2\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("cpu_workerz") && e.contains("line 6"), "{e}");
}

#[test]
fn overrides() {
    let p = plan(
        MIN,
        &[
            "run.sources=64",
            "input.path=x.mtx",
            "scheduler.policy=equitable",
            "apsp.batch=7",
        ],
    )
    .unwrap();
    assert_eq!(p.sources, Sources::First(64));
    assert_eq!(p.scheduler.policy, Policy::Equitable);
    assert_eq!(p.plugin_options["batch"].as_integer(), Some(7));
    let p = plan(MIN, &["run.sources=[3, 5]", "units.cpu_workers=0"]).unwrap();
    assert_eq!(p.sources, Sources::List(vec![3, 5]));
    assert_eq!(p.units.cpu_workers, 0);
    let e = plan(MIN, &["run.sourcez=3"]).unwrap_err().to_string();
    assert!(e.contains("sourcez"), "{e}");
    let e = plan(MIN, &["nonsense"]).unwrap_err().to_string();
    assert!(e.contains("KEY=VALUE"), "{e}");
}

#[test]
fn bad_values_say_what_is_accepted() {
    let e = plan(&format!("{MIN}[units]\ncpu_workers = \"many\"\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"auto\" or a non-negative integer"), "{e}");
    let e = plan(MIN, &["run.sources=-3"]).unwrap_err().to_string();
    assert!(e.contains("\"all\""), "{e}");
    let e = plan(MIN, &["scheduler.chunk=0"]).unwrap_err().to_string();
    assert!(e.contains("scheduler.chunk = 0"), "{e}");
    let e = plan(&format!("{MIN}stray = 1\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown"), "{e}");
}

#[test]
fn node_unit_overrides_touch_only_units() {
    // One test sets and clears the variable, so no other test sees it.
    std::env::set_var("TUCCOMPI_UNITS", "cpu_workers=5, opencl=none");
    let p = plan(MIN, &["run.sources=9"]).unwrap().with_node_units();
    std::env::set_var("TUCCOMPI_UNITS", "policy=equitable");
    let bad = plan(MIN, &[]).unwrap().with_node_units();
    std::env::remove_var("TUCCOMPI_UNITS");
    let p = p.unwrap();
    assert_eq!(
        (
            p.units.cpu_workers,
            p.units.opencl.clone(),
            p.sources.clone()
        ),
        (5, DeviceSel::None, Sources::First(9))
    );
    let bad = bad.unwrap_err().to_string();
    assert!(
        bad.starts_with("TUCCOMPI_UNITS=\"policy=equitable\"")
            && bad.contains("unknown field `policy`"),
        "{bad}"
    );
}

#[test]
fn cpu_workers_far_above_the_cores_is_refused() {
    let cap = raw::max_cpu_workers(
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    );
    let e = plan(MIN, &["units.cpu_workers=100000"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("units.cpu_workers = 100000 is more than this process can use")
            && e.contains(&format!("at most {cap}"))
            && e.contains("--bind-to none"),
        "{e}"
    );
    // Oversubscription within the bound stays allowed (a 1-core container runs 16).
    assert_eq!(
        plan(MIN, &[&format!("units.cpu_workers={cap}")])
            .unwrap()
            .units
            .cpu_workers,
        cap
    );
    assert!(raw::max_cpu_workers(1) >= 16 && raw::max_cpu_workers(64) == 256);
    // The same for queues per device: each is a unit with a host thread.
    let e = plan(MIN, &["units.concurrent_kernels=100000"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("units.concurrent_kernels = 100000: at most 64 queues per device"),
        "{e}"
    );
    assert_eq!(
        plan(MIN, &["units.concurrent_kernels=64"])
            .unwrap()
            .units
            .concurrent_kernels,
        Some(64)
    );
}

#[test]
fn duplicate_sources_are_refused_by_id_and_entry() {
    let e = plan(MIN, &["run.sources=[4, 7, 9, 7]"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("c.toml: run.sources lists vertex id 7 twice (entries 2 and 4)"),
        "{e}"
    );
    assert!(plan(MIN, &["run.sources=[4, 7, 9]"]).is_ok());
}

#[test]
fn plan_values_print_as_words() {
    assert_eq!(Sources::All.to_string(), "all");
    assert_eq!(Sources::First(64).to_string(), "the first 64 ids");
    assert_eq!(Sources::List(vec![3, 5]).to_string(), "[3, 5]");
    assert_eq!(
        Sources::List((1..=10).collect()).to_string(),
        "[1, 2, 3, 4, 5, 6, 7, 8, ... (10 ids)]"
    );
    assert_eq!(DeviceSel::None.to_string(), "none");
    assert_eq!(
        DeviceSel::Names(vec!["A100".into()]).to_string(),
        "[\"A100\"]"
    );
}
