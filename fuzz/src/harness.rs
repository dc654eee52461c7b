//! The harness: replays a target's corpus, then runs mutated cases from a fixed seed, each
//! under a time limit (a watchdog thread) and the memory guard ([`crate::guard`], when the
//! binary installs it). A panic, a case over the time limit or an allocation the guard refused
//! is a finding: its input is written to the findings folder (`TARGET/KIND-HASH`, with a
//! `.txt` beside it saying what happened), a panic's input first made smaller.
//!
//! Settings come from the environment, so that the same test runs briefly in CI and for hours
//! by hand:
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `TUCCOMPI_FUZZ_SEED` | fixed | the seed (decimal or `0x` hex); each target derives its own |
//! | `TUCCOMPI_FUZZ_CASES` | the target's CI count | mutated cases per target |
//! | `TUCCOMPI_FUZZ_SECONDS` | none | run each target this long (cases then unlimited unless set) |
//! | `TUCCOMPI_FUZZ_FINDINGS` | `$TMPDIR/tuccompi-fuzz-findings` | where findings are written |
//! | `TUCCOMPI_FUZZ_CASE_SECONDS` | 10 | a case running longer is a hang |
//! | `TUCCOMPI_FUZZ_ALLOC_MIB` | 256 | one allocation larger than this is refused, a finding |
//! | `TUCCOMPI_FUZZ_REPLAY` | none | a file or folder of inputs run instead of the corpus and the cases |
//! | `TUCCOMPI_FUZZ_CORPUS` | `fuzz/corpus` | the folder of the seed corpora (`TARGET/`) |

use crate::mutate::{Mutator, Rng};
use crate::targets::{Target, MAX_LEN};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The seed CI runs with.
pub const DEFAULT_SEED: u64 = 0x7475_6363_6f6d_7069;

/// How a run goes, from the environment ([`Settings::from_env`]).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The seed; each target mixes its name in.
    pub seed: u64,
    /// Mutated cases per target (`None`: the target's CI count, or unlimited with `seconds`).
    pub cases: Option<u64>,
    /// Stop mutating after this long.
    pub seconds: Option<f64>,
    /// Where findings are written.
    pub findings: PathBuf,
    /// A case running longer is a hang.
    pub case_limit: Duration,
    /// Inputs to run instead of the corpus and the mutated cases.
    pub replay: Option<PathBuf>,
}

impl Settings {
    /// The settings the environment asks for (the module's table); a malformed value is an
    /// error naming the variable.
    pub fn from_env() -> Result<Settings, String> {
        fn var<T: std::str::FromStr>(name: &str) -> Result<Option<T>, String> {
            match std::env::var(name) {
                Ok(v) if !v.trim().is_empty() => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{name}={v}: not a number")),
                _ => Ok(None),
            }
        }
        let seed = match std::env::var("TUCCOMPI_FUZZ_SEED") {
            Ok(v) if !v.trim().is_empty() => {
                let v = v.trim();
                match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse(),
                }
                .map_err(|_| format!("TUCCOMPI_FUZZ_SEED={v}: not a number"))?
            }
            _ => DEFAULT_SEED,
        };
        if let Some(mib) = var::<usize>("TUCCOMPI_FUZZ_ALLOC_MIB")? {
            crate::guard::set_limit(mib << 20);
        }
        Ok(Settings {
            seed,
            cases: var("TUCCOMPI_FUZZ_CASES")?,
            seconds: var("TUCCOMPI_FUZZ_SECONDS")?,
            findings: std::env::var_os("TUCCOMPI_FUZZ_FINDINGS")
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("tuccompi-fuzz-findings")),
            case_limit: Duration::from_secs_f64(
                var::<f64>("TUCCOMPI_FUZZ_CASE_SECONDS")?.unwrap_or(10.0),
            ),
            replay: std::env::var_os("TUCCOMPI_FUZZ_REPLAY").map(PathBuf::from),
        })
    }
}

/// What went wrong in a case.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A panic, at `file:line:col`.
    Panic(String),
    /// The case ran past the time limit.
    Hang,
    /// The guard refused an allocation of this many bytes.
    Alloc(usize),
}

impl Kind {
    fn word(&self) -> &'static str {
        match self {
            Kind::Panic(_) => "crash",
            Kind::Hang => "hang",
            Kind::Alloc(_) => "alloc",
        }
    }

    /// Findings of one key are one bug.
    fn key(&self) -> String {
        match self {
            Kind::Panic(at) => format!("crash at {at}"),
            Kind::Hang => "hang".into(),
            Kind::Alloc(_) => "alloc".into(),
        }
    }
}

