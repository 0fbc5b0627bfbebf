//! Configuration errors: [`ConfigError`], a problem a user can fix, never echoing a secret.
//! Spec: R3.6, R10.5.

/// A configuration problem a user can fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "cannot read the configuration file {file}: {message}; check the path (or leave out --config to use the default file, or none)"
    )]
    Read { file: String, message: String },
    /// The provider needs a key and none of its variables is set.
    #[error(
        "no API key for provider `{provider}`: set the environment variable {var} (or name another variable with `api_key_env` under [providers.{provider}])"
    )]
    MissingApiKey { provider: String, var: String },
    /// The provider id is known but its wire family is not built yet.
    #[error(
        "provider `{provider}` speaks {family}, which this build of Switchyard does not support yet; choose another provider"
    )]
    UnsupportedProvider { provider: String, family: String },
    /// The provider needs something a terminal program cannot have.
    #[error("{reason}")]
    ProviderUnavailable { provider: String, reason: String },
    /// The provider's support was left out of this build by a Cargo feature.
    #[error(
        "provider `{provider}` is not compiled into this build: enable the `{feature}` feature of switchyard-api (the switchyard command has it)"
    )]
    FeatureDisabled {
        provider: String,
        feature: &'static str,
    },
    /// The provider's HTTP client settings cannot be used, such as an unreadable CA bundle.
    #[error("[providers.{provider}]: {message}")]
    Http { provider: String, message: String },
    #[error("[{mode}.model_info] is invalid: {message}")]
    ModelInfo { mode: String, message: String },
    /// A provider id typed on the command line that Switchyard does not know.
    #[error(
        "unknown provider id `{provider}`{}; `switchyard models` lists every id",
        did_you_mean(suggestion)
    )]
    UnknownProvider {
        provider: String,
        suggestion: Option<String>,
    },
    #[error("[providers.{provider}] region `{region}` is not one of this provider's: use {known}")]
    Region {
        provider: String,
        region: String,
        known: String,
    },
    /// A limit that cannot work, such as a spend cap that is not a positive amount.
    #[error("{file}: {setting} = {value} cannot be used: {what}")]
    Limit {
        file: String,
        setting: String,
        value: String,
        what: String,
    },
    /// A `-c key=value` override that makes the configuration invalid.
    #[error("-c {key}={value}: {message}; correct the value or leave this -c out")]
    Override {
        key: String,
        value: String,
        message: String,
    },
    #[error("base URL `{url}` for provider `{provider}` is not an http:// or https:// URL")]
    BaseUrl { provider: String, url: String },
}

impl ConfigError {
    /// A [`ConfigError::Override`] for `-c key=value`; a value that may be a secret shows as `…`.
    pub fn bad_override(key: &str, value: &str, message: &str) -> Self {
        let line = format!("{key} = {value}");
        let (_, secret) = redact_secret_value(&line);
        let (value, message) = match secret {
            Some(secret) => ("…".to_owned(), message.replace(secret, "…")),
            None => (value.to_owned(), message.to_owned()),
        };
        Self::Override {
            key: key.to_owned(),
            value,
            message,
        }
    }
}

/// ` (did you mean `X`?)` for an error message, or nothing.
fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

/// A TOML line as it may be shown in an error: a value that may be a key is replaced by `…`,
/// and returned so that the message can drop it too.
fn redact_secret_value(line: &str) -> (String, Option<&str>) {
    const SECRET_WORDS: [&str; 8] = [
        "key",
        "token",
        "secret",
        "password",
        "auth",
        "header",
        "credential",
        "proxy",
    ];
    let Some((name, value)) = line.split_once('=') else {
        return (line.to_owned(), None);
    };
    let lower = name.to_ascii_lowercase();
    let value = value.trim().trim_matches(['"', '\'']);
    let value_looks_secret =
        value.starts_with("sk-") || (value.len() >= 32 && !value.contains(['/', '.', ' ']));
    // `max_tokens`, `thinking_budget_tokens`: counts of tokens, not tokens.
    let a_count = lower.trim().ends_with("tokens");
    if (SECRET_WORDS.iter().any(|w| lower.contains(w)) && !a_count) || value_looks_secret {
        (
            format!("{} = …", name.trim()),
            Some(value).filter(|v| !v.is_empty()),
        )
    } else {
        (line.to_owned(), None)
    }
}

/// A [`ConfigError::Parse`] for a TOML file that did not parse, quoting the offending line
/// unless it may hold a secret.
pub(crate) fn toml_parse_error(text: &str, file: &str, e: &toml::de::Error) -> ConfigError {
    let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
    let raw_line = text.lines().nth(line - 1).unwrap_or("").trim();
    let mut message = e.message().trim().to_owned();
    let (source_line, secret) = redact_secret_value(raw_line);
    if let Some(secret) = secret {
        message = message.replace(secret, "…");
    }
    if !source_line.is_empty() && !message.contains(&source_line) {
        message = format!("{message} (in `{source_line}`)");
    }
    if message.contains("unknown field `api_key`") || message.contains("unknown field `key`") {
        message.push_str(
            "; keys are read from environment variables only: set the provider's variable (e.g. OPENAI_API_KEY) or name one with api_key_env",
        );
    }
    ConfigError::Parse {
        file: file.to_owned(),
        line,
        column,
        message,
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_error_names_the_key_and_value_but_never_a_secret() {
        let e = ConfigError::bad_override(
            "act.thinking_budget_tokens",
            "abc",
            "invalid type: string \"abc\", expected u64",
        );
        assert_eq!(
            e.to_string(),
            "-c act.thinking_budget_tokens=abc: invalid type: string \"abc\", expected u64; correct the value or leave this -c out"
        );
        let e = ConfigError::bad_override(
            "providers.openai.api_token",
            "hunter2",
            "unknown field, found \"hunter2\"",
        );
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = ConfigError::bad_override("act.model", "sk-abcdef0123456789", "no");
        assert!(!e.to_string().contains("sk-abc"), "{e}");
    }
}
