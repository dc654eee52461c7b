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
    let m = NpyRows::distances(&dir, true, rows, cols, NpyType::U32).unwrap();
    // A second handle, as a non-root rank opens it, writes the odd rows.
    let other = NpyRows::distances(&dir, false, rows, cols, NpyType::U32).unwrap();
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
    let m = NpyRows::create(&p, 2, 2, NpyType::I64).unwrap();
    m.write_i64(1, &[-5, i64::MAX]).unwrap();
    m.write_i64(0, &[7, -1]).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let data: Vec<i64> = npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap();
    assert_eq!(data, vec![7, -1, -5, i64::MAX]);
    let p = dir.join("u.npy");
    let m = NpyRows::create(&p, 1, 2, NpyType::U64).unwrap();
    m.write_u64(0, &[u64::MAX, 3]).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let data: Vec<u64> = npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap();
    assert_eq!(data, vec![u64::MAX, 3]);
}

#[test]
fn whole_files_go_through_a_hidden_temp_name() {
    let dir = tmp("file");
    // A temp file left by a crashed writer is replaced, not appended to.
    std::fs::write(dir.join(".summary.csv.tmp"), "stale garbage").unwrap();
    write_file(&dir, "summary.csv", "a,b\n1,2\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.csv")).unwrap(),
        "a,b\n1,2\n"
    );
    assert!(
        !dir.join(".summary.csv.tmp").exists(),
        "the temp file stays behind"
    );
    // Rewriting replaces the whole file.
    write_file(&dir, "summary.csv", "x\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("summary.csv")).unwrap(),
        "x\n"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["summary.csv"]);
}

#[test]
fn a_missing_directory_is_an_error_naming_the_file() {
    let dir = tmp("missing").join("not-there");
    let err = write_file(&dir, "report.json", "{}")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not-there/.report.json.tmp"), "{err}");
    let err = NpyRows::distances(&dir, false, 1, 1, NpyType::U32)
        .unwrap_err()
        .to_string();
    assert!(err.contains("distances.npy"), "{err}");
}
