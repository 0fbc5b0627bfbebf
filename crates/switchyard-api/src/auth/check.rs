//! Offline credential checks for `switchyard config check`: cloud credentials and sign-ins,
//! found without any network request and without printing a secret. Instance metadata cannot
//! be checked offline, so a missing local source is a warning, not an error.
//! Spec: R3.6, R4.2.

use std::path::PathBuf;

use crate::providers::resolve::ResolvedMode;

/// The result of a check: facts to print, problems that stop a request, and warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloudCheck {
    pub facts: Vec<(String, String)>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn home(env: Env<'_>) -> Option<PathBuf> {
    env("HOME")
        .or_else(|| env("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The `key = value` pairs of `section` in an AWS INI-style file.
fn ini_section(text: &str, section: &str) -> Option<Vec<(String, String)>> {
    let mut current: Option<&str> = None;
    let mut found = false;
    let mut pairs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.trim());
            if current == Some(section) {
                found = true;
            }
            continue;
        }
        if current == Some(section) {
            if let Some((k, v)) = line.split_once('=') {
                pairs.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
    }
    found.then_some(pairs)
}

pub fn check_bedrock(r: &ResolvedMode, env: Env<'_>) -> CloudCheck {
    let mut c = CloudCheck::default();
    let aws = AwsProfile::read(r, env);
    bedrock_region(r, &aws, &mut c);
    if r.cloud.use_cross_region_inference {
        let kind = if r.cloud.use_global_inference {
            "on (global profile when the model has one)"
        } else {
            "on"
        };
        c.facts
            .push(("cross-region inference".into(), kind.to_owned()));
    }
    match bedrock_credential(r, env, &aws) {
        Some(s) => c.facts.push(("credential".into(), s)),
        None => no_bedrock_credential(r, &aws, &mut c),
    }
    c
}

/// The AWS profile a Bedrock request would use, as the AWS config files hold it.
struct AwsProfile {
    /// `default` unless the settings or `AWS_PROFILE` name one.
    name: String,
    config_path: Option<PathBuf>,
    credentials_path: Option<PathBuf>,
    config_section: Option<Vec<(String, String)>>,
    credentials_section: Option<Vec<(String, String)>>,
}

impl AwsProfile {
    fn read(r: &ResolvedMode, env: Env<'_>) -> Self {
        let name = r
            .cloud
            .profile
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let aws_dir = home(env).map(|h| h.join(".aws"));
        let config_path = env("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| aws_dir.as_ref().map(|d| d.join("config")));
        let credentials_path = env("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| aws_dir.as_ref().map(|d| d.join("credentials")));
        let read = |p: &Option<PathBuf>| p.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
        let config_section = read(&config_path).and_then(|t| {
            let section = if name == "default" {
                "default".to_owned()
            } else {
                format!("profile {name}")
            };
            ini_section(&t, &section)
        });
        let credentials_section = read(&credentials_path).and_then(|t| ini_section(&t, &name));
        Self {
            name,
            config_path,
            credentials_path,
            config_section,
            credentials_section,
        }
    }

    /// The profile's value of `key`, the config file's first.
    fn get(&self, key: &str) -> Option<String> {
        self.config_section
            .iter()
            .chain(self.credentials_section.iter())
            .flatten()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn exists(&self) -> bool {
        self.config_section.is_some() || self.credentials_section.is_some()
    }
}

/// The region fact, or the error of a request without one.
fn bedrock_region(r: &ResolvedMode, aws: &AwsProfile, c: &mut CloudCheck) {
    match (&r.cloud.region, &r.cloud.region_source) {
        (Some(region), Some(src)) => c
            .facts
            .push(("region".into(), format!("{region} (from {src})"))),
        _ => match aws.get("region") {
            Some(region) => c.facts.push((
                "region".into(),
                format!("{region} (from AWS profile `{}`)", aws.name),
            )),
            None => c.errors.push(
                "bedrock: no AWS region: set `region` under [providers.bedrock], or AWS_REGION"
                    .into(),
            ),
        },
    }
}

/// Where a Bedrock request's credentials would come from; `None` when no local source has any.
fn bedrock_credential(r: &ResolvedMode, env: Env<'_>, aws: &AwsProfile) -> Option<String> {
    if r.api_key.is_some() {
        Some(format!(
            "Bedrock API key in ${} ([redacted])",
            r.api_key_env
        ))
    } else if r.cloud.aws_access_key_id.is_some() {
        let token = if r.cloud.aws_session_token.is_some() {
            " with $AWS_SESSION_TOKEN"
        } else {
            ""
        };
        Some(format!(
            "static keys in $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY{token} ([redacted])"
        ))
    } else if env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() && env("AWS_ROLE_ARN").is_some() {
        Some("web identity token ($AWS_WEB_IDENTITY_TOKEN_FILE, $AWS_ROLE_ARN)".into())
    } else if aws.exists() {
        let kind = if aws.get("sso_session").is_some() || aws.get("sso_start_url").is_some() {
            "SSO; run `aws sso login` if the session expired"
        } else if aws.get("credential_process").is_some() {
            "credential_process"
        } else if aws.get("role_arn").is_some() {
            "assumed role"
        } else if aws.get("aws_access_key_id").is_some() {
            "static keys, [redacted]"
        } else {
            "no credentials in it"
        };
        Some(format!("AWS profile `{}` ({kind})", aws.name))
    } else if env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || env("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
    {
        Some("container credentials (ECS/EKS)".into())
    } else {
        None
    }
}

/// No local credential: an error when the named profile is missing, else a warning.
fn no_bedrock_credential(r: &ResolvedMode, aws: &AwsProfile, c: &mut CloudCheck) {
    c.facts.push((
        "credential".into(),
        "none found in the environment or the AWS config files".into(),
    ));
    if r.cloud.profile.is_some() {
        c.errors.push(format!(
            "bedrock: AWS profile `{}` is not in {} or {}",
            aws.name,
            aws.config_path
                .as_ref()
                .map_or("~/.aws/config".into(), |p| p.display().to_string()),
            aws.credentials_path
                .as_ref()
                .map_or("~/.aws/credentials".into(), |p| p.display().to_string())
        ));
    } else {
        c.warnings.push(
            "bedrock: no AWS credentials found locally (only an EC2 instance role could still work): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile with `profile` under [providers.bedrock] or AWS_PROFILE, or AWS_BEARER_TOKEN_BEDROCK".into(),
        );
    }
}

pub fn check_vertex(r: &ResolvedMode, env: Env<'_>) -> CloudCheck {
    let mut c = CloudCheck::default();
    let region = r.cloud.region.clone().unwrap_or_else(|| "global".into());
    let src = r
        .cloud
        .region_source
        .clone()
        .unwrap_or_else(|| "default".into());
    c.facts
        .push(("region".into(), format!("{region} (from {src})")));

    // Credentials: the named file, else gcloud's application-default credentials.
    let adc = env("CLOUDSDK_CONFIG")
        .map(PathBuf::from)
        .or_else(|| home(env).map(|h| h.join(".config").join("gcloud")))
        .map(|d| d.join("application_default_credentials.json"));
    let mut credentials_project = None;
    match &r.cloud.credentials_file {
        Some(path) => match std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            Some(v) if v["type"] == "service_account" => {
                credentials_project = v["project_id"].as_str().map(str::to_owned);
                let email = v["client_email"].as_str().unwrap_or("?");
                c.facts.push((
                    "credential".into(),
                    format!("service account {email} ({path}; key [redacted])"),
                ));
            }
            Some(v) => c.errors.push(format!(
                "vertex: {path} is a `{}` credentials file; Switchyard needs a service-account key there (for your own account run `gcloud auth application-default login` and unset it)",
                v["type"].as_str().unwrap_or("unknown")
            )),
            None => c.errors.push(format!(
                "vertex: cannot read the Google credentials file {path} as JSON"
            )),
        },
        None => match adc.filter(|p| p.exists()) {
            Some(p) => c.facts.push((
                "credential".into(),
                format!("gcloud application-default credentials ({})", p.display()),
            )),
            None => {
                c.facts.push((
                    "credential".into(),
                    "none found locally".into(),
                ));
                c.warnings.push(
                    "vertex: no Google credentials found locally (only the metadata server on Google Cloud could still work): set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file or run `gcloud auth application-default login`".into(),
                );
            }
        },
    }

    match (&r.cloud.project, &r.cloud.project_source, credentials_project) {
        (Some(p), Some(src), _) => c
            .facts
            .push(("project".into(), format!("{p} (from {src})"))),
        (_, _, Some(p)) => c
            .facts
            .push(("project".into(), format!("{p} (from the service account)"))),
        _ if r.cloud.credentials_file.is_none() => c.warnings.push(
            "vertex: no project set: set `project` under [providers.vertex] or GOOGLE_CLOUD_PROJECT (the metadata server's project is used otherwise)".into(),
        ),
        _ => c.errors.push(
            "vertex: no Google Cloud project: set `project` under [providers.vertex] or GOOGLE_CLOUD_PROJECT".into(),
        ),
    }
    c
}

type Usable = fn(&std::path::Path) -> Result<(), String>;

/// Checks the sign-in or program of the providers that have one instead of a key.
pub fn check_signin(r: &ResolvedMode, env: Env<'_>) -> Option<CloudCheck> {
    use crate::providers::presets::WireFamily;
    let file = r.options.credentials_file.as_deref();
    let (label, path, usable): (&str, _, Usable) = match r.preset.family {
        WireFamily::QwenCode => (
            "the Qwen CLI's",
            crate::auth::qwen::signin_path(file, env),
            crate::auth::qwen::usable,
        ),
        WireFamily::OpenAiCodex => (
            "the Codex CLI's",
            crate::auth::codex::signin_path(file, env),
            crate::auth::codex::usable,
        ),
        WireFamily::ClaudeCode => return Some(check_claude_code(r, env)),
        WireFamily::SapAiCore => return Some(check_sap_ai_core(r)),
        _ => return None,
    };
    let mut c = CloudCheck::default();
    match path {
        None => c.errors.push(format!(
            "no home folder to find {label} sign-in in: set `credentials_file` under [providers.{}]",
            r.provider_id
        )),
        Some(path) => match usable(&path) {
            Ok(()) => c
                .facts
                .push(("sign-in".into(), format!("{label}, {}", path.display()))),
            Err(e) => {
                c.facts
                    .push(("sign-in".into(), format!("{label}, {} (unusable)", path.display())));
                c.errors.push(e);
            }
        },
    }
    Some(c)
}

/// `claude-code`: the `claude` program it starts, which holds its own sign-in.
fn check_claude_code(r: &ResolvedMode, env: Env<'_>) -> CloudCheck {
    let mut c = CloudCheck::default();
    let program = r
        .options
        .command
        .clone()
        .unwrap_or_else(|| "claude".to_owned());
    match find_program(&program, env) {
        Some(found) => c
            .facts
            .push(("program".into(), found.display().to_string())),
        None => {
            c.facts
                .push(("program".into(), format!("{program} (not found)")));
            c.errors.push(format!(
                "the program `{program}` was not found: install Claude Code (npm install -g @anthropic-ai/claude-code) and sign in with `claude`, or name it with `command` under [providers.claude-code]"
            ));
        }
    }
    c.facts
        .push(("sign-in".into(), "the `claude` CLI's own".into()));
    c
}

/// `sapaicore`: the shape of its service key, and the deployment its requests go to.
fn check_sap_ai_core(r: &ResolvedMode) -> CloudCheck {
    let mut c = CloudCheck::default();
    match &r.api_key {
        None => c.errors.push(format!(
            "no SAP AI Core service key: set ${} to the service key JSON of your AI Core instance",
            r.api_key_env
        )),
        Some(key) => match crate::auth::sap::ServiceKey::parse(key, &r.api_key_env) {
            Ok(k) => {
                c.facts.push((
                    "key".into(),
                    format!("${} is set ([redacted])", r.api_key_env),
                ));
                c.facts.push(("AI API".into(), k.ai_api_url));
                let token = r.options.token_url.clone().unwrap_or(k.auth_url);
                c.facts
                    .push(("token URL".into(), format!("{token}/oauth/token")));
            }
            Err(e) => c.errors.push(e.to_string()),
        },
    }
    let group = r.options.resource_group.as_deref().unwrap_or("default");
    let deployment = r
        .options
        .deployment_id
        .as_deref()
        .unwrap_or("found among the running deployments");
    c.facts.push((
        "deployment".into(),
        format!("{deployment} (resource group {group})"),
    ));
    c
}

/// Where `program` would be started from: itself when it names a path, else from `PATH`.
fn find_program(program: &str, env: Env<'_>) -> Option<PathBuf> {
    let is_file = |p: &std::path::Path| p.is_file();
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_file(&p).then_some(p);
    }
    env("PATH")?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(program))
        .find(|p| is_file(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_sections_are_found_by_name() {
        let text = "[default]\nregion = us-east-1\n\n[profile work]\nsso_session = corp\nregion=eu-west-1\n";
        assert_eq!(
            ini_section(text, "profile work").unwrap(),
            vec![
                ("sso_session".to_owned(), "corp".to_owned()),
                ("region".to_owned(), "eu-west-1".to_owned())
            ]
        );
        assert!(ini_section(text, "profile other").is_none());
        assert_eq!(ini_section(text, "default").unwrap().len(), 1);
    }
}
