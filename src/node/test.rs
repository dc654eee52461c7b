//! The node layer's single-node path: the whole task space for this node's units, nothing to
//! gather, errors passed through.

use super::*;
use crate::config::Policy;

fn plan(policy: &str) -> Plan {
    let text = format!(
        "[run]\nplugin = \"apsp\"\n[input]\npath = \"g.gr\"\n[scheduler]\npolicy = \"{policy}\"\n"
    );
    Plan::from_toml(&text, std::path::Path::new("c.toml"), &[]).unwrap()
}

#[test]
fn single_node_hands_out_every_task_once() {
    let node = Single;
    assert_eq!((node.rank(), node.size()), (0, 1));
    node.barrier().unwrap();
    for policy in ["equitable", "work-queue"] {
        let p = plan(policy);
        let units = [UnitInfo::cpu("cpu"), UnitInfo::cpu("cpu")];
        let source = node.task_source(100, &p, &units, None).unwrap();
        let mut seen = [0u8; 100];
        let mut live = true;
        while live {
            live = false;
            for unit in 0..2 {
                if let Some(c) = source.next(unit, 9) {
                    assert!(c.tasks().len() <= 9);
                    c.tasks().for_each(|t| seen[t] += 1);
                    live = true;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{policy}");
    }
    assert_eq!(plan("equitable").scheduler.policy, Policy::Equitable);
}

#[test]
fn single_node_gathers_nothing_and_reports_itself() {
    let node = Single;
    let mut records = Records {
        words: 2,
        data: vec![1, 2, 3, 4],
    };
    node.gather_records(&mut records).unwrap();
    assert_eq!(records.data, vec![1, 2, 3, 4]);
    let stats = [
        UnitStats {
            name: "cpu0".into(),
            kind: "cpu",
            device: None,
            queue: None,
            tasks: 5,
            chunks: 2,
            busy_seconds: 0.1,
            ended_seconds: 0.1,
            failed: None,
        },
        UnitStats {
            name: "cpu1".into(),
            kind: "cpu",
            device: None,
            queue: None,
            tasks: 6,
            chunks: 1,
            busy_seconds: 0.1,
            ended_seconds: 0.1,
            failed: None,
        },
    ];
    let s = node
        .gather_stats(&stats, &[], serde_json::json!({ "verified": 3 }))
        .unwrap();
    assert_eq!(s[0]["rank"], 0);
    assert_eq!(s[0]["units"], 2);
    assert_eq!(s[0]["tasks"], 11);
    assert_eq!(s[0]["verified"], 3);
    assert_eq!(node.broadcast(vec![1, 2, 3]).unwrap(), vec![1, 2, 3]);
    assert!(node.forward_records(0, 0..1, &[0]).is_err());
    let e = node.fail(Error::Input("x".into()));
    assert_eq!(e.to_string(), "x");
}

#[test]
fn the_servers_pace_follows_the_gaps_its_waiting_senders_leave() {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    // Nobody waits on a server that only receives: it sleeps long; one that answers requests
    // starts short.
    assert_eq!(Pace::new(false).sleep(t0), Pace::LONGEST);
    assert_eq!(Pace::new(true).sleep(t0), Pace::FIRST);
    // Rank 1 asks every 200 ms: the server sleeps 1% of that.
    let mut p = Pace::new(true);
    for i in 0..10 {
        p.heard((1, 0, 1), at(200 * i));
    }
    let s = p.sleep(at(1800)).as_secs_f64();
    assert!((s - 0.002).abs() < 1e-4, "{s}");
    // Units of one rank whose chunks end together: each unit's gap counts, not the
    // millisecond between two units' messages.
    let mut q = Pace::new(true);
    for i in 0..10 {
        for u in 0..4 {
            q.heard((1, u, 1), at(200 * i + u as u64));
        }
    }
    let s = q.sleep(at(1803)).as_secs_f64();
    assert!((s - 0.002).abs() < 1e-4, "{s}");
    // A unit of a second rank asking every 50 ms rules: the shortest gap.
    for i in 0..=36 {
        p.heard((2, 0, 1), at(50 * i));
    }
    let s = p.sleep(at(1800)).as_secs_f64();
    assert!((s - 0.0005).abs() < 1e-4, "{s}");
    // Then it goes quiet (it failed, or left): as its silence grows past the other unit's
    // gap, the other unit's pace rules again.
    let s = p.sleep(at(1800 + 100)).as_secs_f64();
    assert!((s - 0.001).abs() < 1e-4, "{s}");
    for i in 10..=14 {
        p.heard((1, 0, 1), at(200 * i));
    }
    let s = p.sleep(at(1800 + 1000)).as_secs_f64();
    assert!((s - 0.002).abs() < 1e-4, "{s}");
    // Requests every millisecond: never below the shortest sleep; one every 10 s: never above
    // the longest.
    let mut fast = Pace::new(false);
    let mut slow = Pace::new(true);
    for i in 0..10 {
        fast.heard((1, 0, 1), at(i));
        slow.heard((1, 0, 1), at(10_000 * i));
    }
    assert_eq!(fast.sleep(at(9)), Pace::FIRST);
    assert_eq!(slow.sleep(at(90_000)), Pace::LONGEST);
    // A longer gap counts slowly, a shorter one at once: after one request 2 s late, the
    // server sleeps longer until the next request on time.
    let mut p = Pace::new(true);
    for i in 0..10 {
        p.heard((1, 0, 1), at(100 * i));
    }
    p.heard((1, 0, 1), at(900 + 2_000));
    let s = p.sleep(at(2900)).as_secs_f64();
    assert!((s - 0.0048).abs() < 1e-4, "{s}");
    p.heard((1, 0, 1), at(900 + 2_100));
    let s = p.sleep(at(3000)).as_secs_f64();
    assert!((s - 0.001).abs() < 1e-4, "{s}");
}

#[test]
fn a_launcher_of_several_processes_is_named_with_the_mpi_feature() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    // One process, or no launcher: nothing to say.
    assert_eq!(launcher_of_several(env(&[])), None);
    assert_eq!(
        launcher_of_several(env(&[("OMPI_COMM_WORLD_SIZE", "1")])),
        None
    );
    assert_eq!(
        launcher_of_several(env(&[("PMI_SIZE", "1"), ("PMI_RANK", "0")])),
        None
    );
    // A Slurm batch script's own shell sees SLURM_NTASKS but is one process.
    assert_eq!(launcher_of_several(env(&[("SLURM_NTASKS", "4")])), None);
    for (pairs, key) in [
        (
            &[("OMPI_COMM_WORLD_SIZE", "2")][..],
            "OMPI_COMM_WORLD_SIZE=2",
        ),
        (&[("PMI_SIZE", "4"), ("PMI_RANK", "0")][..], "PMI_SIZE=4"),
        (&[("PMIX_RANK", "3")][..], "PMIX_RANK=3"),
        (
            &[("SLURM_STEP_NUM_TASKS", "8")][..],
            "SLURM_STEP_NUM_TASKS=8",
        ),
        (
            &[("SLURM_NTASKS", "2"), ("SLURM_STEP_ID", "0")][..],
            "SLURM_NTASKS=2",
        ),
    ] {
        let pairs: &'static [(&str, &str)] = Box::leak(pairs.to_vec().into_boxed_slice());
        let m = launcher_of_several(env(pairs)).unwrap_or_default();
        assert!(
            m.contains(key) && m.contains("cargo build --release --features mpi"),
            "{pairs:?}: {m}"
        );
    }
    // This test binary's own environment is no launcher's; with the feature it never refuses.
    if cfg!(feature = "mpi") {
        assert!(refuse_launcher_without_mpi().is_ok());
    }
}

#[test]
fn the_reports_units_are_every_ranks() {
    let unit = |name: &str| UnitStats {
        name: name.into(),
        kind: "cpu",
        device: None,
        queue: None,
        tasks: 1,
        chunks: 1,
        busy_seconds: 0.0,
        ended_seconds: 0.0,
        failed: None,
    };
    let mine = [unit("cpu0"), unit("cpu1")];
    let nodes = serde_json::json!([
        { "rank": 0, "units": serde_json::to_value(&mine).unwrap() },
        { "rank": 1, "units": serde_json::to_value([unit("cpu0"), unit("cpu1")]).unwrap() },
        { "rank": 2, "units": serde_json::to_value([unit("gpu0q0")]).unwrap() },
    ]);
    let all = job_units(&mine, &nodes);
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cpu0", "cpu1", "rank1/cpu0", "rank1/cpu1", "rank2/gpu0q0"]
    );
    assert_eq!(all[4]["rank"], 2);
    // A single node's entry counts its units as a number: the units are its own.
    let single = serde_json::json!([{ "rank": 0, "units": 2 }]);
    assert_eq!(job_units(&mine, &single).as_array().unwrap().len(), 2);
}

#[test]
fn local_ranks_divide_a_machines_devices() {
    use super::devices_of_local_rank as share;
    // One rank per device, or fewer ranks than devices: round robin, every device once.
    assert_eq!(share(0, 1, 4), vec![0, 1, 2, 3]);
    assert_eq!(share(0, 2, 4), vec![0, 2]);
    assert_eq!(share(1, 2, 4), vec![1, 3]);
    assert_eq!(share(2, 3, 8), vec![2, 5]);
    for (ranks, devices) in [(1, 1), (2, 3), (3, 8), (8, 8)] {
        let mut all: Vec<usize> = (0..ranks).flat_map(|r| share(r, ranks, devices)).collect();
        all.sort();
        assert_eq!(
            all,
            (0..devices).collect::<Vec<_>>(),
            "{ranks} ranks, {devices} devices"
        );
    }
    // More ranks than devices: each rank one device, shared.
    assert_eq!(share(2, 3, 2), vec![0]);
    assert_eq!(share(3, 4, 2), vec![1]);
    assert!(share(0, 2, 0).is_empty());
    // The ranks that use each device: all of them unless divided; divided, one per device
    // while the devices suffice, else the ranks per device rounded up (as `share` gives them).
    use super::ranks_per_device as per;
    assert_eq!(per(false, 1, 4), 1);
    assert_eq!(per(false, 4, 4), 4);
    assert_eq!(per(true, 4, 4), 1);
    assert_eq!(per(true, 2, 8), 1);
    assert_eq!(per(true, 3, 2), 2);
    assert_eq!(per(true, 5, 2), 3);
    assert_eq!(per(true, 3, 0), 1);
    for (ranks, devices) in [(3usize, 2usize), (4, 2), (5, 2), (7, 3)] {
        let most = (0..devices)
            .map(|d| {
                (0..ranks)
                    .filter(|&r| share(r, ranks, devices) == vec![d])
                    .count()
            })
            .max()
            .unwrap();
        assert_eq!(
            per(true, ranks, devices),
            most,
            "{ranks} ranks, {devices} devices"
        );
    }
}
