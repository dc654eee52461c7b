use super::*;

fn plan(text: &str, sets: &[&str]) -> Result<Plan> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Plan::from_toml(text, Path::new("c.toml"), &sets)
}

const MIN: &str = "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr\"\n";

#[test]
fn defaults() {
    let p = plan(MIN, &[]).unwrap();
    assert_eq!(p.tasks, Tasks::All);
    assert_eq!(p.scheduler.policy, Policy::WorkQueue);
    assert!(p.units.cpu_workers >= 1);
    // `[input]` is a plugin's table, kept as written for the plugin that reads it.
    assert_eq!(p.other_tables["input"]["path"].as_str(), Some("g.gr"));
}

#[test]
fn unknown_key_is_named_with_its_line() {
    let e = plan(&format!("{MIN}[units]\ncpu_workerz = 2\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("c.toml:6: units.cpu_workerz: unknown field"),
        "{e}"
    );
}

#[test]
fn overrides() {
    let p = plan(
        MIN,
        &[
            "run.tasks=64",
            "input.path=x.mtx",
            "scheduler.policy=equitable",
            "apsp.batch=7",
        ],
    )
    .unwrap();
    assert_eq!(p.tasks, Tasks::First(64));
    assert_eq!(p.scheduler.policy, Policy::Equitable);
    assert_eq!(p.plugin_options["batch"].as_integer(), Some(7));
    let p = plan(MIN, &["run.tasks=[3, 5]", "units.cpu_workers=0"]).unwrap();
    assert_eq!(p.tasks, Tasks::List(vec![3, 5]));
    assert_eq!(p.units.cpu_workers, 0);
    // A key of [run] or [output] the framework does not know waits for the plugin, which
    // refuses it unless it took it over.
    let p = plan(MIN, &["run.sourcez=3"]).unwrap();
    let e = p.with_renamed_keys(&[]).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "--set run.sourcez=3: run.sourcez: unknown field `sourcez`, expected one of \
             `plugin`, `tasks`"
        ),
        "{e}"
    );
    let e = plan(MIN, &["nonsense"]).unwrap_err().to_string();
    assert!(e.contains("KEY=VALUE"), "{e}");
}

#[test]
fn bad_values_say_what_is_accepted() {
    let e = plan(&format!("{MIN}[units]\ncpu_workers = \"many\"\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"auto\" or a non-negative integer"), "{e}");
    let e = plan(MIN, &["run.tasks=-3"]).unwrap_err().to_string();
    assert!(e.contains("\"all\""), "{e}");
    let e = plan(MIN, &["scheduler.chunk=0"]).unwrap_err().to_string();
    assert!(e.contains("scheduler.chunk = 0"), "{e}");
    let e = plan(&format!("{MIN}[units]\nstray = 1\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown"), "{e}");
}

