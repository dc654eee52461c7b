//! Tile shapes of register-tiled kernels: those whose characterization says `tile =
//! "product"` (a min-plus product: each work-item holds a block of C in registers, the operands
//! stream through local memory in slabs) or `tile = "closure"` (a diagonal tile closed pivot by
//! pivot in registers). The shape (block side, register tile, slab depth, closure register
//! tile) fixes the local size of those kernels; [`tile_shape`] picks it from the device and the
//! problem size, with the reason for each value, or takes the config's. [`TILE_RULES`] lists
//! the rules, which [`TileShape::publish`] hands to `tuccompi check` and `report.json` with
//! the shape, as the plugin's own parameters. The kernel's class comes from its
//! characterization (`class = "product"` or `"closure"` in kernels/fw.toml).

use std::collections::BTreeMap;
use tuccompi::device::DeviceInfo;
use tuccompi::tuning::{Choice, KernelChar, LaunchParams, Source};

/// What a register-tiled kernel does with its tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TileKind {
    /// C = min(C, A ⊗ B) on group × group tiles of C; local size (group / rm) · (group / rn).
    Product,
    /// Floyd-Warshall closure of one block × block tile; local size (block / r1)².
    Closure,
}

impl TileKind {
    /// The tile kind a characterization's `class` names (`None`: not register-tiled).
    pub fn of(c: &KernelChar) -> Option<TileKind> {
        match c.class.as_deref() {
            Some("product") => Some(TileKind::Product),
            Some("closure") => Some(TileKind::Closure),
            _ => None,
        }
    }
}

/// Values set in the config (None: predict).
#[derive(Debug, Clone, Copy, Default)]
pub struct TileRequest {
    /// Block side (pivots per round).
    pub block: Option<usize>,
    /// Side of the C tile one work-group of a product kernel owns (divides the block).
    pub group: Option<usize>,
    /// Register tile of the product kernels, rows × columns.
    pub register: Option<(usize, usize)>,
    /// Pivots per local-memory slab.
    pub slab: Option<usize>,
    /// Row strips whose transfers overlap the computation (1: none).
    pub strips: Option<usize>,
}

/// The chosen shape.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TileShape {
    /// Block side.
    pub block: Choice,
    /// C tile side of one work-group of the product kernels.
    pub group: Choice,
    /// Register tile rows of the product kernels.
    pub register_rows: Choice,
    /// Register tile columns of the product kernels.
    pub register_cols: Choice,
    /// Pivots per slab.
    pub slab: Choice,
    /// Register tile side of the closure kernel.
    pub closure_register: Choice,
    /// Row strips for overlapped transfers.
    pub strips: Choice,
    /// Local size of every register-tiled kernel.
    pub local: BTreeMap<String, Choice>,
}

impl TileShape {
    /// Hand the shape to `p` as the plugin's own parameters (`block`, `group_tile`,
    /// `register_rows`, `register_cols`, `slab`, `closure_register`, `strips`), the
    /// register-tiled kernels' local sizes, and the rules that chose them.
    pub fn publish(&self, p: &mut LaunchParams) {
        for (name, c) in [
            ("block", &self.block),
            ("group_tile", &self.group),
            ("register_rows", &self.register_rows),
            ("register_cols", &self.register_cols),
            ("slab", &self.slab),
            ("closure_register", &self.closure_register),
            ("strips", &self.strips),
        ] {
            p.set_knob(name, c.clone());
        }
        for (name, c) in &self.local {
            p.local.insert(name.clone(), c.clone());
        }
        for (when, what) in TILE_RULES {
            p.add_rule(when, what);
        }
    }

    /// Bytes of local memory one work-group of a product kernel uses (group tile, slab).
    pub fn product_local_bytes(group: usize, slab: usize) -> usize {
        // Saturating: a slab or group set in the config to 2^62 is refused with this figure.
        group
            .saturating_mul(slab.saturating_add(4))
            .saturating_add(slab.saturating_mul(group))
            .saturating_mul(4)
    }
}

