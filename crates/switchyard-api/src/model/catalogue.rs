//! The model catalogue: every model Switchyard knows, by provider id and region, with where
//! each entry came from. Switchyard's own files add to the reference's tables, and the user's
//! `models.toml` adds entries or changes built-in ones field by field.
//! Spec: R2.4, R2.5.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, OnceLock};

use serde::{Deserialize, Serialize};

use super::info::ModelInfo;
use crate::config::error::{ConfigError, toml_parse_error};

/// The embedded data files as `(folder, file name, provider id, contents)`, from `build.rs`.
const FILES: &[(&str, &str, &str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/catalogue_files.rs"));

/// Where a catalogue entry came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntrySource {
    /// A reference model table, generated into `models/reference/`.
    Reference {
        /// The table's name in the reference, such as `anthropicModels`.
        table: String,
    },
    /// Switchyard's own data in `models/switchyard/{file}`.
    Switchyard {
        /// The file's name, such as `cerebras.toml`.
        file: String,
    },
    User {
        path: PathBuf,
        /// The built-in entry it changes, when it changes one.
        #[serde(skip_serializing_if = "Option::is_none")]
        over: Option<Box<EntrySource>>,
    },
}

impl fmt::Display for EntrySource {
    /// Such as `built-in reference table anthropicModels` or `user file PATH over built-in …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reference { table } => write!(f, "built-in reference table {table}"),
            Self::Switchyard { file } => {
                write!(f, "built-in Switchyard (models/switchyard/{file})")
            }
            Self::User { path, over: None } => write!(f, "user file {}", path.display()),
            Self::User {
                path,
                over: Some(over),
            } => write!(f, "user file {} over {over}", path.display()),
        }
    }
}

/// One model: what we know of it and where that came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueEntry {
    pub info: ModelInfo,
    pub source: EntrySource,
}

/// The models of one provider id in one region.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTable {
    pub provider: String,
    /// `international` or `china` for qwen and zai; `None` for a provider with one table.
    pub region: Option<String>,
    /// The model used when none is configured.
    pub default: Option<String>,
    pub models: BTreeMap<String, CatalogueEntry>,
}

impl ModelTable {
    fn new(provider: &str, region: Option<&str>) -> Self {
        Self {
            provider: provider.to_owned(),
            region: region.map(str::to_owned),
            default: None,
            models: BTreeMap::new(),
        }
    }

    pub fn get(&self, id: &str) -> Option<&CatalogueEntry> {
        self.models.get(id)
    }
}

/// Every model table, by provider id and region.
#[derive(Clone, PartialEq, Default)]
pub struct Catalogue {
    tables: BTreeMap<(String, Option<String>), ModelTable>,
    user_file: Option<PathBuf>,
}

impl fmt::Debug for Catalogue {
    /// A summary, because the catalogue is hundreds of entries.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalogue")
            .field("tables", &self.tables.len())
            .field("models", &self.model_count())
            .field("user_file", &self.user_file)
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFile {
    provider: String,
    #[serde(default)]
    region: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    models: BTreeMap<String, ModelInfo>,
}

/// One provider's section of the user file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserProvider {
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    models: BTreeMap<String, toml::Table>,
}

static BUILTIN: LazyLock<Catalogue> = LazyLock::new(Catalogue::parse_builtin);

/// The built-in tables, each provider's parsed when first asked for.
static BUILTIN_BY_PROVIDER: LazyLock<BTreeMap<&'static str, OnceLock<Catalogue>>> =
    LazyLock::new(|| {
        FILES
            .iter()
            .map(|(_, _, provider, _)| (*provider, OnceLock::new()))
            .collect()
    });

