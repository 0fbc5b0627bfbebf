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
    // The reference's default Bedrock model.
    assert!(line_with(&run, "model").contains("anthropic.claude-sonnet-5"));
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

/// `switchyard task` against each cloud family on the mock server, with only credentials,
/// a region and a model id: the answer streams to stdout.
mod task {
    use super::*;
    use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};

    fn fixture_text(name: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                test_data_dir().join(format!("fixtures/{name}.expected.json")),
            )
            .unwrap(),
        )
        .unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .filter(|c| c["type"] == "text")
            .map(|c| c["text"].as_str().unwrap())
            .collect()
    }

    async fn run(home: &Path, args: Vec<String>, vars: Vec<(&'static str, String)>) -> Run {
        let home = home.to_owned();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            switchyard(&home, &args, &vars)
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn bedrock_task_streams_with_aws_keys_and_a_region() {
        let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
            "bedrock_converse_stream",
        ))])
        .await;
        let home = tempfile::tempdir().unwrap();
        let out = run(
            home.path(),
            [
                "task",
                "--provider",
                "bedrock",
                "--base-url",
                &server.url(),
                "Weather?",
            ]
            .map(String::from)
            .to_vec(),
            vec![
                ("AWS_ACCESS_KEY_ID", AKID.to_owned()),
                ("AWS_SECRET_ACCESS_KEY", SECRET.to_owned()),
                ("AWS_REGION", "us-west-2".to_owned()),
            ],
        )
        .await;
        assert_eq!(out.code, Some(0), "{}", out.out);
        assert!(
            out.out.contains(&fixture_text("bedrock_converse_stream")),
            "{}",
            out.out
        );
        assert!(!out.out.contains(SECRET), "{}", out.out);
        let req = &server.requests()[0];
        assert!(
            req.header("authorization")
                .unwrap()
                .contains("/us-west-2/bedrock/aws4_request"),
            "{req:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn vertex_task_streams_with_a_service_account() {
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::json(
                200,
                r#"{"access_token":"ya29.cli-test","expires_in":3599,"token_type":"Bearer"}"#,
            )),
            Reply::new(HttpResponse::fixture("gemini_stream")),
        ])
        .await;
        let home = tempfile::tempdir().unwrap();
        let sa = home.path().join("sa.json");
        let key = serde_json::json!({
            "type": "service_account",
            "project_id": "cli-project",
            "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCwn6ORI70VKB0T\nlbnJlTF8eJr3YReFRnUggYfFZY2ZAq/ubf5FyAQ8WLjv7CQbu9/C1OJ0vLFTpRuT\nGBmmUsosgG747ecZQx0C+SO1H/WXs30GmIUz5uMC7Frpx7MN8OVlrz5vUNdUqNVz\navih41SgQzOMt01Int4v+x+4+P0q8Q90aSXBrJSuVFpeyCLy3QxHY7q6/s1bFIqK\njtW746us3R53B5G8JAoWDxKNr1SAs1JaKzJhXLyjSN3aU2GD/FumiFVdBllIZnd6\nFFEmmNQXbHnlLEofHHYN6BUzP7aqIDx4nDQbm4xub08sFUPFnqznBCnjjj9Q6yx7\nWLWxASb/AgMBAAECggEAMgJBUcsIsoDVGsJ+BDGV/WQ4nGqFOlsktrt2MdH7MaOt\nJJlIMYHckSmd03DNGH0tcgDMzbjPjJtnH1LnkExIqikDQsA5etGh2UGpdpNB+l37\nvG5a6MMq65z4cND2RbA7g3sG9oWxMmtLZI6ZL10qjOX6JpGP9EvnJTa5WKpHJGz8\nB20NXWuys6o7j5dSk19wJsXFfQw0BoJKPd7UK0Ezgn2QDrVsDXv0DbIlNp/jOvHd\ns5vfxDIAj0ThYT9MuNLtcj+TYnqn92egWOnWu86NHjGV+JqB/FQ4jdVE/20TjZAZ\nTCERFSszy0lOezbBOJxQwi/+SxpHUvdf/Y2Yl+oMgQKBgQDihsGmJKADFW/8kLB8\nV+X6b0kyH5FB26QOUkZkuLmB3+oGPnH7cUnVInSusTWFSvzcLe7FsQNtbGZ7ZLJ9\nlKjPS6eu1b6uJ+JbD2oJjmGR3JOLbU8zRkAkDq5udMrIYJIxRvRLSjhu9p87LlQz\nf5znfqP6c6e+kZ0jJAyJ9ShkEQKBgQDHmrKGQbRTzLJ9kOiMd0nMK8qtpvAmv8Ca\nPOdYGHJqpXpfEu2fhfRl7rdunI6ku+fl2HHL4X5iA8OHEpAykh/5jGtAPlpz2+12\nFW4wVtwi/DsoRWsnMp10BHFLEr/wu/TsSaDiYr0bgJJpr2451gRKbCxOL+8UBFu8\nkRva3jCqDwKBgQCUicSli1KZcw8x0DbJ8mFNbHfUtDptsvbKpUyfcznBXfB5E61u\nMYU2ixd0DaOIuflA76WoYEBdGj3BH/CixD5FX9ienm4giOq2x07C4Wg9WyQswwqy\nFpisjCv5JgBqkFiMk3hRfmOu72zOQ7zW4BElAzfHXNtb7OPbTSIjvGw14QKBgGSf\necvwp4VvNbPTL0hQgmVo1h3AgGQoWmHmvgFNIbDdhtkS47N9hf004EfkqIwnJfpa\nqNNM87dZimI3W3YC8BePUCnsxRCPGCBlIU1BHGyOlwvwItp5y6JG8w4Tf6tONWRA\nodg+SnLo1+ZrR7fkSflymss3ouCGafCffllRlVrFAoGAPr+dnSbw19L4pVG6383s\nmZrzorU5uhJIg62opk1J9cY74JT/yXdKyPZk5DDRgHKbpTFG863AvSMKtciggyV6\ng/0/0pnBA6zYa7d1UBpMKQsraOHe959NXTUuqBXHtfxTqhTo2rF5He4OMP9I8AZe\nb2aIxWbirZ5R+SWqlEjgT/U=\n-----END PRIVATE KEY-----\n",
            "client_email": "cli@cli-project.iam.gserviceaccount.com",
            "token_uri": format!("{}/token", server.url()),
        });
        std::fs::write(&sa, key.to_string()).unwrap();
        let out = run(
            home.path(),
            [
                "task",
                "--provider",
                "vertex",
                "--model",
                "gemini-2.5-flash",
                "--base-url",
                &server.url(),
                "Hi",
            ]
            .map(String::from)
            .to_vec(),
            vec![("GOOGLE_APPLICATION_CREDENTIALS", sa.display().to_string())],
        )
        .await;
        assert_eq!(out.code, Some(0), "{}", out.out);
        assert!(
            out.out.contains(&fixture_text("gemini_stream")),
            "{}",
            out.out
        );
        let reqs = server.requests();
        assert_eq!(reqs[0].path, "/token");
        assert_eq!(
            reqs[1].path,
            "/v1/projects/cli-project/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            reqs[1].header("authorization"),
            Some("Bearer ya29.cli-test")
        );
    }
}