/// The rules, one line each.
pub const TILE_RULES: &[(&str, &str)] = &[
    ("register tile, GPU", "8 x 8: 64 results per work-item, 16 16-byte local loads per 256 add-mins, operands reused from registers (H200, n = 16,384, kernels: 14.1 T updates/s; 4 x 4 with 256 items per 64 x 64 group: 13.4 T)"),
    ("register tile, CPU device (PoCL)", "4 x 4: PoCL vectorizes across work-items; larger tiles only lengthen each item"),
    ("block (pivots per round)", "GPU: 128 when the off-pivot blocks number at least 2 per compute unit ((n/128 - 1)^2 >= 2 CUs), else 64; CPU devices: 64. Each round reads and writes the matrix once and runs one closure on one compute unit: a larger block halves both (H200, n = 16,384: 128 14.1 T, 64 13.6 T)"),
    ("group tile (C tile of one work-group)", "GPU: 64: several groups per compute unit, so that one group's slab loads and barriers overlap another's add-mins (H200, n = 16,384: 64 x 64 groups 14.1 T, 128 x 128 groups, one per SM, 12.2 T); CPU devices: the block"),
    ("slab (pivots staged per barrier)", "the largest of 32, 16, 8, 4 whose two slabs fit in local memory and split evenly over the work-group (H200: 32 and 16 ran alike, 14.1 and 14.0 T)"),
    ("closure register tile", "4, doubled while more than 256 work-items would close the diagonal tile (one pivot per barrier): 8 for a block of 128"),
    ("strips (transfers overlapped with rounds)", "GPU: 4: row strips uploaded while the first strips compute and read back while the others finish; the first strip's upload and the last one's read-back stay exposed (H200, n = 16,384, whole run: 1 strip 0.383 s, 2 0.357, 4 0.352, 8 0.354); CPU devices: 1 (no copy engine to overlap)"),
    ("local size of register-tiled kernels", "follows from the shape: (group / rows) x (group / columns) for products, (block / closure tile)^2 for the closure"),
];

fn choice(value: usize, set: bool, config: &str, rule: usize) -> Choice {
    if set {
        Choice {
            value,
            source: Source::Config,
            reason: config.to_string(),
        }
    } else {
        Choice {
            value,
            source: Source::Predicted,
            reason: TILE_RULES[rule].1.to_string(),
        }
    }
}

