//! The mutation engine: a seeded generator and AFL-style "havoc" mutations of byte strings,
//! with token-level mutations for text formats. Everything follows from the seed, so a run of
//! a given seed and case count is the same run everywhere (CI cannot flake).

/// SplitMix64: small, fast, and the same sequence on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One element of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A length for an insertion or deletion: mostly short, sometimes long.
    fn len(&mut self, max: usize) -> usize {
        let cap = match self.below(8) {
            0..=4 => 8,
            5 | 6 => 64,
            _ => 1024,
        };
        1 + self.below(cap.min(max.max(1)))
    }
}

/// Integers at the edges of the types a parser converts to: where overflow, sign and size
/// checks go wrong.
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    7,
    8,
    16,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
    0x1_0000_0000,
    1 << 40,
    1 << 53,
    1 << 62,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX - 1,
    u64::MAX,
];

/// Numbers as text, at the same edges, and the spellings a number parser may or may not take.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "-0",
    "+1",
    "00",
    "0.5",
    "3.0",
    "1e3",
    "1e-3",
    "1e308",
    "1e400",
    "-1e400",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "0x10",
    "127",
    "128",
    "255",
    "256",
    "32767",
    "65535",
    "65536",
    "1000000",
    "100000000",
    "1000000000",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967294",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "4611686018427387904",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "",
];

/// Bytes that separate or quote in the text formats, and the invisible ones a user's editor
/// may put there.
const SPECIAL: &[&str] = &[
    "\n", "\r\n", "\r", "\t", " ", "\0", "\u{feff}", "\u{a0}", "\u{200b}", "\"", "'", ",", ";",
    "#", "%", "=", "[", "]", "{", "}", ".", "-", "\\", "é", "\u{ff}",
];

/// The mutator of one target: its generator, whether its inputs are text, and its
/// dictionary (tokens of its format).
#[derive(Debug)]
pub struct Mutator {
    /// The generator every choice comes from.
    pub rng: Rng,
    text: bool,
    dict: &'static [&'static str],
    max_len: usize,
}

impl Mutator {
    /// A mutator started at `seed`, for a text format when `text`, with `dict` (tokens worth
    /// inserting), keeping inputs at most `max_len` bytes.
    pub fn new(seed: u64, text: bool, dict: &'static [&'static str], max_len: usize) -> Mutator {
        Mutator {
            rng: Rng::new(seed),
            text,
            dict,
            max_len,
        }
    }

    /// Mutate `data` in place: one to eight stacked mutations, byte-level or (for a text
    /// format, about half of them) token-level; `pool` (other inputs) feeds the splices.
    pub fn mutate(&mut self, data: &mut Vec<u8>, pool: &[Vec<u8>]) {
        let stack = 1 << self.rng.below(4);
        for _ in 0..stack {
            if self.text && self.rng.one_in(2) {
                self.text_op(data, pool);
            } else {
                self.byte_op(data, pool);
            }
            // After each: repeated duplications would otherwise grow without bound.
            data.truncate(self.max_len);
        }
    }

    fn byte_op(&mut self, data: &mut Vec<u8>, pool: &[Vec<u8>]) {
        let r = &mut self.rng;
        let len = data.len();
        match r.below(14) {
            // Flip one bit.
            0 if len > 0 => {
                let i = r.below(len);
                data[i] ^= 1 << r.below(8);
            }
            // A random byte.
            1 if len > 0 => {
                let i = r.below(len);
                data[i] = r.next_u64() as u8;
            }
            // Add or subtract a little from a byte.
            2 if len > 0 => {
                let i = r.below(len);
                let d = 1 + r.below(35) as u8;
                data[i] = if r.one_in(2) {
                    data[i].wrapping_add(d)
                } else {
                    data[i].wrapping_sub(d)
                };
            }
            // An interesting integer of 1, 2, 4 or 8 bytes, either byte order.
            3 | 4 if len > 0 => {
                let width = 1 << r.below(4);
                let v = *r.pick(INTERESTING);
                let v = if r.one_in(4) { v.wrapping_neg() } else { v };
                let bytes = if r.one_in(2) {
                    v.to_le_bytes()
                } else {
                    (v << (64 - 8 * width as u32).min(63)).to_be_bytes()
                };
                let i = r.below(len);
                let end = (i + width).min(len);
                data[i..end].copy_from_slice(&bytes[..end - i]);
            }
            // Insert random bytes.
            5 => {
                let i = r.below(len + 1);
                let k = r.len(16);
                let ins: Vec<u8> = (0..k).map(|_| r.next_u64() as u8).collect();
                data.splice(i..i, ins);
            }
            // Insert a run of one byte.
            6 => {
                let i = r.below(len + 1);
                let k = r.len(4096);
                let b = if r.one_in(2) && len > 0 {
                    data[r.below(len)]
                } else {
                    r.next_u64() as u8
                };
                data.splice(i..i, std::iter::repeat_n(b, k));
            }
            // Delete a range.
            7 | 8 if len > 0 => {
                let i = r.below(len);
                let k = r.len(len - i);
                data.drain(i..(i + k).min(len));
            }
            // Duplicate a range somewhere else.
            9 if len > 0 => {
                let i = r.below(len);
                let k = r.len(len - i).min(len - i);
                let chunk = data[i..i + k].to_vec();
                let at = r.below(len + 1);
                data.splice(at..at, chunk);
            }
            // Splice a piece of another input in, or overwrite with it.
            10 | 11 if !pool.is_empty() => {
                let other = r.pick(pool);
                if other.is_empty() {
                    return;
                }
                let i = r.below(other.len());
                let k = r.len(other.len() - i).min(other.len() - i);
                let chunk = &other[i..i + k];
                let at = r.below(len + 1);
                if r.one_in(2) {
                    data.splice(at..at, chunk.iter().copied());
                } else {
                    let end = (at + k).min(len);
                    data.splice(at..end, chunk.iter().copied());
                }
            }
            // Cross over: this input's head with another's tail.
            12 if !pool.is_empty() => {
                let other = r.pick(pool);
                let at = r.below(len + 1);
                let from = r.below(other.len() + 1);
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            // Cut the input short.
            13 if len > 0 => {
                let at = r.below(len);
                data.truncate(at);
            }
            _ => {
                let i = r.below(len + 1);
                data.insert(i, r.next_u64() as u8);
            }
        }
    }

    fn text_op(&mut self, data: &mut Vec<u8>, pool: &[Vec<u8>]) {
        let r = &mut self.rng;
        match r.below(9) {
            // A number replaced by one at an edge.
            0..=2 => {
                let nums = numbers(data);
                if nums.is_empty() {
                    return;
                }
                let (a, b) = *r.pick(&nums);
                let v = *r.pick(NUMBERS);
                data.splice(a..b, v.bytes());
            }
            // A number nudged by one or scaled up.
            3 => {
                let nums = numbers(data);
                if nums.is_empty() {
                    return;
                }
                let (a, b) = *r.pick(&nums);
                let Some(n) = std::str::from_utf8(&data[a..b])
                    .ok()
                    .and_then(|s| s.parse::<i128>().ok())
                else {
                    return;
                };
                let v = match r.below(4) {
                    0 => n.saturating_add(1),
                    1 => n.saturating_sub(1),
                    2 => n.saturating_mul(1000),
                    _ => n.saturating_neg(),
                };
                data.splice(a..b, v.to_string().into_bytes());
            }
            // A token of the format, or a separator, inserted or put in place of a token.
            4 | 5 => {
                let tok = if !self.dict.is_empty() && r.one_in(2) {
                    r.pick(self.dict)
                } else {
                    r.pick(SPECIAL)
                };
                let toks = tokens(data);
                if !toks.is_empty() && r.one_in(2) {
                    let (a, b) = *r.pick(&toks);
                    data.splice(a..b, tok.bytes());
                } else {
                    let at = r.below(data.len() + 1);
                    data.splice(at..at, tok.bytes());
                }
            }
            // A line duplicated, removed or moved.
            6 | 7 => {
                let lines = lines(data);
                if lines.is_empty() {
                    return;
                }
                let (a, b) = *r.pick(&lines);
                let line = data[a..b].to_vec();
                match r.below(3) {
                    0 => {
                        let most = if r.one_in(8) { 200 } else { 3 };
                        let room = self.max_len.saturating_sub(data.len()) / line.len().max(1);
                        let n = (1 + r.below(most)).min(room);
                        for _ in 0..n {
                            data.splice(b..b, line.iter().copied());
                        }
                    }
                    1 => {
                        data.drain(a..b);
                    }
                    _ => {
                        data.drain(a..b);
                        let others = self::lines(data);
                        let at = if others.is_empty() {
                            0
                        } else {
                            r.pick(&others).0
                        };
                        data.splice(at..at, line);
                    }
                }
            }
            // A line of another input.
            _ => {
                if pool.is_empty() {
                    return;
                }
                let other = r.pick(pool);
                let theirs = lines(other);
                if theirs.is_empty() {
                    return;
                }
                let (a, b) = *r.pick(&theirs);
                let ours = lines(data);
                let at = if ours.is_empty() {
                    data.len()
                } else {
                    r.pick(&ours).0
                };
                data.splice(at..at, other[a..b].iter().copied());
            }
        }
    }
}

