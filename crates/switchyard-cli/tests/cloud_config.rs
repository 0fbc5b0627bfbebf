//! `switchyard config check` and `switchyard models` for the cloud families (Bedrock, Vertex)
//! and key-based providers: what is missing is named, secrets are never printed. The binary
//! runs with a clean environment (`PATH`, `SWITCHYARD_HOME`, and what each test sets).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYCLITESTSECRET";
const AKID: &str = "AKIDCLITEST000000001";

struct Run {
    code: Option<i32>,
    out: String,
}

fn switchyard(home: &Path, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let output = cmd.output().unwrap();
    Run {
        code: output.status.code(),
        out: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

fn check(home: &Path, config: &str, vars: &[(&str, &str)]) -> Run {
    let path = home.join("config.toml");
    std::fs::write(&path, config).unwrap();
    switchyard(home, &["config", "check"], vars)
}

fn line_with<'a>(run: &'a Run, label: &str) -> &'a str {
    run.out
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` line:\n{}", run.out))
}

#[test]
fn bedrock_without_region_or_credentials_says_what_to_set() {
    let home = tempfile::tempdir().unwrap();
    let run = check(home.path(), "[act]\nprovider = \"bedrock\"\n", &[]);
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        run.out.lines().any(|l| l.contains("error")
            && l.contains("no AWS region")
            && l.contains("AWS_REGION")),
        "{}",
        run.out
    );
    assert!(
        run.out.lines().any(|l| l.contains("warning")
            && l.contains("AWS_ACCESS_KEY_ID")
            && l.contains("AWS_BEARER_TOKEN_BEDROCK")),
        "{}",
        run.out
    );
    assert!(line_with(&run, "credential").contains("none found"));
}

#[test]
fn bedrock_with_static_keys_and_region_is_ready_and_redacted() {
    let home = tempfile::tempdir().unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"bedrock\"\n[providers.bedrock]\nuse_cross_region_inference = true\n",
        &[
            ("AWS_ACCESS_KEY_ID", AKID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
            ("AWS_SESSION_TOKEN", "SESSIONTOKENCLITEST"),
            ("AWS_REGION", "eu-west-1"),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.out);
    assert!(run.out.contains("no problems found"), "{}", run.out);
    assert_eq!(
        line_with(&run, "region").trim(),
        "region     eu-west-1 (from $AWS_REGION)"
    );
    let creds = line_with(&run, "credential");
    assert!(
        creds.contains("$AWS_ACCESS_KEY_ID")
            && creds.contains("$AWS_SESSION_TOKEN")
            && creds.contains("[redacted]"),
        "{creds}"
    );
    assert!(
        line_with(&run, "base URL").contains("https://bedrock-runtime.eu-west-1.amazonaws.com")
    );
    assert!(line_with(&run, "model").contains("anthropic.claude-sonnet-4-5-20250929-v1:0"));
    for secret in [SECRET, AKID, "SESSIONTOKENCLITEST"] {
        assert!(!run.out.contains(secret), "{}", run.out);
    }
}

#[test]
fn bedrock_profile_from_the_aws_config_file() {
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir(&aws).unwrap();
    std::fs::write(
        aws.join("config"),
        "[default]\nregion = us-east-1\n\n[profile work]\nsso_session = corp\nsso_account_id = 111122223333\nregion = ap-northeast-1\n",
    )
    .unwrap();
    let home_str = home.path().to_str().unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"bedrock\"\n[providers.bedrock]\nprofile = \"work\"\n",
        &[("HOME", home_str)],
    );
    assert_eq!(run.code, Some(0), "{}", run.out);
    assert!(
        line_with(&run, "region").contains("ap-northeast-1 (from AWS profile `work`)"),
        "{}",
        run.out
    );
    assert!(
        line_with(&run, "credential").contains("AWS profile `work` (SSO"),
        "{}",
        run.out
    );
    // A profile that is in neither file is an error naming the files.
    let run = check(
        home.path(),
        "[act]\nprovider = \"bedrock\"\n[providers.bedrock]\nprofile = \"nope\"\nregion = \"us-east-1\"\n",
        &[("HOME", home_str)],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        run.out
            .lines()
            .any(|l| l.contains("error") && l.contains("`nope`") && l.contains(".aws/config")),
        "{}",
        run.out
    );
}

#[test]
fn vertex_reports_project_region_and_credentials() {
    let home = tempfile::tempdir().unwrap();
    // Nothing set: warnings for credentials and project, the global region by default.
    let run = check(home.path(), "[act]\nprovider = \"vertex\"\n", &[]);
    assert_eq!(run.code, Some(0), "{}", run.out);
    assert!(line_with(&run, "region").contains("global (from default)"));
    assert!(
        run.out
            .lines()
            .any(|l| l.contains("warning") && l.contains("GOOGLE_APPLICATION_CREDENTIALS")),
        "{}",
        run.out
    );
    assert!(
        run.out
            .lines()
            .any(|l| l.contains("warning") && l.contains("GOOGLE_CLOUD_PROJECT")),
        "{}",
        run.out
    );
    // A service-account file: its project and account shown, its key never.
    let sa = home.path().join("sa.json");
    std::fs::write(
        &sa,
        r#"{"type":"service_account","project_id":"sa-project","client_email":"bot@sa-project.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n","token_uri":"https://oauth2.googleapis.com/token"}"#,
    )
    .unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"vertex\"\nmodel = \"gemini-2.5-pro\"\n[providers.vertex]\nregion = \"us-east5\"\n",
        &[("GOOGLE_APPLICATION_CREDENTIALS", sa.to_str().unwrap())],
    );
    assert_eq!(run.code, Some(0), "{}", run.out);
    assert!(run.out.contains("no problems found"), "{}", run.out);
    assert!(line_with(&run, "project").contains("sa-project (from the service account)"));
    assert!(line_with(&run, "credential").contains("bot@sa-project.iam.gserviceaccount.com"));
    assert!(line_with(&run, "base URL").contains("https://us-east5-aiplatform.googleapis.com"));
    assert!(!run.out.contains("SECRETKEYMATERIAL"), "{}", run.out);
    // A file without a project and none configured: an error.
    std::fs::write(
        &sa,
        r#"{"type":"service_account","client_email":"b@x","private_key":"k","token_uri":"t"}"#,
    )
    .unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"vertex\"\n",
        &[("GOOGLE_APPLICATION_CREDENTIALS", sa.to_str().unwrap())],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        run.out
            .lines()
            .any(|l| l.contains("error") && l.contains("no Google Cloud project")),
        "{}",
        run.out
    );
}

#[test]
fn key_based_providers_name_every_variable() {
    let home = tempfile::tempdir().unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"qwen\"\n[plan]\nprovider = \"groq\"\n",
        &[],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        run.out
            .contains("MISSING: set $DASHSCOPE_API_KEY (or $QWEN_API_KEY)"),
        "{}",
        run.out
    );
    assert!(
        run.out.contains("MISSING: set $GROQ_API_KEY"),
        "{}",
        run.out
    );
}

#[test]
fn models_lists_the_cloud_and_preset_tables() {
    let home = tempfile::tempdir().unwrap();
    for (provider, family, model) in [
        (
            "bedrock",
            "Bedrock ConverseStream",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
        ("vertex", "Vertex AI", "claude-sonnet-4-5@20250929"),
        ("groq", "OpenAI Chat Completions", "openai/gpt-oss-120b"),
        ("xai", "OpenAI Chat Completions", "grok-code-fast-1"),
        ("zai", "OpenAI Chat Completions", "glm-4.6"),
    ] {
        let run = switchyard(home.path(), &["models", "--provider", provider], &[]);
        assert_eq!(run.code, Some(0), "{}", run.out);
        assert!(run.out.contains(family), "{provider}: {}", run.out);
        assert!(
            run.out
                .lines()
                .any(|l| l.contains(model) && l.contains('.')),
            "{provider}: {}",
            run.out
        );
    }
}
