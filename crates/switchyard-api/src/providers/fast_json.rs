//! [`Scanner`], a strict JSON reader for the hot stream events that reads only the members a
//! mapping wants: a `Value` tree per event was most of a stream's CPU, typed serde structs 45 %.
//! Spec: R1.

use std::borrow::Cow;

use serde_json::Value;

/// Nesting the scanner follows before giving up; `serde_json` fails past 128.
const MAX_DEPTH: usize = 100;

/// A strict reader over one JSON document that accepts exactly what `serde_json::from_str::<Value>`
/// accepts, or gives up with `None` and leaves the event to `serde_json`, as on a key with an
/// escape, a duplicate key or nesting past [`MAX_DEPTH`]. Serde checks a `\u` escape or a long or
/// fractional number on the spot.
pub(crate) struct Scanner<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    fn eat_literal(&mut self, literal: &[u8]) -> Option<()> {
        let end = self.pos + literal.len();
        (self.bytes().get(self.pos..end)? == literal).then(|| self.pos = end)
    }

    /// Reads the whole document as one object, as [`Scanner::fields`] does.
    pub(crate) fn document(
        &mut self,
        names: &[&'static str],
        field: impl FnMut(&mut Self, &'static str) -> Option<()>,
    ) -> Option<()> {
        self.skip_ws();
        self.fields(names, field)?;
        self.skip_ws();
        (self.pos == self.src.len()).then_some(())
    }

    /// An object value whose members named in `names`, at most 32, go to `field`, which must read
    /// them. A duplicate name gives up: serde's structs and `Value` disagree on it.
    pub(crate) fn fields(
        &mut self,
        names: &[&'static str],
        mut field: impl FnMut(&mut Self, &'static str) -> Option<()>,
    ) -> Option<()> {
        let mut seen = 0u32;
        // Short keys compared inline: a `memcmp` call per name took 3.6 % of the stream's CPU.
        let named = |key: &str| {
            names.iter().position(|name| {
                name.len() == key.len() && name.bytes().zip(key.bytes()).all(|(a, b)| a == b)
            })
        };
        self.object(|s, key| match named(key) {
            Some(i) => {
                let bit = 1u32 << i;
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
                field(s, names[i])
            }
            None => s.skip(),
        })
    }

    /// An object value, member by member: `member(scanner, key)` must read each value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.sequence(b'{', b'}', |s, _| {
            s.eat(b'"')?;
            let key = s.plain_string()?;
            s.skip_ws();
            s.eat(b':')?;
            s.skip_ws();
            member(s, key)
        })
    }

    /// An array value: `element(scanner, index)` is called for each element and must read it.
    pub(crate) fn array(
        &mut self,
        element: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.sequence(b'[', b']', element)
    }

    /// `open`, items separated by commas, then `close`; `item` reads each item.
    fn sequence(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        self.skip_ws();
        if self.eat(close).is_some() {
            return Some(());
        }
        let mut index = 0;
        loop {
            item(self, index)?;
            index += 1;
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.skip_ws();
                }
                b if b == close => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Whether the next value is `null`, reading it if so.
    pub(crate) fn null(&mut self) -> bool {
        self.eat_literal(b"null").is_some()
    }

    /// Whether the next value is an array, without reading it.
    pub(crate) fn at_array(&self) -> bool {
        self.peek() == Some(b'[')
    }

    /// The rest of a string whose opening quote is read, borrowed, when it has no escape.
    fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let end = special_byte(self.bytes(), start);
        if *self.bytes().get(end)? != b'"' {
            return None;
        }
        self.pos = end + 1;
        self.src.get(start..end)
    }

    /// The rest of a string whose opening quote is read, escapes checked and kept: the raw
    /// contents, and whether a `\u` escape, which serde must judge, is among them.
    fn raw_string(&mut self) -> Option<(&'a str, bool)> {
        let start = self.pos;
        let bytes = self.bytes();
        let mut i = start;
        let mut unicode = false;
        loop {
            i = special_byte(bytes, i);
            match *bytes.get(i)? {
                b'"' => {
                    self.pos = i + 1;
                    return Some((self.src.get(start..i)?, unicode));
                }
                b'\\' => match *bytes.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = bytes.get(i + 2..i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        unicode = true;
                        i += 6;
                    }
                    _ => return None,
                },
                // A control character: not allowed in a JSON string.
                _ => return None,
            }
        }
    }

    /// A string's contents, borrowed without escapes, else unescaped by `serde_json` itself.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.pos;
        if let Some(plain) = self.plain_string() {
            return Some(Cow::Borrowed(plain));
        }
        self.pos = start;
        self.raw_string()?;
        let quoted = self.src.get(start - 1..self.pos)?;
        serde_json::from_str(quoted).ok().map(Cow::Owned)
    }

    /// Any value as `Value::as_str` reads it, `Some(None)` for a non-string, which is skipped.
    pub(crate) fn maybe_str(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'"' {
            self.string().map(Some)
        } else {
            self.skip().map(|()| None)
        }
    }

    /// A `u64` or `Some(None)` for `null`; gives up on anything else, as serde's `Option<u64>`
    /// does.
    pub(crate) fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null() {
            return Some(None);
        }
        let start = self.pos;
        let digits = self.bytes()[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 || (digits > 1 && self.bytes()[start] == b'0') {
            return None;
        }
        self.pos += digits;
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        self.src[start..self.pos].parse().ok().map(Some)
    }

    /// Any value, built as a `serde_json::Value`, for the rare fields kept as JSON.
    pub(crate) fn value(&mut self) -> Option<Value> {
        let start = self.pos;
        self.skip()?;
        serde_json::from_str(self.src.get(start..self.pos)?).ok()
    }

    /// `Some(None)` for `null`, or any other value built as a `serde_json::Value`.
    pub(crate) fn opt_value(&mut self) -> Option<Option<Value>> {
        if self.null() {
            Some(None)
        } else {
            self.value().map(Some)
        }
    }

    /// An array value's elements, each built as a `serde_json::Value`; gives up on anything else.
    pub(crate) fn values(&mut self) -> Option<Vec<Value>> {
        if self.peek()? != b'[' {
            return None;
        }
        match self.value()? {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// Skips any value, checking it is JSON.
    pub(crate) fn skip(&mut self) -> Option<()> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => {
                let start = self.pos;
                self.pos += 1;
                let (_, unicode) = self.raw_string()?;
                if unicode {
                    serde_json::from_str::<String>(self.src.get(start..self.pos)?).ok()?;
                }
                Some(())
            }
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.object(|s, _| s.skip_at(depth + 1))
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.array(|s, _| s.skip_at(depth + 1))
            }
            b't' => self.eat_literal(b"true"),
            b'f' => self.eat_literal(b"false"),
            b'n' => self.eat_literal(b"null"),
            _ => self.skip_number(),
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn skip_number(&mut self) -> Option<()> {
        let start = self.pos;
        let _ = self.eat(b'-');
        let digits = |s: &mut Self| {
            let n = s.bytes()[s.pos..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            s.pos += n;
            n
        };
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.eat(b'.').is_some() && digits(self) == 0 {
            return None;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        // A digit right after a leading zero (`01`) is not JSON.
        if self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return None;
        }
        // Past 18 digits or with a fraction or exponent, `f64`'s range is serde's to judge.
        let text = self.src.get(start..self.pos)?;
        if text.len() > 18 || text.contains(['.', 'e', 'E']) {
            serde_json::from_str::<Value>(text).ok()?;
        }
        Some(())
    }
}

/// The index of the first quote, backslash or control character at or after `i`, or `bytes.len()`.
/// It tests eight bytes at a time with a byte-wise zero test on the word XORed with each character;
/// the lowest flagged byte is always a real one.
#[inline]
fn special_byte(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*word);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let found = found & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// A whole document read the scanner's way into a `Value`, for its agreement test and fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn scan_value(src: &str) -> Option<Value> {
    fn any(s: &mut Scanner<'_>, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match s.peek()? {
            b'{' => {
                let mut map = serde_json::Map::new();
                s.object(|s, key| {
                    let v = any(s, depth + 1)?;
                    map.insert(key.to_owned(), v).is_none().then_some(())
                })?;
                Some(Value::Object(map))
            }
            b'[' => {
                let mut items = Vec::new();
                s.array(|s, _| any(s, depth + 1).map(|v| items.push(v)))?;
                Some(Value::Array(items))
            }
            b'"' => s.string().map(|c| Value::String(c.into_owned())),
            _ => {
                let start = s.pos;
                s.skip()?;
                serde_json::from_str(&s.src[start..s.pos]).ok()
            }
        }
    }
    let mut s = Scanner::new(src);
    s.skip_ws();
    if s.peek() != Some(b'{') {
        return None;
    }
    let v = any(&mut s, 0)?;
    s.skip_ws();
    (s.pos == src.len()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scan(src: &str) -> Option<Value> {
        scan_value(src)
    }

    /// A JSON value with plain keys (some the providers read) and any strings, numbers and
    /// nesting.
    fn json_value() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            prop::sample::select(vec![
                "type", "index", "delta", "text", "choices", "content", "usage", "error", "id",
            ])
            .prop_map(str::to_owned),
            "[a-z_]{1,8}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the scanner reads, serde reads the same value; and it reads every object
        /// serde writes (plain keys), compact or pretty.
        #[test]
        fn the_scanner_never_disagrees_with_serde(
            fields in prop::collection::btree_map("[a-z_]{1,8}", json_value(), 0..8),
            pretty in any::<bool>(),
            at in any::<prop::sample::Index>(),
            edit in any::<u8>(),
            change in any::<bool>(),
        ) {
            let value = Value::Object(fields.into_iter().collect());
            let doc = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            // (Compared with serde's reading of the text, not `value`: serde_json does not
            // round-trip every f64 exactly.)
            let by_serde: Value = serde_json::from_str(&doc).unwrap();
            prop_assert_eq!(scan(&doc), Some(by_serde));
            let changed = if change { crate::providers::agreement::mutate(&doc, at, edit) } else { doc };
            if let Some(read) = scan(&changed) {
                let by_serde: Value = serde_json::from_str(&changed).unwrap();
                prop_assert_eq!(read, by_serde, "{}", changed);
            }
        }
    }

    /// Every document the scanner reads, serde reads the same; every document serde rejects,
    /// the scanner rejects; and it gives up only where the module docs say it may.
    #[test]
    fn scanner_agrees_with_serde_json() {
        let accepted = [
            r#"{}"#,
            r#" { "a" : 1 , "b":[ ] ,"c":{}} "#,
            r#"{"a":"x\"y\\z\/\b\f\n\r\t","b":"Über \u00e9 \ud83d\ude00"}"#,
            r#"{"n":[0,-0,1.5,-2e10,3E+2,4e-3,12345678901234567890123]}"#,
            r#"{"t":true,"f":false,"z":null,"deep":[[[[{"x":[1]}]]]]}"#,
            r#"{"s":"naïve — ✓"}"#,
            r#"{"tiny":[1e-400,-0.0,123456789012345678901234567890]}"#,
        ];
        for doc in accepted {
            let serde: Value = serde_json::from_str(doc).unwrap();
            assert_eq!(scan(doc), Some(serde), "{doc}");
        }
        let rejected_by_both = [
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":1e}"#,
            r#"{"a":-}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12G4"}"#,
            r#"{"a":"unterminated}"#,
            r#"{"a":1,}"#,
            r#"{"a":1 "b":2}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":1}x"#,
            r#"{"a":1}{"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":["x\udc00y"]}"#,
            r#"{"a":1e309}"#,
            r#"{"a":-2.5E400}"#,
            "",
        ];
        let huge = format!("{{\"a\":{}}}", "9".repeat(400));
        for doc in rejected_by_both.iter().copied().chain([huge.as_str()]) {
            assert!(
                serde_json::from_str::<Value>(doc).is_err(),
                "serde accepts {doc}"
            );
            assert_eq!(scan(doc), None, "{doc}");
        }
        // Documents serde reads but the scanner leaves to it.
        for doc in [r#"{"k\u0065y":1}"#, r#"{"a":1,"a":2}"#] {
            assert!(serde_json::from_str::<Value>(doc).is_ok(), "{doc}");
            assert_eq!(scan(doc), None, "{doc}");
        }
        let deep = format!("{}1{}", "[".repeat(120), "]".repeat(120));
        assert!(serde_json::from_str::<Value>(&deep).is_ok());
        assert_eq!(Scanner::new(&deep).skip(), None);
        let shallow = format!("{}1{}", "[".repeat(90), "]".repeat(90));
        assert_eq!(Scanner::new(&shallow).skip(), Some(()));
    }

    #[test]
    fn strings_are_read_and_skipped_as_serde_reads_them() {
        let mut s = Scanner::new(r#""a\u0041""#);
        assert_eq!(s.maybe_str(), Some(Some(Cow::Owned("aA".to_owned()))));
        // A lone surrogate is not read, nor skipped (serde's `Value` rejects it).
        assert_eq!(Scanner::new(r#""\ud800""#).skip(), None);
        assert_eq!(Scanner::new(r#""\ud800""#).maybe_str(), None);
        assert_eq!(Scanner::new(r#""\ud83d\ude00""#).skip(), Some(()));
        assert_eq!(
            Scanner::new(r#""plain""#).maybe_str(),
            Some(Some(Cow::Borrowed("plain")))
        );
    }

    #[test]
    fn special_byte_finds_the_first_quote_backslash_or_control_character() {
        let plain = "abcdefghijklmnopqrstuvwxyz-Über-✓-0123456789";
        for (i, c) in ['"', '\\', '\n', '\u{1f}', '\0'].into_iter().enumerate() {
            for at in 0..plain.len() {
                if !plain.is_char_boundary(at) {
                    continue;
                }
                let doc = format!("{}{c}{}\"", &plain[..at], &plain[at..]);
                for from in 0..=at {
                    assert_eq!(special_byte(doc.as_bytes(), from), at, "{i} {at} {from}");
                }
            }
        }
        assert_eq!(special_byte(plain.as_bytes(), 0), plain.len());
        // Bytes just above the control range and high bytes are plain.
        assert_eq!(special_byte(b" !#~\x7f\x80\xff\xfe\x20", 0), 9);
    }

    #[test]
    fn opt_u64_reads_plain_integers_and_null_only() {
        for (doc, want) in [
            ("0", Some(Some(0))),
            ("17", Some(Some(17))),
            ("null", Some(None)),
        ] {
            assert_eq!(Scanner::new(doc).opt_u64(), want, "{doc}");
        }
        for doc in ["-1", "1.0", "1e2", "01", "\"1\"", "18446744073709551616"] {
            assert_eq!(Scanner::new(doc).opt_u64(), None, "{doc}");
        }
    }
}
