//! Kernel signatures read from the OpenCL C source a plugin declared, so that a launch's
//! arguments can be checked against the kernel's parameters before they reach the device.
//!
//! Parsing the source (rather than asking the driver with `-cl-kernel-arg-info`) works the same
//! on every platform: NVIDIA's and PoCL's argument info differ in how they spell typedefs, and
//! neither resolves them. A small preprocessor runs first, with the build options' `-D` macros:
//! `#if`/`#ifdef`/`#ifndef`/`#elif`/`#else`/`#endif` (integer expressions with `defined`),
//! object-like `#define`s and `typedef`s, so `typedef ulong dist_t;` under `#ifdef WIDE` resolves
//! as the build that uses it does. A parameter whose type it cannot resolve to a scalar (a vector
//! type, a struct, a macro with arguments) is left unchecked; so is a kernel it cannot find (the
//! launch then checks the argument count only).
//!
//! Cost: linear in the source, once per program build.

use std::collections::HashMap;

/// An OpenCL address space of a kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// A value (`uint n`).
    Private,
    /// `__global`.
    Global,
    /// `__local`.
    Local,
    /// `__constant`.
    Constant,
}

/// An OpenCL C scalar type, as a kernel parameter or a buffer's element declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClType {
    /// `char` (8-bit signed).
    Char,
    /// `uchar`.
    UChar,
    /// `short`.
    Short,
    /// `ushort`.
    UShort,
    /// `int`.
    Int,
    /// `uint`.
    UInt,
    /// `long` (64-bit in OpenCL C).
    Long,
    /// `ulong`.
    ULong,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// Anything else (a vector type, a struct, `size_t`, `half`...): not checked.
    Other(String),
}

impl ClType {
    /// Whether it is an integer type.
    pub fn is_integer(&self) -> bool {
        !matches!(self, ClType::Float | ClType::Double | ClType::Other(_))
    }

    /// Its size in bytes (`None` for [`ClType::Other`]).
    pub fn bytes(&self) -> Option<usize> {
        Some(match self {
            ClType::Char | ClType::UChar => 1,
            ClType::Short | ClType::UShort => 2,
            ClType::Int | ClType::UInt | ClType::Float => 4,
            ClType::Long | ClType::ULong | ClType::Double => 8,
            ClType::Other(_) => return None,
        })
    }

    /// The OpenCL C name.
    pub fn name(&self) -> &str {
        match self {
            ClType::Char => "char",
            ClType::UChar => "uchar",
            ClType::Short => "short",
            ClType::UShort => "ushort",
            ClType::Int => "int",
            ClType::UInt => "uint",
            ClType::Long => "long",
            ClType::ULong => "ulong",
            ClType::Float => "float",
            ClType::Double => "double",
            ClType::Other(s) => s,
        }
    }

    fn from_words(words: &[&str]) -> ClType {
        let unsigned = words.contains(&"unsigned");
        let rest: Vec<&str> = words
            .iter()
            .copied()
            .filter(|w| *w != "unsigned" && *w != "signed")
            .collect();
        let base = match rest.as_slice() {
            [] => "int",
            [b] => b,
            [b @ ("long" | "short"), "int"] => b,
            _ => return ClType::Other(words.join(" ")),
        };
        match (unsigned, base) {
            (false, "char") => ClType::Char,
            (true, "char") | (false, "uchar") => ClType::UChar,
            (false, "short") => ClType::Short,
            (true, "short") | (false, "ushort") => ClType::UShort,
            (false, "int") => ClType::Int,
            (true, "int") | (false, "uint") => ClType::UInt,
            (false, "long") => ClType::Long,
            (true, "long") | (false, "ulong") => ClType::ULong,
            (false, "float") => ClType::Float,
            (false, "double") => ClType::Double,
            _ => ClType::Other(words.join(" ")),
        }
    }
}

/// One parameter of a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name in the source.
    pub name: String,
    /// Address space (of what it points to, for a pointer).
    pub space: Space,
    /// Whether it is a pointer (a buffer, or a `__local` array).
    pub pointer: bool,
    /// The scalar type (of the elements, for a pointer), typedefs resolved.
    pub ty: ClType,
    /// As written in the source (`__global const dist_t*`).
    pub declared: String,
}

