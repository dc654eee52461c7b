//! The PHAST sweep's modelled DRAM traffic per vertex per tree: the level sweep replayed over
//! a least-recently-used cache of distance rows (a row is one vertex's `k` distances, read
//! whole by the items of each vertex that pulls over it), for the hierarchy's vertex order
//! within levels (breadth-first) and for others (id, depth-first, by a tail's position).
//!
//!     cargo bench --bench sweep_bytes -- [GRAPH] [K] [CACHE_MIB...]
//!
//! Default graph: ../shared/data/osm-moscow.gr.gz; K = 4096 trees (16 KiB rows of u32);
//! caches 25 and 50 MiB (an H100's L2 is 50 MiB in two halves). Counted per vertex per tree,
//! in distance words: the row written, the tails' rows that miss, and the summary's read
//! (1 when it reads every row after the sweep, 0 for rows the sweep folds as it writes).

use std::time::Instant;
use tuccompi_plugins::apsp::phast::ch::{breadth_first, ChParams, Hierarchy};
use tuccompi_plugins::graph::{read_graph, Csr};

/// Least-recently-used cache of `cap` rows by stack distance: a Fenwick tree over access
/// times marks each row's last access; a row hits when fewer than `cap` distinct rows were
/// touched since.
struct Lru {
    cap: usize,
    last: Vec<usize>,
    tree: Vec<i32>,
    now: usize,
}

impl Lru {
    fn new(rows: usize, accesses: usize, cap: usize) -> Lru {
        Lru {
            cap,
            last: vec![usize::MAX; rows],
            tree: vec![0; accesses + 2],
            now: 0,
        }
    }
    fn add(&mut self, mut i: usize, v: i32) {
        i += 1;
        while i < self.tree.len() {
            self.tree[i] += v;
            i += i & i.wrapping_neg();
        }
    }
    fn prefix(&self, mut i: usize) -> i64 {
        let mut s = 0i64;
        while i > 0 {
            s += self.tree[i] as i64;
            i &= i - 1;
        }
        s
    }
    /// Touch row `r`; true on a hit.
    fn touch(&mut self, r: usize) -> bool {
        let t = self.now;
        self.now += 1;
        let l = self.last[r];
        let hit = if l == usize::MAX {
            false
        } else {
            // Distinct rows touched after l: marks in (l, t).
            let distinct = self.prefix(t) - self.prefix(l + 1);
            self.add(l, -1);
            (distinct as usize) < self.cap
        };
        self.add(t, 1);
        self.last[r] = t;
        hit
    }
}

/// Words per vertex per tree moved by the sweep in the order `seq` (old positions, level by
/// level): (written, tail reads that miss).
fn replay(h: &Hierarchy<u32>, seq: &[u32], cap: usize) -> (f64, f64) {
    let arcs = h.down_tails.len();
    let mut lru = Lru::new(h.n, arcs + h.n, cap);
    let mut miss = 0u64;
    for &p in seq {
        let (a, b) = (
            h.down_offsets[p as usize] as usize,
            h.down_offsets[p as usize + 1] as usize,
        );
        for &t in &h.down_tails[a..b] {
            if !lru.touch(t as usize) {
                miss += 1;
            }
        }
        lru.touch(p as usize);
    }
    (1.0, miss as f64 / h.n as f64)
}

