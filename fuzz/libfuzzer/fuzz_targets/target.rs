//! One libFuzzer target of tuccompi-fuzz, the one this binary is named after.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let target = tuccompi_fuzz::targets::target(env!("CARGO_BIN_NAME"))
        .expect("each binary is named after a target of tuccompi_fuzz::targets::TARGETS");
    let _ = (target.run)(data);
});
