//! Tables of a run's results ([`Table`]): typed columns that [`super::Out::write_table`] writes
//! as CSV into an output directory, or keeps as they are for an in-memory run, whose caller
//! reads the columns without parsing text.

use std::fmt::Write as _;

/// One column of a [`Table`]: its values, one per row. An `Option` column's `None` is an empty
/// CSV field.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Unsigned integers.
    U64(Vec<u64>),
    /// Unsigned integers, some missing.
    MaybeU64(Vec<Option<u64>>),
    /// Signed integers wider than 64 bits (sums of many distances).
    I128(Vec<i128>),
    /// Floating point, written in Rust's shortest round-trip form (`1.5`, `0.1`, `1e300`).
    F64(Vec<f64>),
    /// Floating point, some missing.
    MaybeF64(Vec<Option<f64>>),
}

impl Column {
    /// The number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::MaybeU64(v) => v.len(),
            Column::I128(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::MaybeF64(v) => v.len(),
        }
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn put(&self, row: usize, out: &mut String) {
        let _ = match self {
            Column::U64(v) => write!(out, "{}", v[row]),
            Column::MaybeU64(v) => v[row].map_or(Ok(()), |x| write!(out, "{x}")),
            Column::I128(v) => write!(out, "{}", v[row]),
            Column::F64(v) => write!(out, "{}", v[row]),
            Column::MaybeF64(v) => v[row].map_or(Ok(()), |x| write!(out, "{x}")),
        };
    }
}

/// Named columns of equal length: a table a plugin's `finish` writes
/// ([`super::Out::write_table`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    columns: Vec<(String, Column)>,
}

impl Table {
    /// An empty table (no columns).
    pub fn new() -> Table {
        Table::default()
    }

    /// Add the column `name`. Every column must have as many rows as the first (a plugin's
    /// bug otherwise: the call panics, naming the column).
    pub fn with(mut self, name: impl Into<String>, column: Column) -> Table {
        let name = name.into();
        if let Some((first, c)) = self.columns.first() {
            assert_eq!(
                c.len(),
                column.len(),
                "column {name} has {} rows, column {first} {}",
                column.len(),
                c.len()
            );
        }
        self.columns.push((name, column));
        self
    }

    /// The columns, in order, with their names.
    pub fn columns(&self) -> &[(String, Column)] {
        &self.columns
    }

    /// The column `name`, if there is one.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// The table as CSV: a header line of the names, then one line per row. Large tables are
    /// formatted in pieces on every core, joined in order.
    pub fn to_csv(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(n, _)| n.as_str()).collect();
        let header = names.join(",") + "\n";
        let rows = self.rows();
        let piece = |range: std::ops::Range<usize>| {
            let mut s = String::with_capacity(range.len() * 12 * self.columns.len().max(1));
            for row in range {
                for (i, (_, c)) in self.columns.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    c.put(row, &mut s);
                }
                s.push('\n');
            }
            s
        };
        const SERIAL: usize = 1 << 14;
        let pieces: Vec<String> = if rows <= SERIAL {
            vec![piece(0..rows)]
        } else {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let per = rows.div_ceil(threads);
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..rows)
                    .step_by(per)
                    .map(|start| s.spawn(move || piece(start..(start + per).min(rows))))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a CSV piece's thread panicked"))
                    .collect()
            })
        };
        let mut csv =
            String::with_capacity(header.len() + pieces.iter().map(String::len).sum::<usize>());
        csv.push_str(&header);
        pieces.iter().for_each(|p| csv.push_str(p));
        csv
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_table_is_written_as_csv_with_empty_fields_for_missing_values() {
        let t = Table::new()
            .with("source", Column::U64(vec![1, 2]))
            .with("sum", Column::I128(vec![-3, 1 << 70]))
            .with("mean", Column::MaybeF64(vec![Some(0.1), None]))
            .with("near", Column::MaybeU64(vec![None, Some(7)]))
            .with("x", Column::F64(vec![1.5, 2.0]));
        assert_eq!(
            t.to_csv(),
            "source,sum,mean,near,x\n1,-3,0.1,,1.5\n2,1180591620717411303424,,7,2\n"
        );
        assert_eq!(t.rows(), 2);
        assert_eq!(
            t.column("near"),
            Some(&Column::MaybeU64(vec![None, Some(7)]))
        );
    }

    #[test]
    fn a_large_table_is_formatted_in_pieces_in_order() {
        let n = 100_000u64;
        let t = Table::new()
            .with("a", Column::U64((0..n).collect()))
            .with("b", Column::F64((0..n).map(|x| x as f64 / 4.0).collect()));
        let csv = t.to_csv();
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("a,b"));
        for (i, line) in lines.enumerate() {
            assert_eq!(line, format!("{i},{}", i as f64 / 4.0));
        }
        assert_eq!(csv.lines().count(), n as usize + 1);
    }

    #[test]
    #[should_panic(expected = "column b has 1 rows, column a 2")]
    fn columns_of_unequal_length_are_a_bug() {
        let _ = Table::new()
            .with("a", Column::U64(vec![1, 2]))
            .with("b", Column::U64(vec![1]));
    }
}