/// Within each level, positions sorted by `key(tail positions in the new order)`, ties by
/// the old position; levels top first. Returns the sequence of old positions.
fn reorder(h: &Hierarchy<u32>, key: impl Fn(&mut Vec<u32>) -> u64) -> Vec<u32> {
    let mut newpos = vec![u32::MAX; h.n];
    let mut seq = Vec::with_capacity(h.n);
    let mut tails = Vec::new();
    for w in h.levels.windows(2) {
        let mut lv: Vec<(u64, u32)> = (w[0]..w[1])
            .map(|p| {
                let (a, b) = (
                    h.down_offsets[p as usize] as usize,
                    h.down_offsets[p as usize + 1] as usize,
                );
                tails.clear();
                tails.extend(h.down_tails[a..b].iter().map(|&t| newpos[t as usize]));
                (key(&mut tails), p)
            })
            .collect();
        lv.sort_unstable();
        for (_, p) in lv {
            newpos[p as usize] = seq.len() as u32;
            seq.push(p);
        }
    }
    seq
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let path = args.first().cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/data/osm-moscow.gr.gz"
        )
        .into()
    });
    let k: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let caches: Vec<usize> = if args.len() > 2 {
        args[2..].iter().filter_map(|s| s.parse().ok()).collect()
    } else {
        vec![25, 50]
    };
    let g = Csr::from_edges(&read_graph(std::path::Path::new(&path)).expect("graph")).expect("csr");
    let t = Instant::now();
    let h = Hierarchy::<u32>::build(&g, &ChParams::default(), None).expect("hierarchy");
    let sizes: Vec<u32> = h.levels.windows(2).map(|w| w[1] - w[0]).collect();
    let bottom = *sizes.last().unwrap_or(&0);
    println!(
        "{path}: n {} downward arcs {} ({:.2} per vertex), {} levels, bottom level {} ({:.1}%), built in {:.1} s",
        h.n,
        h.down_tails.len(),
        h.down_tails.len() as f64 / h.n as f64,
        sizes.len(),
        bottom,
        100.0 * bottom as f64 / h.n as f64,
        t.elapsed().as_secs_f64()
    );
    let leaves = {
        let mut read = vec![false; h.n];
        for &t in &h.down_tails {
            read[t as usize] = true;
        }
        read.iter().filter(|&&r| !r).count()
    };
    println!(
        "vertices no other vertex pulls over: {leaves} ({:.1}%)",
        100.0 * leaves as f64 / h.n as f64
    );
    let built: Vec<u32> = (0..h.n as u32).collect();
    // The hierarchy's own order within levels is breadth-first ([`breadth_first`]); id order
    // and depth-first ranks for comparison.
    let lvl = |p: u32| h.levels.partition_point(|&b| b <= p);
    let by_rank = |rank: &dyn Fn(u32) -> u32| {
        let mut seq: Vec<u32> = (0..h.n as u32).collect();
        seq.sort_by_key(|&p| (lvl(p), rank(h.order[p as usize])));
        seq
    };
    let bfs = breadth_first(&g);
    assert!(
        by_rank(&|v| bfs[v as usize]) == built,
        "the hierarchy orders each level by breadth-first rank"
    );
    let by_id = by_rank(&|v| v);
    // Depth-first preorder ranks, component by component.
    let dfs = {
        let mut rank = vec![u32::MAX; g.n];
        let mut next = 0u32;
        let mut st = Vec::new();
        for s in 0..g.n as u32 {
            if rank[s as usize] != u32::MAX {
                continue;
            }
            st.push(s);
            while let Some(u) = st.pop() {
                if rank[u as usize] != u32::MAX {
                    continue;
                }
                rank[u as usize] = next;
                next += 1;
                let (a, b) = (
                    g.offsets[u as usize] as usize,
                    g.offsets[u as usize + 1] as usize,
                );
                for &v in g.targets[a..b].iter().rev() {
                    if rank[v as usize] == u32::MAX {
                        st.push(v);
                    }
                }
            }
        }
        rank
    };
    let by_dfs = by_rank(&|v| dfs[v as usize]);
    let distinct = {
        let mut read = vec![false; h.n];
        for &t in &h.down_tails {
            read[t as usize] = true;
        }
        read.iter().filter(|&&r| r).count()
    };
    // Each row read once per level that pulls over it (the least a level-by-level sweep can
    // miss when no row stays cached from one level's launch to the next).
    let per_level = {
        let mut seen = vec![u32::MAX; h.n];
        let mut c = 0usize;
        for (l, w) in h.levels.windows(2).enumerate() {
            let (a, b) = (h.down_offsets[w[0] as usize], h.down_offsets[w[1] as usize]);
            for &t in &h.down_tails[a as usize..b as usize] {
                if seen[t as usize] != l as u32 {
                    seen[t as usize] = l as u32;
                    c += 1;
                }
            }
        }
        c
    };
    println!(
        "each row read once at most: {:.2} tail reads per vertex; once per level pulling over it: {:.2}",
        distinct as f64 / h.n as f64,
        per_level as f64 / h.n as f64
    );
    let orders: Vec<(&str, Vec<u32>)> = vec![
        ("level, id", by_id),
        ("as built (level, breadth-first)", built),
        ("level, depth-first", by_dfs),
        (
            "min tail",
            reorder(&h, |t| t.iter().min().map_or(u64::MAX, |&x| x as u64)),
        ),
        (
            "max tail",
            reorder(&h, |t| t.iter().max().map_or(u64::MAX, |&x| x as u64)),
        ),
        (
            "median tail",
            reorder(&h, |t| {
                t.sort_unstable();
                t.get(t.len() / 2).map_or(u64::MAX, |&x| x as u64)
            }),
        ),
    ];
    for mib in caches {
        let cap = (mib << 20) / (4 * k);
        for (name, seq) in &orders {
            let (w, r) = replay(&h, seq, cap);
            println!(
                "cache {mib} MiB ({cap} rows of {k}), {name:<31}: per vertex per tree {w:.2} written + {r:.2} tail reads missed = {:.2} words, {:.1} bytes with the summary's read",
                w + r,
                4.0 * (w + r + 1.0)
            );
        }
    }
}