impl Catalogue {
    pub fn builtin() -> &'static Catalogue {
        &BUILTIN
    }

    /// Parses the embedded data files afresh, for benchmarks.
    pub fn parse_builtin() -> Catalogue {
        Self::parse_files(|_| true)
    }

    /// The built-in table of `provider` in `region`, else without a region, parsing only that
    /// provider's files: parsing them all slowed every start.
    pub fn builtin_table(provider: &str, region: Option<&str>) -> Option<&'static ModelTable> {
        BUILTIN_BY_PROVIDER
            .get(provider)?
            .get_or_init(|| Self::parse_builtin_provider(provider))
            .table(provider, region)
    }

    /// Parses afresh the embedded data files of `provider` only, for benchmarks.
    pub fn parse_builtin_provider(provider: &str) -> Catalogue {
        Self::parse_files(|p| p == provider)
    }

    fn parse_files(wanted: impl Fn(&str) -> bool) -> Catalogue {
        let mut catalogue = Catalogue::default();
        for (folder, name, provider, text) in FILES {
            if !wanted(provider) {
                continue;
            }
            if let Err(e) = catalogue.add_builtin(folder, name, provider, text) {
                tracing::error!("built-in model table models/{folder}/{name} is invalid: {e}");
            }
        }
        catalogue
    }

    /// The built-in catalogue with the user's catalogue file at `path` applied over it: a known
    /// model is changed field by field, and a new one takes the defaults for the fields not given.
    /// Fails with [`ConfigError::Read`] or [`ConfigError::Parse`] naming the file, line and field.
    pub fn with_user_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            file: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::builtin().clone().apply_user_text(&text, path)
    }

    /// [`Catalogue::with_user_file`] for the `text` of `path`.
    pub fn with_user_text(text: &str, path: &Path) -> Result<Self, ConfigError> {
        Self::builtin().clone().apply_user_text(text, path)
    }

    pub fn table(&self, provider: &str, region: Option<&str>) -> Option<&ModelTable> {
        region
            .and_then(|r| self.tables.get(&(provider.to_owned(), Some(r.to_owned()))))
            .or_else(|| self.tables.get(&(provider.to_owned(), None)))
    }

    pub fn tables(&self) -> impl Iterator<Item = &ModelTable> {
        self.tables.values()
    }

    pub fn providers(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.tables.keys().map(|(p, _)| p.as_str()).collect();
        ids.dedup();
        ids
    }

    /// The regions `provider` has tables for.
    pub fn regions(&self, provider: &str) -> Vec<&str> {
        self.tables
            .keys()
            .filter(|(p, _)| p == provider)
            .filter_map(|(_, r)| r.as_deref())
            .collect()
    }

    pub fn model_count(&self) -> usize {
        self.tables.values().map(|t| t.models.len()).sum()
    }

    pub fn user_file(&self) -> Option<&Path> {
        self.user_file.as_deref()
    }

    fn add_builtin(
        &mut self,
        folder: &str,
        name: &str,
        provider: &str,
        text: &str,
    ) -> Result<(), String> {
        let file: DataFile = toml::from_str(text).map_err(|e| e.to_string())?;
        if file.provider != provider {
            return Err(format!(
                "provider `{}`, but build.rs read `{provider}` from the file",
                file.provider
            ));
        }
        let key = (file.provider.clone(), file.region.clone());
        let table = self
            .tables
            .entry(key)
            .or_insert_with(|| ModelTable::new(&file.provider, file.region.as_deref()));
        let source = match (folder, &file.source) {
            ("reference", Some(table)) => EntrySource::Reference {
                table: table.clone(),
            },
            ("reference", None) => return Err("a generated file names no `source`".into()),
            _ => EntrySource::Switchyard {
                file: name.to_owned(),
            },
        };
        if let Some(default) = file.default {
            if let Some(old) = table.default.as_ref().filter(|old| **old != default) {
                return Err(format!("default `{default}` but the table's is `{old}`"));
            }
            table.default = Some(default);
        }
        for (id, info) in file.models {
            if let Err((field, message)) = info.validate() {
                return Err(format!("model `{id}`: {field}: {message}"));
            }
            if let Some(old) = table.models.get(&id) {
                return Err(format!("model `{id}` is already in {}", old.source));
            }
            table.models.insert(
                id,
                CatalogueEntry {
                    info,
                    source: source.clone(),
                },
            );
        }
        Ok(())
    }

    fn apply_user_text(mut self, text: &str, path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let parsed: BTreeMap<String, UserProvider> =
            toml::from_str(text).map_err(|e| toml_parse_error(text, &file, &e))?;
        for (provider, section) in parsed {
            let mut keys: Vec<(String, Option<String>)> = self
                .tables
                .keys()
                .filter(|(p, _)| *p == provider)
                .cloned()
                .collect();
            if keys.is_empty() {
                keys.push((provider.clone(), None));
            }
            for key in keys {
                let table = self
                    .tables
                    .entry(key.clone())
                    .or_insert_with(|| ModelTable::new(&key.0, key.1.as_deref()));
                for (id, fields) in &section.models {
                    let base = table.models.get(id);
                    let info =
                        user_entry(base.map(|e| &e.info), fields).map_err(|(field, message)| {
                            user_field_error(text, &file, &provider, id, field, message)
                        })?;
                    let source = EntrySource::User {
                        path: path.to_owned(),
                        over: base.map(|e| Box::new(e.source.clone())),
                    };
                    table
                        .models
                        .insert(id.clone(), CatalogueEntry { info, source });
                }
                if let Some(default) = &section.default {
                    table.default = Some(default.clone());
                }
            }
        }
        self.user_file = Some(path.to_owned());
        Ok(self)
    }
}

