//! The CPU PHAST worker's tuning rule: what the host's caches say about how many trees to sweep
//! at once.
//!
//! The cache sizes come from Linux's sysfs (`/sys/devices/system/cpu/cpu0/cache`); elsewhere, or
//! when unreadable, a conservative 512 KiB L2 and 2 MiB of L3 per core are assumed.

use tuccompi::tuning::{Choice, Source};

/// Data caches one core can count on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuCache {
    /// Private L2 bytes.
    pub l2: u64,
    /// Shared L3 bytes.
    pub l3: u64,
    /// Cores sharing the L3.
    pub l3_sharing: u64,
}

impl CpuCache {
    /// Bytes of cache per core: its L2 plus its share of the L3.
    pub fn per_core(&self) -> u64 {
        self.l2 + self.l3 / self.l3_sharing.max(1)
    }

    /// The host's caches, read once.
    pub fn host() -> CpuCache {
        static HOST: std::sync::OnceLock<CpuCache> = std::sync::OnceLock::new();
        *HOST.get_or_init(|| read_sysfs().unwrap_or(FALLBACK))
    }
}

const FALLBACK: CpuCache = CpuCache {
    l2: 512 << 10,
    l3: 2 << 20,
    l3_sharing: 1,
};

fn read_sysfs() -> Option<CpuCache> {
    let mut c = CpuCache {
        l2: 0,
        l3: 0,
        l3_sharing: 1,
    };
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let Some(level) = read("level") else { break };
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let size = parse_size(read("size")?.trim())?;
        match level.trim() {
            "2" => c.l2 = size,
            "3" => {
                c.l3 = size;
                c.l3_sharing = read("shared_cpu_list").map_or(1, |l| count_cpus(l.trim()));
            }
            _ => {}
        }
    }
    (c.l2 > 0).then_some(c)
}

/// `32K`, `1024K`, `32M` or plain bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|x| x * mul)
}

/// CPUs in a list such as `0-3,8-11`.
fn count_cpus(list: &str) -> u64 {
    list.split(',')
        .filter_map(|r| match r.split_once('-') {
            Some((a, b)) => Some(b.parse::<u64>().ok()? - a.parse::<u64>().ok()? + 1),
            None => r.parse::<u64>().ok().map(|_| 1),
        })
        .sum::<u64>()
        .max(1)
}

/// PHAST trees per batch on one CPU core for `n` vertices of `value_bytes`-byte distances:
/// the largest of 8, 16, 32 whose distance array (`n·k·value_bytes`) fits the core's cache
/// share, else 8 (the AVX2 width for u32, the least that keeps the vector lanes full).
pub fn phast_trees(n: usize, value_bytes: usize, cache: &CpuCache) -> Choice {
    let room = cache.per_core();
    let k = [32usize, 16, 8]
        .into_iter()
        .find(|&k| (n * k * value_bytes) as u64 <= room)
        .unwrap_or(8);
    Choice {
        value: k,
        source: Source::Predicted,
        reason: format!(
            "{} ({} KiB of cache per core here)",
            phast_rule(),
            room >> 10
        ),
    }
}

/// The PHAST rule: when it applies, and what it chooses and why.
pub const PHAST_RULE: (&str, &str) = ("PHAST trees at once (CPU)", "the largest of 8, 16, 32 whose n x k distances fit one core's cache share (L2 + L3 / cores sharing it), else 8: on the 2-core development machine (16.5 MiB per core) osm-bremen-dist (5 MB at k = 32) ran fastest at 32; on osm-moscow 8 and 16 (13 and 26 MB) were within 20% of each other from run to run and 32 (52 MB) slower (BENCHMARKS.md)");

/// The PHAST rule's text.
fn phast_rule() -> &'static str {
    PHAST_RULE.1
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("x"), None);
        assert_eq!(count_cpus("0-1"), 2);
        assert_eq!(count_cpus("0-3,8-11,15"), 9);
    }

    #[test]
    fn trees_follow_the_cache_share() {
        // This machine's shape: 512 KiB L2, 32 MiB L3 over 2 cores = 16.5 MiB per core.
        let c = CpuCache {
            l2: 512 << 10,
            l3: 32 << 20,
            l3_sharing: 2,
        };
        // osm-moscow, u32: 16 trees (26 MB) overflow, 8 (13 MB) fit.
        assert_eq!(phast_trees(411_992, 4, &c).value, 8);
        // osm-bremen-dist: 32 trees are 5 MB.
        assert_eq!(phast_trees(40_461, 4, &c).value, 32);
        // Nothing fits: still 8.
        assert_eq!(phast_trees(10_000_000, 8, &c).value, 8);
        assert!(phast_trees(1, 4, &c)
            .reason
            .contains("KiB of cache per core"));
        assert!(phast_rule().starts_with("the largest of 8, 16, 32"));
    }
}
