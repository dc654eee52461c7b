use super::*;
use crate::sink::NpyRows;

/// A `.npy` file with the header dictionary `dict` and `payload` after it.
fn npy_file(dir: &Path, name: &str, dict: &str, payload: &[u8]) -> PathBuf {
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(payload);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn err<T: Element>(path: &Path) -> String {
    read::<T>(path, Some(2)).unwrap_err().to_string()
}

#[test]
fn rows_of_every_type_read_back_equal() {
    fn round<T: Element>(dir: &Path, values: &[T]) {
        let name = format!("{}.npy", T::TYPE.name());
        let m = NpyRows::of::<T>(&name, 2, values.len() / 2).unwrap();
        m.open(dir, true).unwrap();
        // Rows written out of order, at their offsets.
        m.write(1, &values[values.len() / 2..]).unwrap();
        m.write(0, &values[..values.len() / 2]).unwrap();
        let a = read::<T>(&dir.join(&name), Some(2)).unwrap();
        assert_eq!(a.shape, [2, values.len() / 2]);
        assert_eq!(a.data, values, "{name}");
        assert_eq!(a.row(1), &values[values.len() / 2..]);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    round::<f32>(d, &[1.5, -0.0, f32::INFINITY, 3e-38, 7.25, f32::MIN]);
    round::<f64>(d, &[1.5, -2.0, f64::NAN.copysign(1.0).min(0.0), 1e300]);
    round::<u8>(d, &[0, 255, 7, 9]);
    round::<i8>(d, &[-128, 127, 0, -1]);
    round::<u16>(d, &[0, 65535]);
    round::<i16>(d, &[-32768, 32767]);
    round::<i32>(d, &[i32::MIN, 5]);
    round::<u32>(d, &[u32::MAX, 5]);
    round::<i64>(d, &[i64::MIN, 5]);
    round::<u64>(d, &[u64::MAX, 5]);
}

#[test]
fn float_rows_have_numpys_header() {
    let dir = tempfile::tempdir().unwrap();
    let m = NpyRows::of::<f32>("d.npy", 3, 2).unwrap();
    m.open(dir.path(), true).unwrap();
    let bytes = std::fs::read(dir.path().join("d.npy")).unwrap();
    let head = String::from_utf8_lossy(&bytes[10..bytes.len() - 24]);
    assert!(head.contains("'descr': '<f4'"), "{head}");
    assert!(head.contains("'shape': (3, 2"), "{head}");
    assert_eq!(
        bytes.len() % 64,
        24,
        "a 64-byte aligned header and 3 x 2 x 4 bytes"
    );
}

#[test]
fn a_row_of_another_type_or_length_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = NpyRows::of::<f32>("d.npy", 3, 2).unwrap();
    m.open(dir.path(), true).unwrap();
    let e = m.write(0, &[1.0f64, 2.0]).unwrap_err().to_string();
    assert!(e.contains("float64") && e.contains("float32"), "{e}");
    assert!(m.write(0, &[1.0f32]).is_err());
    assert!(m.write(3, &[1.0f32, 2.0]).is_err());
}

#[test]
fn bad_inputs_are_named_with_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f4 = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let ok = npy_file(
        d,
        "ok.npy",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
        &f4(&[1.0, 2.0, 3.0, 4.0]),
    );
    assert_eq!(
        read::<f32>(&ok, Some(2)).unwrap().data,
        [1.0, 2.0, 3.0, 4.0]
    );
    let e = err::<f64>(&ok);
    assert!(
        e.contains("ok.npy") && e.contains("<f4") && e.contains("float64"),
        "{e}"
    );
    // Same size, another kind: int32 is not float32.
    let ints = npy_file(
        d,
        "ints.npy",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }",
        &f4(&[1.0, 2.0, 3.0, 4.0]),
    );
    let e = err::<f32>(&ints);
    assert!(
        e.contains("ints.npy") && e.contains("<i4") && e.contains("float32"),
        "{e}"
    );
    let e = read::<f32>(&ok, Some(1)).unwrap_err().to_string();
    assert!(e.contains("ok.npy") && e.contains("reads 1"), "{e}");
    let short = npy_file(
        d,
        "short.npy",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
        &f4(&[1.0, 2.0, 3.0]),
    );
    let e = err::<f32>(&short);
    assert!(e.contains("short.npy") && e.contains("truncated"), "{e}");
    let fortran = npy_file(
        d,
        "f.npy",
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
        &f4(&[1.0, 2.0, 3.0, 4.0]),
    );
    let e = err::<f32>(&fortran);
    assert!(e.contains("f.npy") && e.contains("Fortran order"), "{e}");
    let big: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let be = npy_file(
        d,
        "be.npy",
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }",
        &big,
    );
    assert_eq!(
        read::<f32>(&be, Some(2)).unwrap().data,
        [1.0, 2.0, 3.0, 4.0]
    );
    std::fs::write(d.join("text.npy"), "1 2 3\n").unwrap();
    let e = err::<f32>(&d.join("text.npy"));
    assert!(e.contains("text.npy") && e.contains("numpy.save"), "{e}");
    let e = err::<f32>(&d.join("missing.npy"));
    assert!(e.contains("missing.npy"), "{e}");
}