/// One bug found: what, the (smallest) input, where it was written.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What happened.
    pub kind: Kind,
    /// The panic's message, or a description.
    pub message: String,
    /// The input.
    pub input: Vec<u8>,
    /// Where the input was written (`None` if it could not be).
    pub saved: Option<PathBuf>,
    /// Other inputs that found the same.
    pub repeats: u64,
}

/// What a target's run did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target.
    pub target: &'static str,
    /// Inputs replayed from the corpus (or `TUCCOMPI_FUZZ_REPLAY`).
    pub replayed: usize,
    /// Mutated cases run.
    pub cases: u64,
    /// Cases the parser accepted (corpus included).
    pub accepted: u64,
    /// The seed.
    pub seed: u64,
    /// The findings, one per bug.
    pub findings: Vec<Finding>,
    /// Wall time.
    pub elapsed: Duration,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let all = self.replayed as u64 + self.cases;
        write!(
            f,
            "fuzz {}: {} inputs replayed + {} mutated cases (seed {:#x}), {} accepted ({:.0}%), \
             {:.1} s, {} findings",
            self.target,
            self.replayed,
            self.cases,
            self.seed,
            self.accepted,
            100.0 * self.accepted as f64 / all.max(1) as f64,
            self.elapsed.as_secs_f64(),
            self.findings.len()
        )?;
        for x in &self.findings {
            write!(
                f,
                "\n  {} ({} more inputs): {}\n    input: {}",
                x.kind.key(),
                x.repeats,
                x.message,
                x.saved.as_ref().map_or_else(
                    || format!("{:?}", String::from_utf8_lossy(&x.input)),
                    |p| p.display().to_string()
                )
            )?;
        }
        Ok(())
    }
}

/// The seed corpus of `target`: `corpus/TARGET` in this package, or under
/// `TUCCOMPI_FUZZ_CORPUS` (a test binary run away from its checkout).
pub fn corpus_dir(target: &str) -> PathBuf {
    std::env::var_os("TUCCOMPI_FUZZ_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"))
        .join(target)
}

/// The files of `path` (a file, or a folder's plain files), sorted by name.
pub fn inputs(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default()
    } else {
        vec![path.to_path_buf()]
    };
    files.sort();
    files
        .into_iter()
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Running one case.

thread_local! {
    /// The last panic on this thread: message and location.
    static PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
    /// Where this thread's refused allocations are written: the findings folder, the target.
    static SAVE_TO: RefCell<Option<(PathBuf, &'static str)>> = const { RefCell::new(None) };
    /// Whether this thread runs fuzz cases (its panics are recorded, not printed).
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Install, once, a panic hook that records the panics of fuzzing threads instead of printing
/// them (a parser that catches a panic of its own would otherwise flood the output).
fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(std::cell::Cell::get) {
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let at = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                    .unwrap_or_default();
                PANIC.with(|p| *p.borrow_mut() = Some((msg, at)));
            } else {
                default(info);
            }
        }));
    });
}

/// The guard's hook for a refused allocation: the input written to the findings folder before
/// an infallible allocation aborts the process.
fn save_refused(input: &[u8], size: usize) {
    let _ = SAVE_TO.try_with(|s| {
        if let Ok(s) = s.try_borrow() {
            if let Some((dir, target)) = s.as_ref() {
                let kind = Kind::Alloc(size);
                let msg = refused_message(size, input.len());
                let saved = save(dir, target, &kind, input, &msg);
                // Straight to the process's stderr: the test's captured output is lost when
                // the refusal aborts.
                let _ = writeln!(
                    std::io::stderr(),
                    "fuzz {target}: {msg}; the input: {}",
                    saved.map_or("(not written)".into(), |p| p.display().to_string())
                );
            }
        }
    });
}

fn refused_message(size: usize, len: usize) -> String {
    format!(
        "an input of {len} bytes asked for an allocation of {size} bytes (the guard's limit is \
         {} MiB)",
        crate::guard::limit() >> 20
    )
}