#[test]
fn signed_in_providers_show_their_file_or_program() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    // No sign-in yet: the file looked for is named, with how to sign in.
    let run = check(
        home.path(),
        "[act]\nprovider = \"qwen-code\"\n",
        &[("HOME", h)],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        line_with(&run, "sign-in").contains(".qwen/oauth_creds.json (unusable)"),
        "{}",
        run.out
    );
    assert!(
        run.out.contains("run `qwen` and sign in with Qwen OAuth"),
        "{}",
        run.out
    );
    // Signed in: ready, the token never shown.
    std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
    std::fs::write(
        home.path().join(".qwen/oauth_creds.json"),
        r#"{"access_token":"QWEN-SECRET-ACCESS","token_type":"Bearer","refresh_token":"QWEN-SECRET-REFRESH","expiry_date":1}"#,
    )
    .unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"qwen-code\"\n",
        &[("HOME", h)],
    );
    assert_eq!(run.code, Some(0), "{}", run.out);
    assert!(!run.out.contains("QWEN-SECRET"), "{}", run.out);
    // Codex: CODEX_HOME decides; an API-key login cannot be used.
    std::fs::write(
        home.path().join("auth.json"),
        r#"{"OPENAI_API_KEY":"sk-CODEX-SECRET"}"#,
    )
    .unwrap();
    let run = check(
        home.path(),
        "[act]\nprovider = \"openai-codex\"\n",
        &[("CODEX_HOME", h)],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(run.out.contains("signed in with an API key"), "{}", run.out);
    assert!(!run.out.contains("CODEX-SECRET"), "{}", run.out);
    // Claude Code: the program, found or not.
    let run = check(
        home.path(),
        "[act]\nprovider = \"claude-code\"\n[providers.claude-code]\ncommand = \"/nonexistent/claude\"\n",
        &[],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        line_with(&run, "program").contains("/nonexistent/claude (not found)"),
        "{}",
        run.out
    );
    // SAP AI Core: the service key's URLs, never its secret; a malformed key is named.
    let key = r#"{"clientid":"id","clientsecret":"SAP-SECRET","url":"https://auth.example","serviceurls":{"AI_API_URL":"https://api.ai.example/"}}"#;
    let run = check(
        home.path(),
        "[act]\nprovider = \"sapaicore\"\n",
        &[("AICORE_SERVICE_KEY", key)],
    );
    assert_eq!(run.code, Some(0), "{}", run.out);
    assert!(
        line_with(&run, "AI API").contains("https://api.ai.example"),
        "{}",
        run.out
    );
    assert!(!run.out.contains("SAP-SECRET"), "{}", run.out);
    let run = check(
        home.path(),
        "[act]\nprovider = \"sapaicore\"\n",
        &[("AICORE_SERVICE_KEY", "SAP-NOT-JSON")],
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        run.out.contains("is not an SAP AI Core service key"),
        "{}",
        run.out
    );
    assert!(!run.out.contains("SAP-NOT-JSON"), "{}", run.out);
}