#[test]
fn node_unit_overrides_touch_only_units() {
    // One test sets and clears the variable, so no other test sees it.
    std::env::set_var("TUCCOMPI_UNITS", "cpu_workers=5, opencl=none");
    let p = plan(MIN, &["run.tasks=9"]).unwrap().with_node_units();
    std::env::set_var("TUCCOMPI_UNITS", "policy=equitable");
    let bad = plan(MIN, &[]).unwrap().with_node_units();
    // Bytes that are not UTF-8 are refused, not taken for an unset variable.
    #[cfg(unix)]
    let not_utf8 = {
        use std::os::unix::ffi::OsStrExt;
        std::env::set_var(
            "TUCCOMPI_UNITS",
            std::ffi::OsStr::from_bytes(b"cpu_workers=\xff"),
        );
        plan(MIN, &[]).unwrap().with_node_units()
    };
    std::env::remove_var("TUCCOMPI_UNITS");
    let p = p.unwrap();
    assert_eq!(
        (p.units.cpu_workers, p.units.opencl.clone(), p.tasks.clone()),
        (5, DeviceSel::None, Tasks::First(9))
    );
    let bad = bad.unwrap_err().to_string();
    assert!(
        bad.starts_with("TUCCOMPI_UNITS=\"policy=equitable\"")
            && bad.contains("unknown field `policy`"),
        "{bad}"
    );
    #[cfg(unix)]
    {
        let e = not_utf8.unwrap_err().to_string();
        assert!(
            e.starts_with("TUCCOMPI_UNITS=") && e.contains("not UTF-8"),
            "{e}"
        );
    }
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
fn duplicate_tasks_are_refused_by_id_and_entry() {
    let e = plan(MIN, &["run.tasks=[4, 7, 9, 7]"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--set run.tasks=[4, 7, 9, 7]: run.tasks lists task 7 twice (entries 2 and 4)"),
        "{e}"
    );
    assert!(plan(MIN, &["run.tasks=[4, 7, 9]"]).is_ok());
}

#[test]
fn plan_values_print_as_words() {
    assert_eq!(Tasks::All.to_string(), "all");
    assert_eq!(Tasks::First(64).to_string(), "the first 64");
    assert_eq!(Tasks::List(vec![3, 5]).to_string(), "[3, 5]");
    assert_eq!(
        Tasks::List((1..=10).collect()).to_string(),
        "[1, 2, 3, 4, 5, 6, 7, 8, ... (10 ids)]"
    );
    assert_eq!(DeviceSel::None.to_string(), "none");
    assert_eq!(
        DeviceSel::Names(vec!["A100".into()]).to_string(),
        "[\"A100\"]"
    );
}

#[test]
fn messages_name_the_key_and_where_it_was_set() {
    // From the file: its line and the dotted key.
    let text = format!("{MIN}[units]\ncpu_workers = -1\n");
    let e = plan(&text, &[]).unwrap_err().to_string();
    assert!(
        e.starts_with("c.toml:6: units.cpu_workers: expected \"auto\""),
        "{e}"
    );
    let text = "[run]\nplugin = \"apsp\"\ntasks = \"al\"\n";
    let e = plan(text, &[]).unwrap_err().to_string();
    assert!(
        e.starts_with("c.toml:3: run.tasks: expected \"all\""),
        "{e}"
    );
    // From a --set: the assignment as typed and the key.
    let e = plan(MIN, &["run.tasks=\"al\""]).unwrap_err().to_string();
    assert!(
        e.starts_with("--set run.tasks=\"al\": run.tasks: expected \"all\""),
        "{e}"
    );
    let e = plan(MIN, &["units.cpu_workers=-1"])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--set units.cpu_workers=-1: units.cpu_workers: expected"),
        "{e}"
    );
    // Validation after parsing: the key's own line, or the --set.
    let text = format!("{MIN}[scheduler]\n\nchunk = 0\n");
    let e = plan(&text, &[]).unwrap_err().to_string();
    assert!(e.starts_with("c.toml:7: scheduler.chunk = 0"), "{e}");
    let e = plan(MIN, &["units.device_type=\"tpu\""])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--set units.device_type=\"tpu\": units.device_type = \"tpu\""),
        "{e}"
    );
    // A plugin's own table, through Plan::options.
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Opts {
        batch: Option<AutoOr>,
    }
    let text = format!("{MIN}[apsp]\n# a comment\nbatch = -1\n");
    let e = plan(&text, &[])
        .unwrap()
        .options::<Opts>("apsp")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("c.toml:7: apsp.batch: expected"), "{e}");
    let e = plan(MIN, &["apsp.batchh=3"])
        .unwrap()
        .options::<Opts>("apsp")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--set apsp.batchh=3: apsp.batchh: unknown field `batchh`"),
        "{e}"
    );
    // `options(table)` reads the table it names, not the run's plugin's: another table's
    // values, and an absent table as empty.
    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Shared {
        #[serde(default)]
        seed: u64,
    }
    let text = format!("{MIN}[apsp]\nbatch = 4\n[shared]\nseed = 9\n");
    let p = plan(&text, &[]).unwrap();
    assert_eq!(p.options::<Shared>("shared").unwrap().seed, 9);
    assert_eq!(p.options::<Shared>("absent").unwrap().seed, 0);
    let e = p.options::<Shared>("apsp").unwrap_err().to_string();
    assert!(e.contains("apsp.batch: unknown field `batch`"), "{e}");
}

#[test]
fn the_last_set_of_exclusive_keys_is_found() {
    let o = Origins::new(
        Path::new("c.toml"),
        "",
        &["a.b=1".into(), "c.d.e=2".into(), "f=3".into()],
    );
    assert_eq!(o.last_set(&["a.b", "c.d"]), Some(1));
    assert_eq!(o.last_set(&["a.b", "x"]), Some(0));
    assert_eq!(o.last_set(&["a", "c.d.e.f"]), Some(0));
    assert_eq!(o.last_set(&["x", "y"]), None);
}