/// Run `target` on `input`: accepted, refused, or what went wrong.
pub fn run_case(target: &Target, input: &[u8]) -> Result<bool, (Kind, String)> {
    install_hook();
    QUIET.with(|q| q.set(true));
    PANIC.with(|p| p.borrow_mut().take());
    crate::guard::begin_case(input, save_refused);
    let r = std::panic::catch_unwind(|| (target.run)(input));
    let refused = crate::guard::end_case();
    QUIET.with(|q| q.set(false));
    match (r, refused) {
        (Err(_), _) => {
            let (msg, at) = PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| ("a panic".into(), "?".into()));
            Err((Kind::Panic(at), msg))
        }
        (Ok(_), Some(size)) => Err((Kind::Alloc(size), refused_message(size, input.len()))),
        (Ok(accepted), None) => Ok(accepted),
    }
}

/// Write a finding's input (and a `.txt` with `message`) to `DIR/TARGET/KIND-HASH`.
fn save(dir: &Path, target: &str, kind: &Kind, input: &[u8], message: &str) -> Option<PathBuf> {
    let folder = dir.join(target);
    std::fs::create_dir_all(&folder).ok()?;
    let p = folder.join(format!(
        "{}-{:016x}",
        kind.word(),
        xxhash_rust::xxh3::xxh3_64(input)
    ));
    std::fs::write(&p, input).ok()?;
    let note = format!(
        "target: {target}\n{}\n{message}\nreplay: TUCCOMPI_FUZZ_REPLAY={} cargo test -p tuccompi-fuzz --test fuzz -- --exact targets::{target}\n",
        kind.key(),
        p.display()
    );
    std::fs::write(p.with_extension("txt"), note).ok()?;
    Some(p)
}

// ---------------------------------------------------------------------------------------------
// The run.

enum Event {
    Start(Arc<Vec<u8>>),
    Done,
    Finished(Report),
}

/// The worker's side: runs cases and tells the watchdog when each starts and ends.
struct Runner<'a> {
    target: &'static Target,
    settings: &'a Settings,
    tx: mpsc::Sender<Event>,
    findings: BTreeMap<String, Finding>,
}

impl Runner<'_> {
    fn exec(&self, input: &Arc<Vec<u8>>) -> Result<bool, (Kind, String)> {
        let _ = self.tx.send(Event::Start(input.clone()));
        let r = run_case(self.target, input);
        let _ = self.tx.send(Event::Done);
        r
    }

    /// Run `input`; record a finding. Whether the parser accepted it.
    fn case(&mut self, input: Vec<u8>) -> bool {
        let input = Arc::new(input);
        match self.exec(&input) {
            Ok(accepted) => accepted,
            Err((kind, message)) => {
                self.found(kind, message, &input);
                false
            }
        }
    }

    fn found(&mut self, kind: Kind, message: String, input: &Arc<Vec<u8>>) {
        let key = kind.key();
        if let Some(f) = self.findings.get_mut(&key) {
            f.repeats += 1;
            return;
        }
        let input = match &kind {
            Kind::Panic(_) => self.minimize(&kind, input),
            _ => input.to_vec(),
        };
        let saved = save(
            &self.settings.findings,
            self.target.name,
            &kind,
            &input,
            &message,
        );
        eprintln!(
            "fuzz {}: {key}: {message}; input: {}",
            self.target.name,
            saved
                .as_ref()
                .map_or("(not written)".into(), |p| p.display().to_string())
        );
        self.findings.insert(
            key,
            Finding {
                kind,
                message,
                input,
                saved,
                repeats: 0,
            },
        );
    }

    /// The smallest input found by cutting pieces out of `input` that still fails the same
    /// way (at most a thousand tries).
    fn minimize(&self, kind: &Kind, input: &[u8]) -> Vec<u8> {
        let mut best = input.to_vec();
        let mut tries = 1000;
        let mut chunk = best.len() / 2;
        while chunk > 0 && tries > 0 {
            let mut at = 0;
            while at < best.len() && tries > 0 {
                tries -= 1;
                let mut cand = best.clone();
                cand.drain(at..(at + chunk).min(best.len()));
                let cand = Arc::new(cand);
                match self.exec(&cand) {
                    Err((k, _)) if &k == kind => best = cand.to_vec(),
                    _ => at += chunk,
                }
            }
            chunk /= 2;
        }
        best
    }

    fn run(mut self) -> Report {
        let t0 = Instant::now();
        let target = self.target;
        SAVE_TO.with(|s| *s.borrow_mut() = Some((self.settings.findings.clone(), target.name)));
        let seed = self.settings.seed ^ xxhash_rust::xxh3::xxh3_64(target.name.as_bytes());
        let mut report = Report {
            target: target.name,
            replayed: 0,
            cases: 0,
            accepted: 0,
            seed: self.settings.seed,
            findings: Vec::new(),
            elapsed: Duration::ZERO,
        };
        let (seeds, mutate) = match &self.settings.replay {
            Some(p) => (inputs(p), false),
            None => (inputs(&corpus_dir(target.name)), true),
        };
        let mut pool: Vec<Vec<u8>> = Vec::new();
        for (_, bytes) in seeds {
            report.replayed += 1;
            if self.case(bytes.clone()) {
                report.accepted += 1;
            }
            pool.push(bytes);
        }
        if pool.is_empty() {
            pool.push(Vec::new());
        }
        let corpus = pool.len();
        let cases = match (self.settings.cases, self.settings.seconds) {
            (Some(c), _) => c,
            (None, Some(_)) => u64::MAX,
            (None, None) => target.cases,
        };
        let deadline = self
            .settings
            .seconds
            .map(|s| t0 + Duration::from_secs_f64(s));
        let mut m = Mutator::new(seed, target.text, target.dict, MAX_LEN);
        let mut keep = Rng::new(seed.rotate_left(17));
        let mut last_note = Instant::now();
        let mut i = 0;
        while mutate && i < cases && deadline.is_none_or(|d| Instant::now() < d) {
            i += 1;
            let mut input = m.rng.pick(&pool).clone();
            m.mutate(&mut input, &pool);
            let accepted = self.case(input.clone());
            if accepted {
                report.accepted += 1;
                // Accepted inputs feed later mutations: a cheap stand-in for coverage.
                if pool.len() < 4 * corpus + 256 {
                    pool.push(input);
                } else {
                    let at = corpus + keep.below(pool.len() - corpus);
                    pool[at] = input;
                }
            }
            if last_note.elapsed() > Duration::from_secs(60) {
                last_note = Instant::now();
                eprintln!(
                    "fuzz {}: {i} cases, {:.0}/s, {} findings",
                    target.name,
                    i as f64 / t0.elapsed().as_secs_f64(),
                    self.findings.len()
                );
            }
        }
        report.cases = i;
        report.findings = std::mem::take(&mut self.findings).into_values().collect();
        report.elapsed = t0.elapsed();
        report
    }
}

