//! The fuzz tests: every target's corpus replayed and a fixed-seed, bounded number of mutated
//! cases (`targets::*`), the named regression tests of the crashes fuzzing found
//! (`regressions::*`), and checks of the corpus itself.
//!
//! The memory guard is this binary's allocator: an allocation of more than 256 MiB
//! (`TUCCOMPI_FUZZ_ALLOC_MIB`) is refused and is a finding.

#[global_allocator]
static GUARD: tuccompi_fuzz::guard::Guard = tuccompi_fuzz::guard::Guard;

mod regressions;

/// One test per target, named as the target.
mod targets {
    macro_rules! targets {
        ($($name:ident),* $(,)?) => {
            $(
                #[test]
                fn $name() {
                    tuccompi_fuzz::harness::check(stringify!($name));
                }
            )*

            /// The names above, to check that every target has its test.
            pub(crate) const TESTED: &[&str] = &[$(stringify!($name)),*];
        };
    }

    targets!(
        gr,
        mtx,
        el,
        wel,
        txt,
        csv,
        tsv,
        gz,
        co,
        ids_txt,
        ids_csv,
        ids_npy,
        npy,
        npy_matrix,
        osm,
        config,
        set,
        journal,
        commit_marker,
        history,
        tuning_cache,
        graph_cache,
        hierarchy_cache,
    );
}

mod corpus {
    use tuccompi_fuzz::harness::{corpus_dir, inputs};
    use tuccompi_fuzz::targets::TARGETS;

    #[test]
    fn every_target_has_its_test_and_a_small_seed_corpus() {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        assert_eq!(names, crate::targets::TESTED);
        for t in TARGETS {
            let files = inputs(&corpus_dir(t.name));
            assert!(files.len() >= 3, "corpus/{}: {} files", t.name, files.len());
            for (p, bytes) in &files {
                assert!(
                    bytes.len() <= 20 << 10,
                    "{}: {} bytes",
                    p.display(),
                    bytes.len()
                );
            }
        }
    }

    /// The generated seeds are the committed ones; `TUCCOMPI_FUZZ_WRITE_SEEDS=1` writes them.
    #[test]
    fn generated_seeds_are_committed() {
        let write = std::env::var_os("TUCCOMPI_FUZZ_WRITE_SEEDS").is_some();
        let mut stale = Vec::new();
        for (target, name, bytes) in tuccompi_fuzz::seeds::all() {
            let p = corpus_dir(target).join(name);
            if write {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, &bytes).unwrap();
            } else if std::fs::read(&p).ok().as_ref() != Some(&bytes) {
                stale.push(p.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "generated seeds differ from the corpus (TUCCOMPI_FUZZ_WRITE_SEEDS=1 cargo test -p \
             tuccompi-fuzz generated_seeds writes them): {stale:?}"
        );
    }
}
