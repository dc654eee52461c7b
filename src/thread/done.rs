//! The set of tasks already done, by an earlier run that was interrupted (read from its
//! journal). Units skip them: each pulled chunk is split into its pending sub-ranges.

use std::ops::Range;

/// Tasks `0..len` that are done, as a bit set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneSet {
    bits: Vec<u64>,
    len: usize,
    count: usize,
}

impl DoneSet {
    /// No task of `0..len` done.
    pub fn new(len: usize) -> Self {
        DoneSet {
            bits: vec![0; len.div_ceil(64)],
            len,
            count: 0,
        }
    }

    /// Number of tasks (done or not).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the task space is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of tasks done.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether every task is done.
    pub fn all(&self) -> bool {
        self.count == self.len
    }

    /// Whether `task` is done.
    pub fn contains(&self, task: usize) -> bool {
        self.bits[task / 64] >> (task % 64) & 1 == 1
    }

    /// Mark `tasks` done.
    pub fn insert(&mut self, tasks: Range<usize>) {
        for t in tasks {
            let (w, b) = (t / 64, 1u64 << (t % 64));
            if self.bits[w] & b == 0 {
                self.bits[w] |= b;
                self.count += 1;
            }
        }
    }

    /// The maximal sub-ranges of `chunk` whose tasks are not done, in order. O(chunk length).
    pub fn pending(&self, chunk: Range<usize>) -> Vec<Range<usize>> {
        if self.count == 0 {
            return vec![chunk];
        }
        let mut out = Vec::new();
        let mut start = None;
        for t in chunk.clone() {
            match (self.contains(t), start) {
                (false, None) => start = Some(t),
                (true, Some(s)) => {
                    out.push(s..t);
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            out.push(s..chunk.end);
        }
        out
    }

    /// The set as bytes (to send it to other nodes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(8 + self.bits.len() * 8);
        b.extend_from_slice(&(self.len as u64).to_le_bytes());
        for w in &self.bits {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// A set from [`DoneSet::to_bytes`]; `None` when the bytes are not one.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
        let rest = &bytes[8..];
        if rest.len() != len.div_ceil(64) * 8 {
            return None;
        }
        let bits: Vec<u64> = rest
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let count = bits.iter().map(|w| w.count_ones() as usize).sum();
        Some(DoneSet { bits, len, count })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn pending_splits_a_chunk_around_done_tasks() {
        let mut d = DoneSet::new(200);
        assert_eq!(d.pending(10..20), vec![10..20]);
        d.insert(12..14);
        d.insert(19..20);
        d.insert(64..130);
        assert_eq!(d.count(), 2 + 1 + 66);
        assert_eq!(d.pending(10..20), vec![10..12, 14..19]);
        assert_eq!(d.pending(60..140), vec![60..64, 130..140]);
        assert!(d.pending(64..130).is_empty());
        d.insert(12..14); // again: counted once
        assert_eq!(d.count(), 69);
        assert!(!d.all());
    }

    #[test]
    fn bytes_round_trip() {
        let mut d = DoneSet::new(130);
        d.insert(3..70);
        d.insert(129..130);
        let back = DoneSet::from_bytes(&d.to_bytes()).unwrap();
        assert_eq!(back, d);
        assert!(DoneSet::from_bytes(&d.to_bytes()[..10]).is_none());
    }
}