impl Param {
    /// The type as the check reports it: the declaration, and what a typedef resolved to.
    pub fn describe(&self) -> String {
        let resolved = match (self.space, self.pointer) {
            (Space::Private, false) => self.ty.name().to_string(),
            (Space::Global, _) => format!("__global {}*", self.ty.name()),
            (Space::Constant, _) => format!("__constant {}*", self.ty.name()),
            (Space::Local, _) => format!("__local {}*", self.ty.name()),
            (Space::Private, true) => format!("{}*", self.ty.name()),
        };
        let plain = self.declared.replace("const ", "").replace(" *", "*");
        if plain == resolved || self.declared == resolved {
            self.declared.clone()
        } else {
            format!("{} (= {resolved})", self.declared)
        }
    }
}

/// A kernel's name, the line it starts on and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The kernel's name.
    pub name: String,
    /// 1-based line of `__kernel` in the source.
    pub line: usize,
    /// Parameters in order.
    pub params: Vec<Param>,
}

/// The kernels `source` declares when built with `options` (their `-D` macros), in order, and
/// whether the active code uses `double` anywhere.
pub(super) fn parse(source: &str, options: &str) -> (Vec<Signature>, bool) {
    let mut defines = defines_of(options);
    let code = preprocess(source, &mut defines);
    let tokens = tokenize(&code);
    let typedefs = typedefs(&tokens, &defines);
    let uses_double = tokens.iter().any(|t| t.text == "double");
    (kernels(&tokens, &defines, &typedefs), uses_double)
}

/// `-D NAME`, `-DNAME=VALUE`, `-D NAME=VALUE` in build options.
fn defines_of(options: &str) -> HashMap<String, Option<String>> {
    let mut out = HashMap::new();
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let def = match w.strip_prefix("-D") {
            Some("") => words.next().unwrap_or(""),
            Some(d) => d,
            None => continue,
        };
        let (name, value) = match def.split_once('=') {
            Some((n, v)) => (n, v.to_string()),
            None => (def, "1".to_string()),
        };
        if !name.is_empty() {
            out.insert(name.to_string(), Some(value));
        }
    }
    out
}

/// The source with comments removed, continuation lines joined and inactive conditional
/// branches blanked; every line keeps its number. Object-like `#define`s land in `defines`
/// (value `Some`); function-like ones only as defined (value `None`).
fn preprocess(source: &str, defines: &mut HashMap<String, Option<String>>) -> String {
    // Comments out, newlines kept.
    let mut text = String::with_capacity(source.len());
    let b = source.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                if b[i] == b'\n' {
                    text.push('\n');
                }
                i += 1;
            }
            i += 2;
            text.push(' ');
        } else {
            let c = source[i..].chars().next().unwrap_or(' ');
            text.push(c);
            i += c.len_utf8();
        }
    }
    // Continuation lines joined onto their first line, blank lines in their place.
    let mut lines: Vec<String> = Vec::new();
    let mut pending = 0;
    let mut cur = String::new();
    for l in text.split('\n') {
        if let Some(s) = l.strip_suffix('\\') {
            cur.push_str(s);
            cur.push(' ');
            pending += 1;
            continue;
        }
        cur.push_str(l);
        lines.push(std::mem::take(&mut cur));
        lines.extend(std::iter::repeat_n(String::new(), pending));
        pending = 0;
    }
    // Conditionals: a stack of (this branch active, some branch taken, parent active).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let active = |s: &Vec<(bool, bool, bool)>| s.last().is_none_or(|t| t.0);
    let mut out = String::with_capacity(text.len());
    for line in &lines {
        let t = line.trim_start();
        let Some(d) = t.strip_prefix('#') else {
            if active(&stack) {
                out.push_str(line);
            }
            out.push('\n');
            continue;
        };
        out.push('\n');
        let d = d.trim_start();
        let (word, rest) = d
            .split_once(|c: char| c.is_whitespace() || c == '(')
            .map_or((d, ""), |(w, _)| (w, &d[w.len()..]));
        let rest = rest.trim();
        let parent = active(&stack);
        match word {
            "ifdef" | "ifndef" => {
                let on = defines.contains_key(first_ident(rest)) == (word == "ifdef");
                stack.push((parent && on, on, parent));
            }
            "if" => {
                let on = eval(rest, defines) != 0;
                stack.push((parent && on, on, parent));
            }
            "elif" => {
                if let Some(top) = stack.last_mut() {
                    let on = !top.1 && eval(rest, defines) != 0;
                    *top = (top.2 && on, top.1 || on, top.2);
                }
            }
            "else" => {
                if let Some(top) = stack.last_mut() {
                    *top = (top.2 && !top.1, true, top.2);
                }
            }
            "endif" => {
                stack.pop();
            }
            "define" if parent => {
                let name = first_ident(rest);
                let after = &rest[name.len()..];
                if after.starts_with('(') {
                    defines.insert(name.to_string(), None);
                } else {
                    defines.insert(name.to_string(), Some(after.trim().to_string()));
                }
            }
            "undef" if parent => {
                defines.remove(first_ident(rest));
            }
            _ => {}
        }
    }
    out
}

