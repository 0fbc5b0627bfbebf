//! Typed reads of JSON fields for every dialect: a malformed field is an [`IngressError`]
//! naming its JSON path, `null` reads as absent since the SDKs send explicit nulls, and each
//! dialect words its errors as its clients have always read them.
//! Spec: R14.1, R14.2, R14.5.

use serde_json::{Map, Value};

use super::request::IngressError;

pub(crate) type Object = Map<String, Value>;

pub(crate) fn member(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

pub(crate) fn element(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// What a JSON value is, for "got …" in an error message.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The error of a field that holds the wrong kind of value: "must be WANT (got …)".
pub(crate) fn wrong_kind(path: &str, want: &str, got: &Value) -> IngressError {
    IngressError::new(path, format!("must be {want} (got {}).", kind_of(got)))
}

/// `obj[key]`, or `None` when absent or `null`.
pub(crate) fn get<'a>(obj: &'a Object, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

pub(crate) fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Object, IngressError> {
    value
        .as_object()
        .ok_or_else(|| wrong_kind(path, "an object", value))
}

/// `obj[key]` read by `read`: `Err(value)` when `read` refuses it, for the caller to word.
pub(crate) fn typed<'a, T>(
    obj: &'a Object,
    key: &str,
    read: impl FnOnce(&'a Value) -> Option<T>,
) -> Result<Option<T>, &'a Value> {
    match get(obj, key) {
        None => Ok(None),
        Some(v) => read(v).map(Some).ok_or(v),
    }
}

/// `obj[key]` read by `read`, when present, in Chat Completions' wording.
fn opt_as<'a, T>(
    obj: &'a Object,
    key: &str,
    parent: &str,
    want: &str,
    read: impl FnOnce(&'a Value) -> Option<T>,
) -> Result<Option<T>, IngressError> {
    typed(obj, key, read).map_err(|v| wrong_kind(&member(parent, key), want, v))
}

pub(crate) fn opt_str<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<Option<&'a str>, IngressError> {
    opt_as(obj, key, parent, "a string", Value::as_str)
}

/// `obj[key]` as a non-empty string; absent is an error.
pub(crate) fn req_str<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<&'a str, IngressError> {
    match opt_str(obj, key, parent)? {
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(IngressError::new(
            member(parent, key),
            "must not be an empty string.",
        )),
        None => Err(IngressError::new(
            member(parent, key),
            "is required and missing.",
        )),
    }
}

pub(crate) fn opt_bool(
    obj: &Object,
    key: &str,
    parent: &str,
) -> Result<Option<bool>, IngressError> {
    opt_as(obj, key, parent, "true or false", Value::as_bool)
}

pub(crate) fn opt_f64(obj: &Object, key: &str, parent: &str) -> Result<Option<f64>, IngressError> {
    opt_as(obj, key, parent, "a number", Value::as_f64)
}

/// `obj[key]` as a whole number of at least 0, when present.
pub(crate) fn opt_u64(obj: &Object, key: &str, parent: &str) -> Result<Option<u64>, IngressError> {
    opt_as(
        obj,
        key,
        parent,
        "a whole number of at least 0",
        Value::as_u64,
    )
}

pub(crate) fn opt_array<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<Option<&'a Vec<Value>>, IngressError> {
    opt_as(obj, key, parent, "an array", Value::as_array)
}

pub(crate) fn opt_object<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<Option<&'a Object>, IngressError> {
    opt_as(obj, key, parent, "an object", Value::as_object)
}

/// The required string at `obj[key]` of the object at `path`, in Anthropic's wording.
pub(crate) fn str_at<'a>(obj: &'a Object, path: &str, key: &str) -> Result<&'a str, IngressError> {
    match typed(obj, key, Value::as_str) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(IngressError::new(
            member(path, key),
            "is required (a string).",
        )),
        Err(_) => Err(IngressError::new(member(path, key), "must be a string.")),
    }
}

/// The top-level `obj[key]` read by `read`, when present, in Responses' wording.
pub(crate) fn quoted<'a, T>(
    obj: &'a Object,
    key: &str,
    want: &str,
    read: impl FnOnce(&'a Value) -> Option<T>,
) -> Result<Option<T>, IngressError> {
    typed(obj, key, read).map_err(|_| IngressError::new(key, format!("`{key}` must be {want}")))
}

/// A required non-empty string of the Responses input item at `path`.
pub(crate) fn item_str<'a>(
    obj: &'a Object,
    key: &str,
    path: &str,
) -> Result<&'a str, IngressError> {
    typed(obj, key, Value::as_str)
        .ok()
        .flatten()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            IngressError::new(
                member(path, key),
                format!("this item needs its `{key}` string"),
            )
        })
}

/// Records a parameter that cannot be carried, once, in the order names were first met.
pub(crate) fn note_dropped(dropped: &mut Vec<String>, name: &str) {
    if !dropped.iter().any(|d| d == name) {
        dropped.push(name.to_owned());
    }
}

/// `text` with each `%XX` decoded, as a path carries a name; text that does not decode to UTF-8
/// is kept as it came.
pub(crate) fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes.get(i + 1..i + 3))
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}
