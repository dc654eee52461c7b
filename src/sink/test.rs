//! Sinks alone: rows land at their offsets in any order and from a second handle (another MPI
//! rank), the header is npy's own, and whole files are written through a temp file.

use super::*;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tuccompi-sink-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn rows_land_at_their_offsets_in_any_order() {
    let dir = tmp("rows");
    let (rows, cols) = (5, 3);
    let m = NpyRows::new("distances.npy", rows, cols, NpyType::U32).unwrap();
    m.open(&dir, true).unwrap();
    // A second handle, as a non-root rank opens it, writes the odd rows.
    let other = NpyRows::new("distances.npy", rows, cols, NpyType::U32).unwrap();
    other.open(&dir, false).unwrap();
    for r in [4, 0, 2] {
        m.write_u32(r, &[r as u32 * 10, r as u32 * 10 + 1, u32::MAX])
            .unwrap();
    }
    for r in [3, 1] {
        other
            .write_u32(r, &[r as u32 * 10, r as u32 * 10 + 1, u32::MAX])
            .unwrap();
    }
    m.sync().unwrap();
    let bytes = std::fs::read(dir.join("distances.npy")).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(npy.shape(), &[5, 3]);
    let data: Vec<u32> = npy.into_vec().unwrap();
    let want: Vec<u32> = (0..5u32)
        .flat_map(|r| [r * 10, r * 10 + 1, u32::MAX])
        .collect();
    assert_eq!(data, want);
}

#[test]
fn wide_and_signed_rows_round_trip() {
    let dir = tmp("wide");
    let p = dir.join("w.npy");
    let m = NpyRows::new("w.npy", 2, 2, NpyType::I64).unwrap();
    m.open(&dir, true).unwrap();
    m.write_i64(1, &[-5, i64::MAX]).unwrap();
    m.write_i64(0, &[7, -1]).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let data: Vec<i64> = npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap();
    assert_eq!(data, vec![7, -1, -5, i64::MAX]);
    let p = dir.join("u.npy");
    let m = NpyRows::new("u.npy", 1, 2, NpyType::U64).unwrap();
    m.open(&dir, true).unwrap();
    m.write_u64(0, &[u64::MAX, 3]).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let data: Vec<u64> = npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap();
    assert_eq!(data, vec![u64::MAX, 3]);
}

#[test]
fn whole_files_go_through_a_hidden_temp_name() {
    let dir = tmp("file");
    // A temp file of an earlier version's name is not this writer's: left alone, never used.
    std::fs::write(dir.join(".summary.csv.tmp"), "stale garbage").unwrap();
    write_file(&dir, "summary.csv", "a,b\n1,2\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.csv")).unwrap(),
        "a,b\n1,2\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(".summary.csv.tmp")).unwrap(),
        "stale garbage"
    );
    // Rewriting replaces the whole file.
    write_file(&dir, "summary.csv", "x\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.csv")).unwrap(),
        "x\n"
    );
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![".summary.csv.tmp", "summary.csv"],
        "no temp file stays"
    );
}

#[test]
fn a_missing_directory_is_an_error_naming_the_file() {
    let dir = tmp("missing").join("not-there");
    let err = write_file(&dir, "report.json", "{}")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not-there"), "{err}");
    let rows = NpyRows::new("distances.npy", 1, 1, NpyType::U32).unwrap();
    let err = rows.open(&dir, false).unwrap_err().to_string();
    assert!(err.contains("not-there/distances.npy"), "{err}");
    // Declared but not opened: writing is an error, not a silent no-op.
    let err = rows.write_u32(0, &[1]).unwrap_err().to_string();
    assert!(err.contains("before the runtime opened it"), "{err}");
}

#[test]
fn reopening_checks_shape_and_keeps_rows() {
    let dir = tmp("reopen");
    let m = NpyRows::new("d.npy", 3, 2, NpyType::U32).unwrap();
    assert_eq!(m.bytes(), 128 + 3 * 2 * 4);
    m.open(&dir, true).unwrap();
    m.write_u32(1, &[5, 6]).unwrap();
    drop(m);
    // A resumed run reopens the file: its rows stay.
    let again = NpyRows::new("d.npy", 3, 2, NpyType::U32).unwrap();
    again.open(&dir, false).unwrap();
    again.write_u32(2, &[7, 8]).unwrap();
    let bytes = std::fs::read(dir.join("d.npy")).unwrap();
    let data: Vec<u32> = npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap();
    assert_eq!(data, vec![0, 0, 5, 6, 7, 8]);
    // Another shape or type is another run's file.
    for other in [
        NpyRows::new("d.npy", 4, 2, NpyType::U32).unwrap(),
        NpyRows::new("d.npy", 3, 2, NpyType::U64).unwrap(),
    ] {
        let e = other.open(&dir, false).unwrap_err().to_string();
        assert!(
            e.contains("another matrix") && e.contains("--restart"),
            "{e}"
        );
    }
}

#[test]
fn a_short_distances_file_is_called_cut_short_not_another_runs() {
    let dir = tmp("short");
    let m = NpyRows::new("d.npy", 3, 2, NpyType::U32).unwrap();
    m.open(&dir, true).unwrap();
    drop(m);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("d.npy"))
        .unwrap();
    f.set_len(128 + 5).unwrap();
    let again = NpyRows::new("d.npy", 3, 2, NpyType::U32).unwrap();
    let e = again.open(&dir, false).unwrap_err().to_string();
    assert!(
        e.contains("cut short") && e.contains("--restart") && !e.contains("another"),
        "{e}"
    );
}

#[test]
fn a_planted_link_at_the_distances_file_is_never_followed() {
    let dir = tmp("npy-link");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let part = dir.join("partial");
    std::fs::create_dir(&part).unwrap();
    std::os::unix::fs::symlink(&victim, part.join("d.npy")).unwrap();
    for create in [true, false] {
        let m = NpyRows::new("d.npy", 3, 2, NpyType::U32).unwrap();
        let e = m.open(&part, create).unwrap_err().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("--restart"),
            "{e}"
        );
    }
    // The journal of a resumed run, planted as a link: refused, not truncated nor appended.
    let j = part.join("journal");
    std::os::unix::fs::symlink(&victim, &j).unwrap();
    let d = std::time::Duration::ZERO;
    assert!(journal::Journal::open(&j, 1, d, vec![], Some(0)).is_err());
    assert!(journal::Journal::open(&j, 1, d, vec![], None).is_err());
    assert!(journal::replay(&j, 1, 1, |_, _| {}).is_err());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}