fn first_ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// A `#if` expression's value: integers, macros (unknown names are 0, as in C), `defined`,
/// `! ~ - + * / % << >> < > <= >= == != & ^ | && || ?:` and parentheses. 0 when it cannot be
/// read.
fn eval(expr: &str, defines: &HashMap<String, Option<String>>) -> i64 {
    let toks = tokenize(expr);
    let mut flat: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i].text;
        if t == "defined" {
            let (name, skip) = if toks.get(i + 1).is_some_and(|x| x.text == "(") {
                (toks.get(i + 2).map(|x| x.text.clone()), 4)
            } else {
                (toks.get(i + 1).map(|x| x.text.clone()), 2)
            };
            let on = name.is_some_and(|n| defines.contains_key(&n));
            flat.push(if on { "1" } else { "0" }.into());
            i += skip;
            continue;
        }
        flat.extend(expand(t, defines, 0));
        i += 1;
    }
    let mut p = Expr { t: &flat, i: 0 };
    p.ternary().unwrap_or(0)
}

/// A token with macros expanded (object-like ones, 16 levels deep at most).
fn expand(t: &str, defines: &HashMap<String, Option<String>>, depth: usize) -> Vec<String> {
    match defines.get(t) {
        Some(Some(v)) if depth < 16 => tokenize(v)
            .iter()
            .flat_map(|x| expand(&x.text, defines, depth + 1))
            .collect(),
        _ => vec![t.to_string()],
    }
}

/// A recursive-descent reader of a `#if` expression over tokens.
struct Expr<'a> {
    t: &'a [String],
    i: usize,
}

impl Expr<'_> {
    fn peek(&self) -> Option<&str> {
        self.t.get(self.i).map(|s| s.as_str())
    }
    fn eat(&mut self, s: &str) -> bool {
        if self.peek() == Some(s) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ternary(&mut self) -> Option<i64> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.ternary()?;
            if !self.eat(":") {
                return None;
            }
            let b = self.ternary()?;
            return Some(if c != 0 { a } else { b });
        }
        Some(c)
    }
    fn binary(&mut self, level: usize) -> Option<i64> {
        const LEVELS: [&[&str]; 10] = [
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<", ">", "<=", ">="],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut a = self.binary(level + 1)?;
        while let Some(op) = self.peek().filter(|p| LEVELS[level].contains(p)) {
            let op = op.to_string();
            self.i += 1;
            let b = self.binary(level + 1)?;
            a = match op.as_str() {
                "||" => ((a != 0) || (b != 0)) as i64,
                "&&" => ((a != 0) && (b != 0)) as i64,
                "|" => a | b,
                "^" => a ^ b,
                "&" => a & b,
                "==" => (a == b) as i64,
                "!=" => (a != b) as i64,
                "<" => (a < b) as i64,
                ">" => (a > b) as i64,
                "<=" => (a <= b) as i64,
                ">=" => (a >= b) as i64,
                "<<" => a.checked_shl(b as u32)?,
                ">>" => a.checked_shr(b as u32)?,
                "+" => a.checked_add(b)?,
                "-" => a.checked_sub(b)?,
                "*" => a.checked_mul(b)?,
                "/" => a.checked_div(b)?,
                _ => a.checked_rem(b)?,
            };
        }
        Some(a)
    }
    fn unary(&mut self) -> Option<i64> {
        if self.eat("!") {
            return Some((self.unary()? == 0) as i64);
        }
        if self.eat("-") {
            return self.unary()?.checked_neg();
        }
        if self.eat("+") {
            return self.unary();
        }
        if self.eat("~") {
            return Some(!self.unary()?);
        }
        if self.eat("(") {
            let v = self.ternary()?;
            return self.eat(")").then_some(v);
        }
        let t = self.peek()?.to_string();
        self.i += 1;
        let digits = t.trim_end_matches(|c: char| "uUlL".contains(c));
        if let Some(hex) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            return i64::from_str_radix(hex, 16).ok();
        }
        if digits.starts_with(|c: char| c.is_ascii_digit()) {
            return digits.parse().ok();
        }
        // An identifier no macro defines is 0, as in C.
        t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            .then_some(0)
    }
}