/// Byte ranges of the numbers in `data` (digits with their sign, point and exponent).
fn numbers(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let mut a = i;
            if a > 0 && (data[a - 1] == b'-' || data[a - 1] == b'+') {
                a -= 1;
            }
            while i < data.len() && matches!(data[i], b'0'..=b'9' | b'.' | b'e' | b'E') {
                i += 1;
            }
            out.push((a, i));
        } else {
            i += 1;
        }
    }
    out
}

/// Byte ranges of the tokens in `data`: runs between whitespace and separators.
fn tokens(data: &[u8]) -> Vec<(usize, usize)> {
    let sep = |b: u8| b.is_ascii_whitespace() || matches!(b, b',' | b'=' | b'"' | b'[' | b']');
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if sep(data[i]) {
            i += 1;
            continue;
        }
        let a = i;
        while i < data.len() && !sep(data[i]) {
            i += 1;
        }
        out.push((a, i));
    }
    out
}

/// Byte ranges of the lines in `data`, each with its line end.
fn lines(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut a = 0;
    for (i, &b) in data.iter().enumerate() {
        if b == b'\n' {
            out.push((a, i + 1));
            a = i + 1;
        }
    }
    if a < data.len() {
        out.push((a, data.len()));
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_same_seed_makes_the_same_inputs() {
        let pool = vec![b"p sp 3 2\na 1 2 3\na 2 3 4\n".to_vec()];
        let run = |seed| {
            let mut m = Mutator::new(seed, true, &["a", "p"], 1 << 16);
            (0..200)
                .map(|_| {
                    let mut d = pool[0].clone();
                    m.mutate(&mut d, &pool);
                    d
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn token_helpers_find_numbers_tokens_and_lines() {
        let d = b"a -12 3.5e2,x\nb";
        assert_eq!(numbers(d), vec![(2, 5), (6, 11)]);
        assert_eq!(tokens(d), vec![(0, 1), (2, 5), (6, 11), (12, 13), (14, 15)]);
        assert_eq!(lines(d), vec![(0, 14), (14, 15)]);
    }
}