/// `base` or the defaults with the user's `fields` set; a field that does not fit says why.
fn user_entry(
    base: Option<&ModelInfo>,
    fields: &toml::Table,
) -> Result<ModelInfo, (String, String)> {
    let base = base.cloned().unwrap_or_default();
    // Each field alone first, so an error names the field that caused it.
    for (k, v) in fields {
        let one = toml::Table::from_iter([(k.clone(), v.clone())]);
        merge_fields(&base, &one).map_err(|m| (k.clone(), m))?;
    }
    let info = merge_fields(&base, fields).map_err(|m| (String::new(), m))?;
    info.validate().map_err(|(f, m)| (f.to_owned(), m))?;
    Ok(info)
}

/// `base` with `overrides` set field by field, a nested table or array replacing the whole;
/// the error is the deserializer's message.
pub(crate) fn merge_fields(base: &ModelInfo, overrides: &toml::Table) -> Result<ModelInfo, String> {
    let mut table = toml::Table::try_from(base).map_err(|e| e.to_string())?;
    for (k, v) in overrides {
        table.insert(k.clone(), v.clone());
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_owned())
}

/// A [`ConfigError::Parse`] for `field` of the user entry `[provider.models."id"]`, at its line.
fn user_field_error(
    text: &str,
    file: &str,
    provider: &str,
    id: &str,
    field: String,
    message: String,
) -> ConfigError {
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| {
            let l = l.trim();
            l.starts_with('[') && l.contains(provider) && l.contains(id) && l.contains("models")
        })
        .unwrap_or(0);
    let leaf = field.rsplit('.').next().unwrap_or(&field).to_owned();
    let line = (!leaf.is_empty())
        .then(|| {
            lines
                .iter()
                .enumerate()
                .skip(header)
                .find(|(_, l)| {
                    l.trim_start()
                        .strip_prefix(leaf.as_str())
                        .is_some_and(|rest| rest.trim_start().starts_with(['=', '.']))
                })
                .map(|(i, _)| i)
        })
        .flatten()
        .unwrap_or(header);
    let what = if field.is_empty() {
        String::new()
    } else {
        format!("`{field}`: ")
    };
    ConfigError::Parse {
        file: file.to_owned(),
        line: line + 1,
        column: 1,
        message: format!("model `{id}` of provider `{provider}`: {what}{message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One provider's files parsed alone give the tables the whole catalogue has, for every
    /// provider and region (and none for an id without files).
    #[test]
    fn one_providers_tables_parsed_alone_match_the_whole_catalogue() {
        let providers: Vec<&str> = FILES.iter().map(|(_, _, p, _)| *p).collect();
        for provider in &providers {
            let alone = Catalogue::parse_files(|p| p == *provider);
            let keys: Vec<_> = alone.tables.keys().cloned().collect();
            assert!(!keys.is_empty(), "{provider}");
            for (p, region) in keys {
                assert_eq!(&p, provider);
                assert_eq!(
                    alone.table(&p, region.as_deref()),
                    Catalogue::builtin().table(&p, region.as_deref()),
                    "{p} {region:?}"
                );
            }
        }
        assert!(
            Catalogue::parse_files(|p| p == "no-such-provider")
                .tables
                .is_empty()
        );
    }

    /// `builtin_table` answers as the whole catalogue does.
    #[test]
    fn builtin_table_matches_the_whole_catalogue() {
        for (provider, region) in [
            ("anthropic", None),
            ("qwen", Some("china")),
            ("qwen", Some("international")),
            ("qwen", Some("nowhere")),
            ("openai", None),
            ("no-such-provider", None),
        ] {
            assert_eq!(
                Catalogue::builtin_table(provider, region),
                Catalogue::builtin().table(provider, region),
                "{provider} {region:?}"
            );
        }
    }

    #[test]
    fn every_builtin_file_loads() {
        let mut catalogue = Catalogue::default();
        for (folder, name, provider, text) in FILES {
            catalogue
                .add_builtin(folder, name, provider, text)
                .unwrap_or_else(|e| panic!("models/{folder}/{name}: {e}"));
        }
        assert_eq!(&catalogue, Catalogue::builtin());
        for table in catalogue.tables() {
            if let Some(d) = &table.default {
                assert!(
                    table.models.contains_key(d),
                    "{}: default {d}",
                    table.provider
                );
            }
            for (id, e) in &table.models {
                let m = &e.info;
                assert!(
                    m.max_tokens <= m.context_window,
                    "{} {id}: max output above the context window",
                    table.provider
                );
            }
        }
    }

    #[test]
    fn switchyard_entries_never_replace_reference_ones() {
        // add_builtin refuses a duplicate id: loading every file without error (above) proves
        // it for the data; here the refusal itself.
        let mut c = Catalogue::default();
        let a = "provider = \"p\"\nsource = \"pModels\"\ndefault = \"m\"\n[models.m]\ncontext_window = 10\n";
        c.add_builtin("reference", "p.toml", "p", a).unwrap();
        let b = "provider = \"p\"\n[models.m]\ncontext_window = 20\n";
        let e = c.add_builtin("switchyard", "p.toml", "p", b).unwrap_err();
        assert!(
            e.contains("already in built-in reference table pModels"),
            "{e}"
        );
    }

    #[test]
    fn a_file_whose_provider_is_not_the_one_build_rs_read_is_refused() {
        let mut c = Catalogue::default();
        let text = "provider = \"p\"\n[models.m]\ncontext_window = 10\n";
        let e = c
            .add_builtin("switchyard", "p.toml", "q", text)
            .unwrap_err();
        assert!(e.contains("provider `p`, but build.rs read `q`"), "{e}");
        assert!(c.tables.is_empty());
    }

    #[test]
    fn user_file_adds_and_overrides_field_by_field() {
        let text = r#"
[anthropic]
default = "claude-sonnet-4-6"

[anthropic.models."claude-sonnet-4-6"]
input_price = 2.5

[anthropic.models."my-finetune"]
context_window = 50000
input_price = 1.0
output_price = 2.0

[qwen.models."qwen-own"]
context_window = 8192

[my-gateway.models."m"]
max_tokens = 100
"#;
        let path = Path::new("/home/u/.config/switchyard/models.toml");
        let c = Catalogue::with_user_text(text, path).unwrap();
        let t = c.table("anthropic", None).unwrap();
        assert_eq!(t.default.as_deref(), Some("claude-sonnet-4-6"));
        let e = t.get("claude-sonnet-4-6").unwrap();
        assert_eq!(e.info.input_price, Some(2.5));
        // The other fields stay the built-in ones.
        assert_eq!(e.info.output_price, Some(15.0));
        assert_eq!(e.info.context_window, 200_000);
        assert_eq!(
            e.source.to_string(),
            "user file /home/u/.config/switchyard/models.toml over built-in reference table anthropicModels"
        );
        let own = t.get("my-finetune").unwrap();
        assert_eq!(own.info.context_window, 50_000);
        assert_eq!(
            own.source.to_string(),
            "user file /home/u/.config/switchyard/models.toml"
        );
        // Both of qwen's regional tables get the entry; a new provider gets a table.
        for region in ["international", "china"] {
            assert!(
                c.table("qwen", Some(region))
                    .unwrap()
                    .get("qwen-own")
                    .is_some()
            );
        }
        assert_eq!(c.table("my-gateway", None).unwrap().models.len(), 1);
        // The built-in catalogue is untouched.
        let builtin = Catalogue::builtin().table("anthropic", None).unwrap();
        assert_eq!(builtin.default.as_deref(), Some("claude-sonnet-5"));
    }

    #[test]
    fn a_bad_user_file_names_file_line_and_field() {
        let path = Path::new("/cfg/models.toml");
        let cases = [
            // (text, line, words the message must contain)
            (
                "[anthropic.models.\"x\"]\ncontext_window = 1000\ninput_price = \"cheap\"\n",
                3,
                vec!["input_price", "model `x`"],
            ),
            (
                "[anthropic.models.\"x\"]\ncontext_windw = 1000\n",
                2,
                vec!["context_windw"],
            ),
            (
                "[openai.models.\"y\"]\n\napi_format = \"grpc\"\n",
                3,
                vec!["api_format", "grpc", "responses"],
            ),
            ("[anthropic]\ndefualt = \"x\"\n", 2, vec!["defualt"]),
            ("[anthropic.models.\"x\"\n", 1, vec![]),
            (
                "[anthropic.models.\"x\"]\noutput_price = -3.0\n",
                2,
                vec!["output_price"],
            ),
        ];
        for (text, line, words) in cases {
            let e = Catalogue::with_user_text(text, path).unwrap_err();
            let s = e.to_string();
            assert!(
                s.starts_with(&format!("/cfg/models.toml:{line}:")),
                "{text:?}: {s}"
            );
            for w in words {
                assert!(s.contains(w), "{text:?}: {s} lacks {w}");
            }
        }
    }
}