#[derive(Debug, Clone)]
struct Token {
    text: String,
    line: usize,
}

/// Identifiers and numbers, two-character operators, and single characters; `line` is 1-based.
fn tokenize(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut line = 1;
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric()
            || c == '_'
            || c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())
        {
            let s = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            out.push(Token {
                text: chars[s..i].iter().collect(),
                line,
            });
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let n = if ["||", "&&", "==", "!=", "<=", ">=", "<<", ">>"].contains(&two.as_str()) {
                2
            } else {
                1
            };
            out.push(Token {
                text: chars[i..i + n].iter().collect(),
                line,
            });
            i += n;
        }
    }
    out
}

/// `typedef WORDS NAME;` at file scope (the words after macro expansion).
fn typedefs(
    tokens: &[Token],
    defines: &HashMap<String, Option<String>>,
) -> HashMap<String, Vec<String>> {
    let mut out = HashMap::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].text.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "typedef" if depth == 0 => {
                let end = (i..tokens.len())
                    .find(|&j| tokens[j].text == ";")
                    .unwrap_or(tokens.len());
                let words: Vec<String> = tokens[i + 1..end]
                    .iter()
                    .flat_map(|t| expand(&t.text, defines, 0))
                    .collect();
                if let Some((name, ty)) = words.split_last() {
                    if ty.iter().all(|w| is_ident(w)) && !ty.is_empty() {
                        out.insert(name.clone(), ty.to_vec());
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// Every `__kernel void NAME(...)` in `tokens`.
fn kernels(
    tokens: &[Token],
    defines: &HashMap<String, Option<String>>,
    typedefs: &HashMap<String, Vec<String>>,
) -> Vec<Signature> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.text != "__kernel" && t.text != "kernel" {
            i += 1;
            continue;
        }
        let line = t.line;
        let mut j = i + 1;
        // Attributes: __attribute__((...)), balanced.
        while tokens.get(j).is_some_and(|t| t.text == "__attribute__") {
            j += 1;
            let mut depth = 0;
            while let Some(t) = tokens.get(j) {
                j += 1;
                match t.text.as_str() {
                    "(" => depth += 1,
                    ")" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        if tokens.get(j).map(|t| t.text.as_str()) != Some("void")
            || tokens.get(j + 2).map(|t| t.text.as_str()) != Some("(")
        {
            i = j.max(i + 1);
            continue;
        }
        let name = tokens[j + 1].text.clone();
        let mut k = j + 3;
        let mut depth = 1;
        let mut params: Vec<Vec<&str>> = vec![Vec::new()];
        while let Some(t) = tokens.get(k) {
            k += 1;
            match t.text.as_str() {
                "(" => depth += 1,
                ")" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                "," if depth == 1 => {
                    params.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            if let Some(p) = params.last_mut() {
                p.push(&t.text);
            }
        }
        let params: Vec<Param> = params
            .into_iter()
            .filter(|p| !(p.is_empty() || p == &["void"]))
            .map(|p| param(&p, defines, typedefs))
            .collect();
        out.push(Signature { name, line, params });
        i = k;
    }
    out
}

/// One parameter from its tokens.
fn param(
    tokens: &[&str],
    defines: &HashMap<String, Option<String>>,
    typedefs: &HashMap<String, Vec<String>>,
) -> Param {
    let mut space = Space::Private;
    let mut pointer = false;
    let mut words: Vec<String> = Vec::new();
    let name = tokens
        .iter()
        .rev()
        .find(|t| is_ident(t))
        .map(|s| s.to_string())
        .unwrap_or_default();
    let body = match tokens.iter().rposition(|t| *t == name) {
        Some(p) => &tokens[..p],
        None => tokens,
    };
    let declared = body.join(" ").replace(" *", "*");
    let mut queue: Vec<String> = body.iter().map(|s| s.to_string()).collect();
    let mut guard = 0;
    while let Some(t) = (!queue.is_empty()).then(|| queue.remove(0)) {
        match t.as_str() {
            "__global" | "global" => space = Space::Global,
            "__local" | "local" => space = Space::Local,
            "__constant" | "constant" => space = Space::Constant,
            "__private" | "private" | "const" | "volatile" | "restrict" | "__restrict"
            | "__read_only" | "__write_only" | "read_only" | "write_only" => {}
            "*" => pointer = true,
            w if guard < 32 && typedefs.contains_key(w) => {
                guard += 1;
                let mut t = typedefs[w].clone();
                t.append(&mut queue);
                queue = t;
            }
            w if guard < 32 && matches!(defines.get(w), Some(Some(_))) => {
                guard += 1;
                let mut t = expand(w, defines, 0);
                t.append(&mut queue);
                queue = t;
            }
            w => words.push(w.to_string()),
        }
    }
    let refs: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
    Param {
        name,
        space,
        pointer,
        ty: ClType::from_words(&refs),
        declared,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn signatures_with_typedefs_macros_and_conditionals() {
        let src = "// a comment __kernel void nope(int a)\n\
            #ifdef WIDE\n\
            typedef ulong dist_t;\n\
            #else\n\
            typedef uint dist_t;\n\
            #endif\n\
            #define IDX unsigned int\n\
            #if defined(WIDE) && FOO > 2\n\
            #define EXTRA 1\n\
            #endif\n\
            /* __kernel void also_nope(void) */\n\
            __kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n\
            void k(__global const dist_t* d, __local uint* s, IDX n, unsigned long m,\n\
                   __constant float* f, double x, __global int4* v) {}\n\
            kernel void empty(void) { double y; }\n";
        let (sigs, double) = parse(src, "");
        assert!(double);
        assert_eq!(sigs.len(), 2, "{sigs:#?}");
        let k = &sigs[0];
        assert_eq!((k.name.as_str(), k.line), ("k", 12));
        let ty: Vec<(Space, bool, ClType, &str)> = k
            .params
            .iter()
            .map(|p| (p.space, p.pointer, p.ty.clone(), p.name.as_str()))
            .collect();
        assert_eq!(
            ty,
            vec![
                (Space::Global, true, ClType::UInt, "d"),
                (Space::Local, true, ClType::UInt, "s"),
                (Space::Private, false, ClType::UInt, "n"),
                (Space::Private, false, ClType::ULong, "m"),
                (Space::Constant, true, ClType::Float, "f"),
                (Space::Private, false, ClType::Double, "x"),
                (Space::Global, true, ClType::Other("int4".into()), "v"),
            ]
        );
        assert_eq!(
            k.params[0].describe(),
            "__global const dist_t* (= __global uint*)"
        );
        assert!(sigs[1].params.is_empty());
        // -DWIDE selects the other typedef.
        let (sigs, _) = parse(src, "-cl-fast-relaxed-math -DWIDE -D FOO=3");
        assert_eq!(sigs[0].params[0].ty, ClType::ULong);
        let (_, double) = parse("__kernel void f(__global uint* a) { a[0] = 1; }", "");
        assert!(!double);
    }

    #[test]
    fn if_expressions() {
        let d: HashMap<String, Option<String>> = [
            ("A".to_string(), Some("4".to_string())),
            ("B".to_string(), Some("(A * 2)".to_string())),
        ]
        .into();
        for (e, want) in [
            ("A % 4 || B % 3", 1),
            ("B == 8 && !defined(C)", 1),
            ("defined A ? B : 0", 8),
            ("UNKNOWN", 0),
            ("(1 << 4) - 1 >= 15", 1),
            ("0x10 / 0", 0),
        ] {
            assert_eq!(eval(e, &d), want, "{e}");
        }
    }

    #[test]
    fn kernels_with_macro_types_and_local_memory_parse() {
        let src = "#ifdef WIDE\ntypedef ulong dist_t;\n#else\ntypedef uint dist_t;\n#endif\n\
                   __kernel void sweep(__global const uint* off, __global dist_t* dist,\n\
                   dist_t limit, __local dist_t* scratch, uint n) {}\n\
                   __kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n\
                   void tile(__global float* m, int k) {}\n";
        for (opts, ty) in [("-DWIDE", ClType::ULong), ("", ClType::UInt)] {
            let (sigs, _) = parse(src, opts);
            let s = sigs.iter().find(|s| s.name == "sweep").unwrap();
            assert_eq!(s.params.len(), 5);
            assert_eq!(s.params[2].ty, ty, "{opts}");
            assert_eq!(s.params[3].space, Space::Local);
            let t = sigs.iter().find(|s| s.name == "tile").unwrap();
            assert_eq!(t.params.len(), 2);
            assert!(t.params.iter().all(|p| !matches!(p.ty, ClType::Other(_))));
        }
    }
}
