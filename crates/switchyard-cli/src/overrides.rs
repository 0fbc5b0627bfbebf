//! `-c key=value`: one configuration field for one run, as Codex does.
//!
//! The key is the field's dotted path in `config.toml`; the value is read as TOML, else taken
//! as a string. Overrides apply to the file's text before parsing, so every field can be set
//! and a wrong one is reported as the file's would be.

use std::sync::OnceLock;

#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The dotted path, split: `["act", "model"]`.
    pub path: Vec<String>,
    pub value: toml::Value,
}

static OVERRIDES: OnceLock<Vec<Override>> = OnceLock::new();

/// Records the run's overrides; the first call wins.
pub fn set(overrides: Vec<Override>) {
    let _ = OVERRIDES.set(overrides);
}

pub fn get() -> &'static [Override] {
    OVERRIDES.get().map_or(&[], Vec::as_slice)
}

/// Parses `key=value`, clap's value parser for `-c`.
pub fn parse(text: &str) -> Result<Override, String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not key=value, e.g. -c act.model=gpt-4.1"))?;
    let path: Vec<String> = key.trim().split('.').map(|p| p.trim().to_owned()).collect();
    if path.iter().any(String::is_empty) {
        return Err(format!(
            "`{key}` is not a configuration field's dotted path, e.g. act.model or providers.openai.base_url"
        ));
    }
    let value = value.trim();
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_owned()));
    Ok(Override {
        path,
        value: parsed,
    })
}

/// `table` with every override applied, missing tables created on the way.
pub fn apply(table: &mut toml::Table, overrides: &[Override]) -> Result<(), String> {
    for o in overrides {
        let (last, parents) = o.path.split_last().unwrap_or((&o.path[0], &[]));
        let mut at = &mut *table;
        for (i, part) in parents.iter().enumerate() {
            let entry = at
                .entry(part.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            at = entry.as_table_mut().ok_or_else(|| {
                format!(
                    "-c {}: `{}` is a value, not a section",
                    o.path.join("."),
                    o.path[..=i].join(".")
                )
            })?;
        }
        at.insert(last.clone(), o.value.clone());
    }
    Ok(())
}

impl Override {
    pub fn key(&self) -> String {
        self.path.join(".")
    }

    /// The value as typed: a string as itself, anything else as TOML.
    pub fn shown_value(&self) -> String {
        match &self.value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// The first override after which the configuration is no longer valid; `None` when `base`
/// alone is not, so the file's own error stands.
pub fn culprit<'a>(
    base: &toml::Table,
    overrides: &'a [Override],
    valid: impl Fn(&toml::Table) -> bool,
) -> Option<&'a Override> {
    if !valid(base) {
        return None;
    }
    let mut table = base.clone();
    overrides
        .iter()
        .find(|o| apply(&mut table, std::slice::from_ref(*o)).is_err() || !valid(&table))
}

/// True when an override sets a provider's `base_url`, so the user chose where requests go.
pub fn sets_base_url(overrides: &[Override]) -> bool {
    overrides
        .iter()
        .any(|o| o.path.len() == 3 && o.path[0] == "providers" && o.path[2] == "base_url")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_toml_else_strings_and_paths_make_sections() {
        let o = parse("act.model=gpt-4.1").unwrap();
        assert_eq!(o.path, ["act", "model"]);
        assert_eq!(o.value, toml::Value::String("gpt-4.1".into()));
        assert_eq!(
            parse("act.thinking_budget_tokens=8000").unwrap().value,
            toml::Value::Integer(8000)
        );
        assert_eq!(
            parse("a.b=\"x=y\"").unwrap().value,
            toml::Value::String("x=y".into())
        );
        assert!(parse("act.model").is_err());
        assert!(parse("act..model=x").is_err());
        let mut table: toml::Table = toml::from_str("[act]\nmodel = \"a\"\n").unwrap();
        apply(
            &mut table,
            &[
                parse("act.model=b").unwrap(),
                parse("providers.openai.base_url=http://127.0.0.1:1/v1").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(table["act"]["model"].as_str(), Some("b"));
        assert_eq!(
            table["providers"]["openai"]["base_url"].as_str(),
            Some("http://127.0.0.1:1/v1")
        );
        assert!(apply(&mut table, &[parse("act.model.x=1").unwrap()]).is_err());
        assert!(sets_base_url(&[
            parse("providers.openai.base_url=x").unwrap()
        ]));
    }

    #[test]
    fn the_culprit_is_the_first_override_that_breaks_the_table() {
        let base: toml::Table = toml::from_str("[act]\nmodel = \"a\"\n").unwrap();
        let valid = |t: &toml::Table| !t["act"].as_table().unwrap().contains_key("bad");
        let list = [
            parse("act.model=b").unwrap(),
            parse("act.bad=1").unwrap(),
            parse("act.bad=2").unwrap(),
        ];
        let c = culprit(&base, &list, valid).unwrap();
        assert_eq!((c.key(), c.shown_value()), ("act.bad".into(), "1".into()));
        assert!(culprit(&base, &list[..1], valid).is_none());
        assert_eq!(list[0].shown_value(), "b");
    }
}
