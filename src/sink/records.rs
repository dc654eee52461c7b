//! Task records: a fixed number of `u64` words per task, written by the workers
//! ([`RecordsOut`]), gathered in task order ([`Records`]), typed through [`Record`] (the plugin
//! API re-exports them as `tuccompi::plugin::*`).

/// A typed view of a task's record: how a value is laid out in `u64` words (a 128-bit sum
/// takes two), and what each word holds ([`fields`](Record::fields): names and types, so that
/// `[verify]` compares floats within a tolerance and prints a mismatch decoded). Write with
/// [`RecordsOut::put`], read with [`Records::read`].
pub trait Record: Sized {
    /// Words per record (`Job::record_words`).
    const WORDS: usize;
    /// Lay `self` out in `words` (`WORDS` long).
    fn to_words(&self, words: &mut [u64]);
    /// Read a record back from `words` (`WORDS` long).
    fn from_words(words: &[u64]) -> Self;
    /// The record's fields, one per word, in order (default: `WORDS` `u64` words named
    /// `word0`, `word1`, ...). A job hands them to `[verify]` through `Details::tolerance`
    /// (`Tolerance::of`).
    fn fields() -> Vec<Field> {
        (0..Self::WORDS)
            .map(|i| Field::new(format!("word{i}"), FieldType::U64))
            .collect()
    }
}

/// `N` plain words.
impl<const N: usize> Record for [u64; N] {
    const WORDS: usize = N;
    fn to_words(&self, words: &mut [u64]) {
        words.copy_from_slice(self);
    }
    fn from_words(words: &[u64]) -> Self {
        let mut r = [0; N];
        r.copy_from_slice(words);
        r
    }
}

/// What one word of a record holds. Each field takes one `u64` word; a 32-bit value sits in
/// its low half ([`FieldType::f32_word`], [`FieldType::f32`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// An unsigned integer (compared exactly).
    U64,
    /// A signed integer, two's complement (compared exactly).
    I64,
    /// A `u32` in the low half (compared exactly).
    U32,
    /// An `i32` in the low half, two's complement (compared exactly).
    I32,
    /// An `f32`'s bits (`f32::to_bits`) in the low half, compared within the `f32` tolerance.
    F32,
    /// An `f64`'s bits (`f64::to_bits`), compared within the `f64` tolerance.
    F64,
}

impl FieldType {
    /// The word that holds an `f32`.
    pub fn f32_word(x: f32) -> u64 {
        x.to_bits() as u64
    }
    /// The `f32` a word holds.
    pub fn f32(word: u64) -> f32 {
        f32::from_bits(word as u32)
    }
    /// The word that holds an `i32`.
    pub fn i32_word(x: i32) -> u64 {
        x as u32 as u64
    }
    /// A word decoded as this type, as messages show it (`1.5`, `-3`).
    pub fn show(self, w: u64) -> String {
        match self {
            FieldType::U64 => w.to_string(),
            FieldType::I64 => (w as i64).to_string(),
            FieldType::U32 => (w as u32).to_string(),
            FieldType::I32 => (w as u32 as i32).to_string(),
            FieldType::F32 => format!("{:?}", FieldType::f32(w)),
            FieldType::F64 => format!("{:?}", f64::from_bits(w)),
        }
    }
}

/// One named field of a record ([`Record::fields`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name, as messages show it.
    pub name: String,
    /// What its word holds.
    pub ty: FieldType,
}

impl Field {
    /// The field `name` of type `ty`.
    pub fn new(name: impl Into<String>, ty: FieldType) -> Field {
        Field {
            name: name.into(),
            ty,
        }
    }
}

/// Records of one chunk, written by a worker.
#[derive(Debug)]
pub struct RecordsOut<'a> {
    start: usize,
    words: usize,
    data: &'a mut [u64],
}

impl<'a> RecordsOut<'a> {
    /// A view over `data` for the tasks starting at `start`, `words` per task.
    pub fn new(start: usize, words: usize, data: &'a mut [u64]) -> Self {
        RecordsOut { start, words, data }
    }
    /// The record of task `task` (absolute task index).
    pub fn record(&mut self, task: usize) -> &mut [u64] {
        let i = (task - self.start) * self.words;
        &mut self.data[i..i + self.words]
    }
    /// Write `record` as the record of task `task`.
    pub fn put<R: Record>(&mut self, task: usize, record: &R) {
        debug_assert_eq!(R::WORDS, self.words, "record type of the wrong width");
        record.to_words(self.record(task));
    }
}

/// Records of every task, `words` per task, in task order.
#[derive(Debug, Clone)]
pub struct Records {
    /// Words per task.
    pub words: usize,
    /// `tasks * words` words.
    pub data: Vec<u64>,
}

impl Records {
    /// The record of `task`.
    pub fn get(&self, task: usize) -> &[u64] {
        &self.data[task * self.words..(task + 1) * self.words]
    }
    /// The record of `task` as `R`.
    pub fn read<R: Record>(&self, task: usize) -> R {
        debug_assert_eq!(R::WORDS, self.words, "record type of the wrong width");
        R::from_words(self.get(task))
    }
}
