//! What a kernel may index: per buffer or `__local` parameter, an expression of its scalar
//! arguments and the launch's sizes, declared in the kernel's characterization
//! (`indexes = { out = "3 * groups", data = "count" }`) and checked at every
//! [`Queue::launch`](super::Queue::launch).
//!
//! The grammar: integers, the names of the kernel's integer by-value parameters, `global` (the
//! launch's work-items, rounded up to whole groups), `local` (its work-group size) and `groups`
//! (`global / local`); `+ - * / %` (integer division), parentheses, `min(a, b)` and `max(a, b)`.
//! A negative value means nothing is indexed.

use crate::{Error, Result};

/// A parsed extent expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Num(i128),
    Var(String),
    Bin(Box<Expr>, u8, Box<Expr>),
    Call(bool, Box<Expr>, Box<Expr>),
}

/// The sizes of one launch, the names an expression may use besides the scalar parameters.
pub(crate) const LAUNCH_NAMES: [&str; 3] = ["global", "local", "groups"];

impl Expr {
    /// Parse `text`; an error says what is wrong and where.
    pub(crate) fn parse(text: &str) -> std::result::Result<Expr, String> {
        let tokens = tokenize(text)?;
        let mut p = Parser { t: &tokens, i: 0 };
        let e = p.sum()?;
        match p.t.get(p.i) {
            None => Ok(e),
            Some(t) => Err(format!("unexpected '{t}' in \"{text}\"")),
        }
    }