/// Fuzz `target` as `settings` say: the corpus replayed, then the mutated cases, each case
/// watched for the time limit. A hang ends the run with that finding (the stuck thread is
/// left behind).
pub fn fuzz(target: &'static Target, settings: &Settings) -> Report {
    let (tx, rx) = mpsc::channel();
    let s = settings.clone();
    let done = tx.clone();
    std::thread::Builder::new()
        .name(format!("fuzz-{}", target.name))
        .spawn(move || {
            let r = Runner {
                target,
                settings: &s,
                tx,
                findings: BTreeMap::new(),
            }
            .run();
            let _ = done.send(Event::Finished(r));
        })
        .expect("a fuzzing thread");
    let t0 = Instant::now();
    let mut current: Option<Arc<Vec<u8>>> = None;
    loop {
        match rx.recv_timeout(settings.case_limit) {
            Ok(Event::Start(input)) => current = Some(input),
            Ok(Event::Done) => current = None,
            Ok(Event::Finished(r)) => return r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let Some(input) = current.take() else {
                    continue;
                };
                let message = format!(
                    "a case ran longer than {:.0} s",
                    settings.case_limit.as_secs_f64()
                );
                let saved = save(
                    &settings.findings,
                    target.name,
                    &Kind::Hang,
                    &input,
                    &message,
                );
                return Report {
                    target: target.name,
                    replayed: 0,
                    cases: 0,
                    accepted: 0,
                    seed: settings.seed,
                    findings: vec![Finding {
                        kind: Kind::Hang,
                        message,
                        input: input.to_vec(),
                        saved,
                        repeats: 0,
                    }],
                    elapsed: t0.elapsed(),
                };
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!(
                    "fuzz {}: the fuzzing thread ended without a report",
                    target.name
                )
            }
        }
    }
}

/// Fuzz the target named `name` with the environment's settings and fail (panic) with its
/// findings: what each target's test does.
pub fn check(name: &str) {
    let target = crate::targets::target(name).unwrap_or_else(|| panic!("no fuzz target {name}"));
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let report = fuzz(target, &settings);
    eprintln!("{report}");
    assert!(report.findings.is_empty(), "{report}");
}
