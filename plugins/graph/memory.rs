//! Memory estimates checked before allocating: a header that declares 200 million vertices,
//! or `run.sources = "all"` over them, is refused with the estimate instead of ending in the
//! kernel's OOM killer (Linux overcommits, so the allocations themselves succeed and the pages
//! run out later, while they are written).

use tuccompi::{Error, Result};

/// Bytes a graph of `n` vertices and `m` arcs needs while it is read and turned into a CSR: the
/// edge list (16 bytes an arc), the CSR build's counters and arc pairs (16 bytes a vertex, 8 an
/// arc) and the CSR itself (4 a vertex, 8 an arc).
pub fn input_bytes(n: u64, m: u64) -> u64 {
    m.saturating_mul(32).saturating_add(n.saturating_mul(20))
}

/// Bytes the machine can still give this process ([`tuccompi::sink::available_memory`]).
pub use tuccompi::sink::available_memory as available;

/// Refuse `need` bytes for `what` when more than `available` ([`available`] in a run): `what`
/// names the input and `detail` says what the estimate is made of. No estimate is exact; the
/// check catches the requests that are far out of reach, not the ones that are close.
pub fn check_against(what: &str, need: u64, detail: &str, available: Option<u64>) -> Result<()> {
    match available {
        Some(avail) if need > avail => Err(Error::Input(format!(
            "{what}: needs about {} ({detail}), but this machine has {} available; use a \
             smaller input or fewer tasks, or a machine with more memory",
            gib(need),
            gib(avail)
        ))),
        _ => Ok(()),
    }
}

/// [`check_against`] this machine's [`available`] memory.
pub fn check(what: &str, need: u64, detail: &str) -> Result<()> {
    check_against(what, need, detail, available())
}

/// Bytes as GiB with one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn memory_beyond_what_is_available_is_refused_with_the_estimate() {
        let need = input_bytes(200_000_000, 1);
        assert_eq!(need, 4_000_000_032);
        let e = check_against("g.gr:1", need, "200000000 vertices", Some(1 << 30))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("g.gr:1: needs about 3.7 GiB (200000000 vertices), but this machine has 1.0 GiB available"),
            "{e}"
        );
        assert!(check_against("g", need, "", Some(need)).is_ok());
        assert!(check_against("g", u64::MAX, "", None).is_ok());
        // This machine reports its memory (Linux).
        if cfg!(target_os = "linux") {
            assert!(available().is_some_and(|a| a > 0));
        }
    }
}
