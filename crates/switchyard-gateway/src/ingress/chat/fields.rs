//! Typed reads of a Chat Completions body's JSON fields (SPEC R14.1, R14.5): each read names
//! the field at fault by its JSON path (`messages[2].tool_calls[0].function.name`) in the
//! [`IngressError`] a malformed body gets. `null` reads as absent: the SDKs send explicit
//! nulls for unset parameters.

use serde_json::{Map, Value};

use super::super::request::IngressError;

/// A JSON object, as the body's objects are read.
pub(super) type Object = Map<String, Value>;

/// `parent.key`, the JSON path of a member.
pub(super) fn member(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// `parent[index]`, the JSON path of an element.
pub(super) fn element(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// What a JSON value is, for "got …" in an error message.
pub(super) fn kind_of(value: &Value) -> &'static str {
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
pub(super) fn wrong_kind(path: &str, want: &str, got: &Value) -> IngressError {
    IngressError::new(path, format!("must be {want} (got {}).", kind_of(got)))
}

/// `obj[key]`, or `None` when absent or `null`.
pub(super) fn get<'a>(obj: &'a Object, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// `value` as an object, or an error at `path`.
pub(super) fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Object, IngressError> {
    value
        .as_object()
        .ok_or_else(|| wrong_kind(path, "an object", value))
}

/// `obj[key]` read by `read`, when present; a value `read` refuses is an error saying the
/// field must be `want`.
fn opt_as<'a, T>(
    obj: &'a Object,
    key: &str,
    parent: &str,
    want: &str,
    read: impl Fn(&'a Value) -> Option<T>,
) -> Result<Option<T>, IngressError> {
    match get(obj, key) {
        None => Ok(None),
        Some(v) => read(v)
            .map(Some)
            .ok_or_else(|| wrong_kind(&member(parent, key), want, v)),
    }
}

/// `obj[key]` as a string, when present.
pub(super) fn opt_str<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<Option<&'a str>, IngressError> {
    opt_as(obj, key, parent, "a string", Value::as_str)
}

/// `obj[key]` as a non-empty string; absent is an error.
pub(super) fn req_str<'a>(
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

/// `obj[key]` as a boolean, when present.
pub(super) fn opt_bool(
    obj: &Object,
    key: &str,
    parent: &str,
) -> Result<Option<bool>, IngressError> {
    opt_as(obj, key, parent, "true or false", Value::as_bool)
}

/// `obj[key]` as a number, when present.
pub(super) fn opt_f64(obj: &Object, key: &str, parent: &str) -> Result<Option<f64>, IngressError> {
    opt_as(obj, key, parent, "a number", Value::as_f64)
}

/// `obj[key]` as a whole number of at least 0, when present.
pub(super) fn opt_u64(obj: &Object, key: &str, parent: &str) -> Result<Option<u64>, IngressError> {
    opt_as(
        obj,
        key,
        parent,
        "a whole number of at least 0",
        Value::as_u64,
    )
}

/// `obj[key]` as an array, when present.
pub(super) fn opt_array<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<Option<&'a Vec<Value>>, IngressError> {
    opt_as(obj, key, parent, "an array", Value::as_array)
}

/// `obj[key]` as an object, when present.
pub(super) fn opt_object<'a>(
    obj: &'a Object,
    key: &str,
    parent: &str,
) -> Result<Option<&'a Object>, IngressError> {
    opt_as(obj, key, parent, "an object", Value::as_object)
}

/// Records `name` (the client's spelling of a parameter that cannot be carried) in
/// `dropped`, once.
pub(super) fn note_dropped(dropped: &mut Vec<String>, name: &str) {
    if !dropped.iter().any(|d| d == name) {
        dropped.push(name.to_owned());
    }
}
