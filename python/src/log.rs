//! The framework's log (`tracing` events) forwarded to Python's `logging`, to the logger
//! `tuccompi` (or `tuccompi.TARGET`, e.g. `tuccompi.stage`).
//!
//! Events are queued by a subscriber installed when the module loads, from whichever thread
//! emits them, and handed to `logging` by the thread that waits for a run (it holds the GIL
//! every `POLL`), so no run thread ever waits for the GIL. The queue keeps at most
//! [`MAX_QUEUED`] records; beyond that the oldest are dropped and one record says how many.

use parking_lot::Mutex;
use pyo3::prelude::*;
use std::collections::VecDeque;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// Records kept between two forwards.
const MAX_QUEUED: usize = 10_000;

/// One log record: Python's level number, the logger's name, the message.
struct Record {
    level: u8,
    logger: String,
    message: String,
}

static QUEUE: Mutex<(VecDeque<Record>, usize)> = Mutex::new((VecDeque::new(), 0));

struct Queue;

#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Queue {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let level = match *meta.level() {
            tracing::Level::ERROR => 40,
            tracing::Level::WARN => 30,
            tracing::Level::INFO => 20,
            tracing::Level::DEBUG => 10,
            tracing::Level::TRACE => 5,
        };
        let mut message = Message::default();
        event.record(&mut message);
        // Module paths (`tuccompi_plugins::apsp::phast`) become dotted names under `tuccompi`.
        let target = meta.target().replace("::", ".");
        let logger = match target.as_str() {
            "tuccompi" => "tuccompi".to_string(),
            t if t.starts_with("tuccompi") => format!(
                "tuccompi.{}",
                t.trim_start_matches("tuccompi_")
                    .trim_start_matches("tuccompi.")
            ),
            t => format!("tuccompi.{t}"),
        };
        let mut q = QUEUE.lock();
        if q.0.len() >= MAX_QUEUED {
            q.0.pop_front();
            q.1 += 1;
        }
        q.0.push_back(Record {
            level,
            logger,
            message: message.0,
        });
    }
}

/// Install the subscriber (at module load; a subscriber installed before is kept).
pub(crate) fn install() {
    // Debug and trace records are many and cost the run time; info and above are what the
    // command line shows at its default verbosity.
    let filter = tracing_subscriber::filter::LevelFilter::INFO;
    let subscriber = tracing_subscriber::registry().with(Queue.with_filter(filter));
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// Hand the queued records to `logging` (errors in a handler are Python's to report).
pub(crate) fn forward(py: Python<'_>) {
    let (records, dropped) = {
        let mut q = QUEUE.lock();
        (std::mem::take(&mut q.0), std::mem::take(&mut q.1))
    };
    if records.is_empty() && dropped == 0 {
        return;
    }
    let Ok(logging) = py.import("logging") else {
        return;
    };
    if dropped > 0 {
        if let Ok(l) = logging.call_method1("getLogger", ("tuccompi",)) {
            let _ = l.call_method1(
                "warning",
                (format!(
                    "{dropped} log records dropped (more than {MAX_QUEUED} between two reads)"
                ),),
            );
        }
    }
    for r in records {
        if let Ok(l) = logging.call_method1("getLogger", (r.logger.as_str(),)) {
            if l.call_method1("log", (r.level, r.message)).is_err() {
                // A failing handler: `logging` itself prints such errors; nothing to add.
            }
        }
    }
}