#[test]
fn config_and_set_values_are_read_up_to_a_bound() {
    // /dev/zero never ends: the read stops at the bound instead of filling memory.
    let zero = Path::new("/dev/zero");
    if zero.exists() {
        let e = Plan::load(zero, &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("/dev/zero: more than 16 MiB; a config is a short TOML file"),
            "{e}"
        );
    }
    let long = format!("run.tasks=[{}]", "1, ".repeat(MAX_SET_BYTES / 3));
    let e = plan(MIN, &[&long]).unwrap_err().to_string();
    assert!(
        e.starts_with("--set run.tasks=...: the value is") && e.contains("1024 KiB"),
        "{e}"
    );
    // A config that is not UTF-8 names its line.
    let dir = std::env::temp_dir().join(format!("tuccompi-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("latin1.toml");
    std::fs::write(&f, b"[run]\nplugin = \"caf\xe9\"\n").unwrap();
    let e = Plan::load(&f, &[]).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.ends_with(
            "latin1.toml:2: not UTF-8 text (byte 19); TOML files are UTF-8: save it as UTF-8"
        ),
        "{e}"
    );
}

#[test]
fn key_lines_follow_tables_and_multi_line_values() {
    let text = "# head\n[run]\nplugin = \"x\" # c\ntasks = [\n  1,\n  2,\n]\n\n[input.generate]\nmodel = \"road\"\n[\"apsp\"]\n\"batch\" = 3\n";
    assert_eq!(origin::key_line(text, "run.plugin"), Some(3));
    assert_eq!(origin::key_line(text, "run.tasks"), Some(4));
    assert_eq!(
        origin::key_at(text, text.find("2,").unwrap()),
        (6, "run.tasks".into())
    );
    assert_eq!(origin::key_line(text, "input.generate.model"), Some(10));
    assert_eq!(origin::key_line(text, "input.generate.vertices"), Some(9));
    assert_eq!(origin::key_line(text, "apsp.batch"), Some(12));
    assert_eq!(origin::key_line(text, "units.opencl"), None);
}

/// A plugin's key under its former name in [run] or [output] moves into the plugin's table:
/// the plan reads as if the new key were set (its messages name where the old one was), the
/// run's identity holds the new key only, and setting both names is refused.
#[test]
fn renamed_keys_move_into_the_plugins_table() {
    let text = format!("{MIN}[output]\ndistances = true\n");
    let renamed = [
        ("run.sources", "sources"),
        ("output.distances", "distances"),
    ];
    let old = plan(&text, &["run.sources=[3, 5]"]).unwrap();
    let p = old.with_renamed_keys(&renamed).unwrap();
    assert_eq!(p.plugin_options["sources"], toml::Value::from(vec![3, 5]));
    assert_eq!(p.plugin_options["distances"], toml::Value::from(true));
    assert_eq!(p.origins.of("apsp.sources"), "--set run.sources=[3, 5]");
    assert_eq!(p.origins.of("apsp.distances"), "c.toml:6");
    // Applying it again changes nothing.
    let again = p.with_renamed_keys(&renamed).unwrap();
    assert_eq!(again.plugin_options, p.plugin_options);
    // The identity: as a config with the new keys.
    let new = plan(
        &format!("{MIN}[apsp]\nsources = [3, 5]\ndistances = true\n"),
        &[],
    )
    .unwrap()
    .with_renamed_keys(&renamed)
    .unwrap();
    assert_eq!(p.result_config(), new.result_config());
    assert!(!p.result_config()["run"]
        .as_table()
        .unwrap()
        .contains_key("sources"));
    // Both names: a later `--set` of either wins over the file; both in the file is refused.
    let both = plan(&format!("{MIN}[apsp]\nsources = 4\n"), &["run.sources=7"]).unwrap();
    let p = both.with_renamed_keys(&renamed).unwrap();
    assert_eq!(p.plugin_options["sources"], toml::Value::from(7));
    let both = plan(
        &format!("{MIN}[output]\ndistances = true\n"),
        &["apsp.distances=false"],
    )
    .unwrap();
    let p = both.with_renamed_keys(&renamed).unwrap();
    assert_eq!(p.plugin_options["distances"], toml::Value::from(false));
    let both = plan(
        &format!("{MIN}[output]\ndistances = true\n[apsp]\ndistances = false\n"),
        &[],
    )
    .unwrap();
    let e = both.with_renamed_keys(&renamed).unwrap_err().to_string();
    assert!(
        e.contains("output.distances and apsp.distances are both set"),
        "{e}"
    );
}