    /// The names it reads.
    pub(crate) fn names(&self, out: &mut Vec<String>) {
        match self {
            Expr::Num(_) => {}
            Expr::Var(v) => out.push(v.clone()),
            Expr::Bin(a, _, b) | Expr::Call(_, a, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }

    /// Its value with `var` giving each name's; `None` on overflow or a division by 0.
    pub(crate) fn eval(&self, var: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
        Some(match self {
            Expr::Num(n) => *n,
            Expr::Var(v) => var(v)?,
            Expr::Call(is_max, a, b) => {
                let (a, b) = (a.eval(var)?, b.eval(var)?);
                if *is_max {
                    a.max(b)
                } else {
                    a.min(b)
                }
            }
            Expr::Bin(a, op, b) => {
                let (a, b) = (a.eval(var)?, b.eval(var)?);
                match op {
                    b'+' => a.checked_add(b)?,
                    b'-' => a.checked_sub(b)?,
                    b'*' => a.checked_mul(b)?,
                    b'/' => a.checked_div(b)?,
                    _ => a.checked_rem(b)?,
                }
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(i128),
    Name(String),
    Op(u8),
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Num(n) => write!(f, "{n}"),
            Token::Name(s) => write!(f, "{s}"),
            Token::Op(c) => write!(f, "{}", *c as char),
        }
    }
}

fn tokenize(text: &str) -> std::result::Result<Vec<Token>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = text[s..i]
                .parse()
                .map_err(|_| format!("number '{}' too large in \"{text}\"", &text[s..i]))?;
            out.push(Token::Num(n));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token::Name(text[s..i].to_string()));
        } else if b"+-*/%(),".contains(&c) {
            out.push(Token::Op(c));
            i += 1;
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(format!(
                "'{ch}' in \"{text}\": use integers, parameter names, global, local, groups, \
                 + - * / %, parentheses, min(a, b) and max(a, b)"
            ));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    t: &'a [Token],
    i: usize,
}

impl Parser<'_> {
    fn op(&mut self, ops: &[u8]) -> Option<u8> {
        match self.t.get(self.i) {
            Some(Token::Op(c)) if ops.contains(c) => {
                self.i += 1;
                Some(*c)
            }
            _ => None,
        }
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        self.op(&[c])
            .map(drop)
            .ok_or_else(|| format!("expected '{}'", c as char))
    }

    fn sum(&mut self) -> std::result::Result<Expr, String> {
        let mut e = self.product()?;
        while let Some(op) = self.op(b"+-") {
            e = Expr::Bin(Box::new(e), op, Box::new(self.product()?));
        }
        Ok(e)
    }

    fn product(&mut self) -> std::result::Result<Expr, String> {
        let mut e = self.atom()?;
        while let Some(op) = self.op(b"*/%") {
            e = Expr::Bin(Box::new(e), op, Box::new(self.atom()?));
        }
        Ok(e)
    }

    fn atom(&mut self) -> std::result::Result<Expr, String> {
        let t = self.t.get(self.i).cloned();
        self.i += 1;
        match t {
            Some(Token::Num(n)) => Ok(Expr::Num(n)),
            Some(Token::Op(b'(')) => {
                let e = self.sum()?;
                self.expect(b')')?;
                Ok(e)
            }
            Some(Token::Name(f)) if (f == "min" || f == "max") && self.op(b"(").is_some() => {
                let a = self.sum()?;
                self.expect(b',')?;
                let b = self.sum()?;
                self.expect(b')')?;
                Ok(Expr::Call(f == "max", Box::new(a), Box::new(b)))
            }
            Some(Token::Name(v)) => Ok(Expr::Var(v)),
            Some(t) => Err(format!("unexpected '{t}'")),
            None => Err("the expression ends too early".into()),
        }
    }
}

/// A kernel's declared extents, one per parameter (`None` for by-value parameters and for
/// pointers the characterization declares nothing for).
pub(crate) type Extents = Vec<Option<(String, Expr)>>;

/// Parse the `indexes` table of a kernel's characterization against its parameters: each key
/// must be a buffer or `__local` parameter, each expression must parse and read only integer
/// by-value parameters and the launch's sizes.
pub(crate) fn extents(
    origin: &str,
    kernel: &str,
    params: &[super::Param],
    indexes: &std::collections::BTreeMap<String, String>,
) -> Result<Extents> {
    let err = |m: String| Error::Config(format!("{origin}: [{kernel}] indexes: {m}"));
    let mut out: Extents = vec![None; params.len()];
    for (key, text) in indexes {
        let Some(i) = params.iter().position(|p| &p.name == key) else {
            let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            return Err(err(format!(
                "'{key}' is not a parameter of '{kernel}' (it has: {})",
                names.join(", ")
            )));
        };
        if !params[i].pointer {
            return Err(err(format!(
                "'{key}' is passed by value; declare extents of buffer and __local parameters"
            )));
        }
        let e = Expr::parse(text).map_err(|m| err(format!("{key} = \"{text}\": {m}")))?;
        let mut names = Vec::new();
        e.names(&mut names);
        for n in names {
            let scalar = params
                .iter()
                .any(|p| p.name == n && !p.pointer && p.ty.is_integer());
            if !scalar && !LAUNCH_NAMES.contains(&n.as_str()) {
                return Err(err(format!(
                    "{key} = \"{text}\" reads '{n}', which is neither an integer by-value \
                     parameter of '{kernel}' nor one of global, local, groups"
                )));
            }
        }
        out[i] = Some((text.clone(), e));
    }
    Ok(out)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn expressions_parse_and_evaluate() {
        let var = |n: &str| match n {
            "count" => Some(10),
            "groups" => Some(4),
            _ => None,
        };
        for (text, want) in [
            ("count", Some(10)),
            ("3 * groups + 1", Some(13)),
            ("(count - 1) / 3 % 2", Some(1)),
            ("min(count, 7) * max(groups, 5)", Some(35)),
            ("count / (groups - 4)", None),
            ("unknown", None),
        ] {
            assert_eq!(Expr::parse(text).unwrap().eval(&var), want, "{text}");
        }
        for bad in ["", "count +", "3 $ 4", "min(3)", "(count", "count count"] {
            assert!(Expr::parse(bad).is_err(), "{bad}");
        }
    }
}
