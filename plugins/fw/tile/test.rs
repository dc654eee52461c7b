//! The tile-shape rules against the device and problem shapes they were measured on.

use super::*;
use tuccompi::device::KernelSource;
use tuccompi::tuning::{characterizations, subset};

const FW: KernelSource = KernelSource {
    stem: "fw",
    source: include_str!("../../kernels/fw.cl"),
    characterization: include_str!("../../kernels/fw.toml"),
};

fn dev(kind: &str, cus: u32, maxwg: usize) -> DeviceInfo {
    DeviceInfo::described(kind, cus, maxwg)
}

fn fw_blocked() -> BTreeMap<String, KernelChar> {
    subset(
        &characterizations(&FW).unwrap(),
        &["fwb_phase1", "fwb_phase2", "fwb_phase3"],
    )
}

#[test]
fn tile_shape_rules() {
    let c = fw_blocked();
    assert_eq!(c["fwb_phase3"].class.as_deref(), Some("product"));
    assert_eq!(c["fwb_phase1"].class.as_deref(), Some("closure"));
    // H200: 132 CUs, 48 KiB local memory, 1024 items per group.
    let t = tile_shape(&c, &dev("gpu", 132, 1024), 16384, TileRequest::default()).unwrap();
    assert_eq!(
        (
            t.block.value,
            t.group.value,
            t.register_rows.value,
            t.register_cols.value
        ),
        (128, 64, 8, 8)
    );
    assert_eq!((t.slab.value, t.closure_register.value), (32, 8));
    assert_eq!(t.local["fwb_phase3"].value, 64);
    assert_eq!(t.local["fwb_phase2"].value, 64);
    assert_eq!(t.local["fwb_phase1"].value, 256);
    assert_eq!(t.block.source, Source::Predicted);
    // Too few 128-blocks to fill 132 CUs twice: 64.
    let t = tile_shape(&c, &dev("gpu", 132, 1024), 2048, TileRequest::default()).unwrap();
    assert_eq!((t.block.value, t.local["fwb_phase3"].value), (64, 64));
    // CPU devices: 4 x 4 over the whole block, no overlap.
    let t = tile_shape(&c, &dev("cpu", 2, 4096), 16384, TileRequest::default()).unwrap();
    assert_eq!(
        (
            t.block.value,
            t.group.value,
            t.register_rows.value,
            t.strips.value
        ),
        (64, 64, 4, 1)
    );
    // The config wins, and the local size follows it.
    let req = TileRequest {
        block: Some(128),
        group: Some(128),
        register: Some((8, 4)),
        slab: Some(16),
        strips: Some(2),
    };
    let t = tile_shape(&c, &dev("gpu", 132, 1024), 16384, req).unwrap();
    assert_eq!(t.local["fwb_phase3"].value, 512);
    assert_eq!(t.slab.value, 16);
    assert_eq!(t.block.source, Source::Config);
}

#[test]
fn tile_shapes_that_cannot_run_are_refused_by_key() {
    let c = fw_blocked();
    let d = dev("gpu", 132, 1024);
    let req = |block, register, slab| TileRequest {
        block,
        group: block,
        register,
        slab,
        strips: None,
    };
    let e = tile_shape(&c, &d, 4096, req(Some(128), Some((8, 6)), None)).unwrap_err();
    assert!(e.contains("register_tile columns = 6"), "{e}");
    let e = tile_shape(&c, &d, 4096, req(Some(40), Some((4, 4)), None)).unwrap_err();
    assert!(e.contains("tile = 40"), "{e}");
    let e = tile_shape(
        &c,
        &d,
        4096,
        TileRequest {
            block: Some(128),
            group: Some(48),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.contains("group = 48"), "{e}");
    // 128 / 4 squared = 1024 items for the product is allowed; 64 x 64 = 4096 is not.
    let e = tile_shape(&c, &d, 4096, req(Some(256), Some((4, 4)), None)).unwrap_err();
    assert!(e.contains("4096 work-items"), "{e}");
    // A slab of 64 for a 128 block: 70 KiB of local memory.
    let e = tile_shape(&c, &d, 4096, req(Some(128), None, Some(64))).unwrap_err();
    assert!(e.contains("slab = 64"), "{e}");
    let e = tile_shape(
        &c,
        &d,
        4096,
        TileRequest {
            strips: Some(0),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.contains("strips = 0"), "{e}");
}