/// The tile shape of the register-tiled kernels among `chars` on `dev` for an n × n problem.
/// Values in `req` win over the rules; an invalid combination is an error naming the key
/// (`tile`, `group`, `register_tile`, `slab`, `strips`) and what would fit.
pub fn tile_shape(
    chars: &BTreeMap<String, KernelChar>,
    dev: &DeviceInfo,
    n: usize,
    req: TileRequest,
) -> Result<TileShape, String> {
    let gpu = dev.kind == "gpu";
    let maxwg = dev.max_work_group.max(1);
    let (rm, rn) = req.register.unwrap_or(if gpu { (8, 8) } else { (4, 4) });
    let reg_rule = if gpu { 0 } else { 1 };
    let blocks = |b: usize| n.div_ceil(b).saturating_sub(1).pow(2);
    let block = req
        .block
        .unwrap_or(if gpu && blocks(128) >= 2 * dev.compute_units as usize {
            128
        } else {
            64
        });
    // The block is a side of tiles in device memory and of the closure's work-group: beyond
    // this, every product would overflow and no device's work-group could close it.
    const MAX_BLOCK: usize = 1 << 12;
    if block > MAX_BLOCK {
        return Err(format!(
            "tile = {block}: at most {MAX_BLOCK} pivots per round; use a multiple of 16 up to \
             {MAX_BLOCK} or \"auto\""
        ));
    }
    if block == 0 || !block.is_multiple_of(16) {
        return Err(format!(
            "tile = {block} must be a multiple of 16 (the block of pivots per round)"
        ));
    }
    let group = req.group.unwrap_or(if gpu { 64.min(block) } else { block });
    if group == 0 || !block.is_multiple_of(group) || !group.is_multiple_of(16) {
        return Err(format!(
            "group = {group} must be a multiple of 16 dividing the tile ({block})"
        ));
    }
    for (what, r) in [("rows", rm), ("columns", rn)] {
        if r == 0 || r % 4 != 0 || !group.is_multiple_of(r) {
            return Err(format!(
                "register_tile {what} = {r} must be a multiple of 4 dividing the group tile ({group})"
            ));
        }
    }
    let local = (group / rm) * (group / rn);
    if local > maxwg {
        return Err(format!(
            "group tile {group} with a {rm} x {rn} register tile needs {local} work-items per \
             group; '{}' allows {maxwg}: use a larger register tile or a smaller group",
            dev.name
        ));
    }
    let fits = |kc: usize| {
        block.is_multiple_of(kc)
            && (group * kc / 4).is_multiple_of(local)
            && TileShape::product_local_bytes(group, kc) as u64 <= dev.local_mem
    };
    let slab = match req.slab {
        Some(kc) => {
            if kc == 0 || kc % 4 != 0 || !fits(kc) {
                return Err(format!(
                    "slab = {kc} must be a multiple of 4 dividing the tile ({block}), its slabs \
                     ({} bytes) must fit the device's {} bytes of local memory, and group x slab \
                     / 4 must be a multiple of the local size {local}",
                    TileShape::product_local_bytes(group, kc),
                    dev.local_mem
                ));
            }
            kc
        }
        None => [32, 16, 8, 4]
            .into_iter()
            .find(|&kc| fits(kc))
            .ok_or_else(|| {
                format!(
                    "no slab fits: group tile {group} with a {rm} x {rn} register tile on '{}' \
                     ({} bytes of local memory); use a smaller group",
                    dev.name, dev.local_mem
                )
            })?,
    };
    let mut r1 = 4;
    while (block / r1).pow(2) > 256 && block.is_multiple_of(2 * r1) {
        r1 *= 2;
    }
    let local1 = (block / r1).pow(2);
    if local1 > maxwg {
        return Err(format!(
            "tile = {block}: its closure needs {local1} work-items per group; '{}' allows {maxwg}",
            dev.name
        ));
    }
    let strips = req.strips.unwrap_or(if gpu { 4 } else { 1 });
    if strips == 0 {
        return Err("strips = 0: at least 1 (1 = no overlap of transfers)".into());
    }
    let set = req.block.is_some() || req.group.is_some() || req.register.is_some();
    let mut locals = BTreeMap::new();
    for (name, c) in chars {
        let (v, why) = match TileKind::of(c) {
            Some(TileKind::Product) => (
                local,
                format!("(group {group} / {rm}) x (group {group} / {rn})"),
            ),
            Some(TileKind::Closure) => (local1, format!("(tile {block} / {r1})^2")),
            None => continue,
        };
        locals.insert(
            name.clone(),
            Choice {
                value: v,
                source: if set {
                    Source::Config
                } else {
                    Source::Predicted
                },
                reason: format!("{why}: {}", TILE_RULES[7].1),
            },
        );
    }
    Ok(TileShape {
        block: choice(block, req.block.is_some(), "tile", 2),
        group: choice(group, req.group.is_some(), "group", 3),
        register_rows: choice(rm, req.register.is_some(), "register_tile", reg_rule),
        register_cols: choice(rn, req.register.is_some(), "register_tile", reg_rule),
        slab: choice(slab, req.slab.is_some(), "slab", 4),
        closure_register: choice(r1, false, "", 5),
        strips: choice(strips, req.strips.is_some(), "strips", 6),
        local: locals,
    })
}

#[cfg(test)]
mod test;
