//! Reading an Anthropic request's JSON fields (SPEC R14.1, R14.5): present-or-null,
//! required strings with the field's JSON path in the error, and naming what cannot be
//! carried in `dropped` once.

use serde_json::{Map, Value};

use super::super::request::IngressError;

/// Names `name` in `dropped` once (client spelling, for `x-switchyard-dropped`).
pub(super) fn drop_param(dropped: &mut Vec<String>, name: &str) {
    if !dropped.iter().any(|d| d == name) {
        dropped.push(name.to_owned());
    }
}

/// `obj[key]` unless absent or `null` (clients send `null` for "not set").
pub(super) fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// The string at `obj[key]`, required.
pub(super) fn required_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, IngressError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(IngressError::new(key, "is required (a string).")),
        Some(_) => Err(IngressError::new(key, "must be a string.")),
    }
}

/// The string at `obj[key]` of the object at `path`, required; errors name `path.key`.
pub(super) fn str_at<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<&'a str, IngressError> {
    required_str(obj, key).map_err(|e| IngressError::new(format!("{path}.{key}"), e.message))
}
