use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use switchyard_api::{Mode, ToolSpec};

use super::gather::{friendly_os_name, shell_name};
use super::tools::sanitize_tool_name;
use super::*;

/// A fresh directory under the system temp dir, removed on drop (also when a test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "switchyard-prompt-{label}-{}-{n}-{nanos}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn base_ctx() -> SystemPromptContext {
    SystemPromptContext {
        cwd: PathBuf::from("/home/dev/project"),
        os: "Linux (linux, x86_64)".into(),
        shell: "zsh".into(),
        provider_id: "anthropic".into(),
        model_id: "claude-sonnet-4-5".into(),
        ..SystemPromptContext::default()
    }
}

fn tool(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
    }
}

fn server(name: &str, tools: Vec<ToolSpec>) -> McpServerInfo {
    McpServerInfo {
        name: name.into(),
        tools,
    }
}

fn full_ctx() -> SystemPromptContext {
    SystemPromptContext {
        rules: vec![
            RuleFile {
                path: PathBuf::from("/home/dev/Documents/Cline/Rules/style.md"),
                content: "Use tabs.".into(),
            },
            RuleFile {
                path: PathBuf::from("/home/dev/project/AGENTS.md"),
                content: "Run `make test` before finishing.".into(),
            },
        ],
        clineignore: Some("# secrets\nsecrets/\n\n*.env\n".into()),
        ..base_ctx()
    }
    .with_mcp_servers(vec![server(
        "github",
        vec![tool("create_issue", "Create an issue.")],
    )])
    .with_preferred_language("German")
}

// ---- sections -------------------------------------------------------------------------------

#[test]
fn minimal_context_has_only_the_fixed_sections() {
    let (text, tools) = get_system_prompt(&base_ctx());
    assert!(text.starts_with("You are a highly skilled coding assistant"));
    assert!(text.contains("SYSTEM INFORMATION"));
    assert!(text.contains("Operating system: Linux (linux, x86_64)"));
    assert!(text.contains("Default shell: zsh"));
    assert!(text.contains("Current working directory: /home/dev/project"));
    assert!(text.contains("ACT MODE"));
    for absent in [
        "MCP SERVERS",
        "USER'S CUSTOM INSTRUCTIONS",
        "IGNORED FILES",
        "LANGUAGE",
        "Always respond in",
        "use_mcp_tool",
    ] {
        assert!(!text.contains(absent), "unexpected {absent:?} in:\n{text}");
    }
    assert!(tools.is_empty());
}

#[test]
fn full_context_has_every_section_in_order() {
    let (text, _) = get_system_prompt(&full_ctx());
    let order = [
        "You are a highly skilled coding assistant",
        "MODE\n\nYou are in ACT MODE",
        "SYSTEM INFORMATION",
        "MCP SERVERS",
        "USER'S CUSTOM INSTRUCTIONS",
        "IGNORED FILES",
        "LANGUAGE\n\nAlways respond in German.",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|needle| {
            text.find(needle)
                .unwrap_or_else(|| panic!("missing {needle:?} in:\n{text}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(text.matches("\n\n====\n\n").count(), order.len() - 1);
}

#[test]
fn plan_and_act_modes_have_their_own_text() {
    let plan = get_system_prompt(&SystemPromptContext {
        mode: Mode::Plan,
        ..base_ctx()
    })
    .0;
    let act = get_system_prompt(&SystemPromptContext {
        mode: Mode::Act,
        ..base_ctx()
    })
    .0;
    assert!(plan.contains("You are in PLAN MODE"));
    assert!(plan.contains("Do not change any files"));
    assert!(!plan.contains("You are in ACT MODE"));
    assert!(act.contains("You are in ACT MODE"));
    assert!(act.contains("Carry out the user's task"));
    assert!(!act.contains("You are in PLAN MODE"));
}

#[test]
fn rules_are_shown_with_their_paths_in_order() {
    let (text, _) = get_system_prompt(&full_ctx());
    let style = text
        .find("# /home/dev/Documents/Cline/Rules/style.md\n\nUse tabs.")
        .unwrap();
    let agents = text
        .find("# /home/dev/project/AGENTS.md\n\nRun `make test` before finishing.")
        .unwrap();
    assert!(style < agents);
}

#[test]
fn clineignore_is_a_list_of_patterns_without_comments() {
    let (text, _) = get_system_prompt(&full_ctx());
    let section = &text[text.find("IGNORED FILES").unwrap()..];
    assert!(section.contains("must not read"));
    assert!(section.contains("\n- secrets/\n- *.env"));
    assert!(!section.contains("# secrets"));
    assert!(!section.contains("exception"));

    let with_exception = SystemPromptContext {
        clineignore: Some("build/\n!build/keep.txt".into()),
        ..base_ctx()
    };
    let text = get_system_prompt(&with_exception).0;
    assert!(text.contains("- !build/keep.txt"));
    assert!(text.contains("is an exception"));

    let only_comments = SystemPromptContext {
        clineignore: Some("# nothing here\n\n".into()),
        ..base_ctx()
    };
    assert!(
        !get_system_prompt(&only_comments)
            .0
            .contains("IGNORED FILES")
    );
}

#[test]
fn blank_preferred_language_is_unset() {
    assert_eq!(
        base_ctx().with_preferred_language("  ").preferred_language,
        None
    );
    assert_eq!(
        base_ctx()
            .with_preferred_language(" Deutsch ")
            .preferred_language
            .as_deref(),
        Some("Deutsch")
    );
    let blank_field = SystemPromptContext {
        preferred_language: Some(" ".into()),
        ..base_ctx()
    };
    assert!(
        !get_system_prompt(&blank_field)
            .0
            .contains("Always respond in")
    );
}

// ---- MCP tools ------------------------------------------------------------------------------

#[test]
fn native_tool_calling_puts_mcp_tools_in_the_array() {
    let schema = json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}});
    let ctx = base_ctx()
        .with_mcp_servers(vec![
            server(
                "github",
                vec![ToolSpec {
                    name: "create_issue".into(),
                    description: "Create an issue.".into(),
                    input_schema: schema.clone(),
                }],
            ),
            server("empty", vec![]),
        ])
        .with_native_tool_calling(true);
    let (text, tools) = get_system_prompt(&ctx);
    assert_eq!(
        tools,
        vec![ToolSpec {
            name: "github__create_issue".into(),
            description: "Create an issue.".into(),
            input_schema: schema,
        }]
    );
    assert!(text.contains("MCP SERVERS"));
    assert!(text.contains("## github"));
    assert!(text.contains("- `github__create_issue` (create_issue): Create an issue."));
    assert!(text.contains("## empty\n\n(no tools)"));
    assert!(!text.contains("use_mcp_tool"));
    assert!(!text.contains("Input schema"));
}

#[test]
fn text_tool_calling_describes_tools_and_sends_none() {
    let ctx = base_ctx()
        .with_mcp_servers(vec![server(
            "github",
            vec![tool("create_issue", "Create an issue.\nReturns its URL.")],
        )])
        .with_native_tool_calling(false);
    let (text, tools) = get_system_prompt(&ctx);
    assert!(tools.is_empty());
    assert!(text.contains("<use_mcp_tool>"));
    assert!(text.contains("## github"));
    assert!(text.contains("- create_issue: Create an issue.\n  Returns its URL."));
    assert!(
        text.contains(r#"Input schema: {"properties":{"q":{"type":"string"}},"type":"object"}"#)
    );
    assert!(!text.contains("github__create_issue"));
}

#[test]
fn tool_names_are_sanitised_and_cut_to_64() {
    assert_eq!(
        sanitize_tool_name("my server__get.file"),
        "my_server__get_file"
    );
    assert_eq!(sanitize_tool_name("café__ok-1"), "caf___ok-1");
    let long = sanitize_tool_name(&format!("{}__tool", "s".repeat(80)));
    assert_eq!(long.len(), MAX_TOOL_NAME_LEN);

    let bindings = mcp_tool_bindings(&[server(
        "Files & Docs",
        vec![tool("read/file", "Read."), tool("list files", "List.")],
    )]);
    let names: Vec<&str> = bindings.iter().map(|b| b.function_name.as_str()).collect();
    assert_eq!(
        names,
        ["Files___Docs__list_files", "Files___Docs__read_file"]
    );
    assert!(names.iter().all(|name| {
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }));
    assert_eq!(bindings[1].server, "Files & Docs");
    assert_eq!(bindings[1].tool, "read/file");
}

#[test]
fn colliding_tool_names_get_numeric_suffixes() {
    let bindings = mcp_tool_bindings(&[
        server("a.b", vec![tool("x", "1")]),
        server("a b", vec![tool("x", "2")]),
        server(
            "a_b",
            vec![tool("x", "3"), tool("x", "4"), tool("x_2", "5")],
        ),
    ]);
    let names: Vec<&str> = bindings.iter().map(|b| b.function_name.as_str()).collect();
    // Servers sorted by name: "a b" < "a.b" < "a_b"; tools by name, duplicates in given order.
    assert_eq!(
        names,
        ["a_b__x", "a_b__x_2", "a_b__x_3", "a_b__x_4", "a_b__x_2_2"]
    );
    assert_eq!(
        (bindings[0].server.as_str(), bindings[1].server.as_str()),
        ("a b", "a.b")
    );

    let long = "s".repeat(70);
    let bindings = mcp_tool_bindings(&[
        server(&long, vec![tool("one", "")]),
        server(&format!("{long}!"), vec![tool("two", "")]),
    ]);
    assert_eq!(bindings[0].function_name, "s".repeat(64));
    assert_eq!(bindings[1].function_name, format!("{}_2", "s".repeat(62)));
}

#[test]
fn output_is_deterministic_and_independent_of_server_order() {
    let servers = vec![
        server("zeta", vec![tool("b", "B"), tool("a", "A")]),
        server("alpha", vec![tool("c", "C")]),
    ];
    let mut reversed = servers.clone();
    reversed.reverse();
    for native in [false, true] {
        let ctx = full_ctx()
            .with_mcp_servers(servers.clone())
            .with_native_tool_calling(native);
        let first = get_system_prompt(&ctx);
        assert_eq!(first, get_system_prompt(&ctx));
        let other = get_system_prompt(&ctx.clone().with_mcp_servers(reversed.clone()));
        assert_eq!(first, other);
        assert!(first.0.find("## alpha").unwrap() < first.0.find("## zeta").unwrap());
    }
    let tools = get_system_prompt(
        &base_ctx()
            .with_mcp_servers(servers)
            .with_native_tool_calling(true),
    )
    .1;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alpha__c", "zeta__a", "zeta__b"]);
}

// ---- gather ---------------------------------------------------------------------------------

#[test]
fn gather_reads_global_dir_local_dir_and_agents_in_order() {
    let global = TempDir::new("global");
    global.write("b-style.md", "Global B");
    global.write("a-tone.txt", "\u{feff}  Global A\n");
    global.write("notes.json", "{\"ignored\": true}");
    global.write("blank.md", "  \n\n");
    fs::create_dir_all(global.path().join("dir.md")).unwrap();

    let ws = TempDir::new("ws");
    ws.write(".clinerules/02-second.md", "Second rule");
    ws.write(".clinerules/01-first.md", "First rule");
    ws.write(".clinerules/workflows/deploy.md", "not a rule");
    ws.write(".clinerules/image.png", "not a rule");
    ws.write("AGENTS.md", "Agents rule");
    ws.write(".clineignore", "# comment\nsecrets/\n");

    let ctx = SystemPromptContext::gather(
        ws.path(),
        Some(global.path()),
        "openrouter",
        "some/model",
        Mode::Plan,
    );
    let got: Vec<(PathBuf, &str)> = ctx
        .rules
        .iter()
        .map(|r| (r.path.clone(), r.content.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (global.path().join("a-tone.txt"), "Global A"),
            (global.path().join("b-style.md"), "Global B"),
            (ws.path().join(".clinerules/01-first.md"), "First rule"),
            (ws.path().join(".clinerules/02-second.md"), "Second rule"),
            (ws.path().join("AGENTS.md"), "Agents rule"),
        ]
    );
    assert_eq!(ctx.clineignore.as_deref(), Some("# comment\nsecrets/"));
    assert_eq!(ctx.cwd, ws.path());
    assert_eq!(ctx.provider_id, "openrouter");
    assert_eq!(ctx.model_id, "some/model");
    assert_eq!(ctx.mode, Mode::Plan);
    assert!(ctx.os.contains(std::env::consts::OS));
    assert!(!ctx.shell.is_empty());
    assert!(ctx.mcp_servers.is_empty());
    assert_eq!(ctx.preferred_language, None);
    assert!(!ctx.native_tool_calling);

    let text = get_system_prompt(&ctx).0;
    let first = format!(
        "# {}\n\nFirst rule",
        ws.path().join(".clinerules/01-first.md").display()
    );
    assert!(text.contains(&first), "{text}");
    assert!(text.contains("\n- secrets/"));
}

#[test]
fn gather_reads_a_clinerules_file() {
    let ws = TempDir::new("file");
    ws.write(".clinerules", "Single file rules\n");
    let ctx = SystemPromptContext::gather(ws.path(), None, "p", "m", Mode::Act);
    assert_eq!(
        ctx.rules,
        vec![RuleFile {
            path: ws.path().join(".clinerules"),
            content: "Single file rules".into(),
        }]
    );
    assert_eq!(ctx.clineignore, None);
}

#[test]
fn gather_skips_oversized_and_non_utf8_files() {
    let limit = usize::try_from(MAX_RULE_FILE_BYTES).unwrap();
    let global = TempDir::new("big");
    global.write("a-exact.md", "x".repeat(limit));
    global.write("b-over.md", "y".repeat(limit + 1));
    global.write("c-binary.md", [0xff, 0xfe, 0x00, 0x80]);
    global.write("d-small.md", "small");
    let ws = TempDir::new("big-ws");
    ws.write("AGENTS.md", "z".repeat(limit * 4));
    ws.write(".clineignore", "i".repeat(limit + 1));

    let ctx = SystemPromptContext::gather(ws.path(), Some(global.path()), "p", "m", Mode::Act);
    let names: Vec<String> = ctx
        .rules
        .iter()
        .filter_map(|r| r.path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a-exact.md", "d-small.md"]);
    assert_eq!(ctx.rules[0].content.len(), limit);
    assert_eq!(ctx.clineignore, None);
}

#[test]
fn gather_with_nothing_present_is_empty() {
    let ws = TempDir::new("empty");
    let missing = ws.path().join("no-such-dir");
    let ctx = SystemPromptContext::gather(ws.path(), Some(&missing), "p", "m", Mode::Act);
    assert!(ctx.rules.is_empty());
    assert_eq!(ctx.clineignore, None);
    // A global "directory" that is a file is skipped too.
    let file = ws.write("not-a-dir", "x");
    let ctx = SystemPromptContext::gather(ws.path(), Some(&file), "p", "m", Mode::Act);
    assert!(ctx.rules.is_empty());
    // An AGENTS.md that is a directory is skipped, not an error.
    fs::create_dir_all(ws.path().join(AGENTS_MD)).unwrap();
    let ctx = SystemPromptContext::gather(ws.path(), None, "p", "m", Mode::Act);
    assert!(ctx.rules.is_empty());
}

#[test]
fn shell_is_the_file_name_with_a_fallback() {
    assert_eq!(shell_name(Some(OsString::from("/bin/zsh")), "sh"), "zsh");
    assert_eq!(shell_name(Some(OsString::from("fish")), "sh"), "fish");
    assert_eq!(shell_name(Some(OsString::new()), "sh"), "sh");
    assert_eq!(shell_name(None, "sh"), "sh");
}

#[test]
fn os_names_are_friendly() {
    assert_eq!(friendly_os_name("macos"), "macOS");
    assert_eq!(friendly_os_name("linux"), "Linux");
    assert_eq!(friendly_os_name("windows"), "Windows");
    assert_eq!(friendly_os_name("haiku"), "haiku");
}

#[test]
fn default_global_rules_dir_ends_in_cline_rules() {
    if let Some(dir) = default_global_rules_dir() {
        assert!(dir.ends_with(Path::new("Documents").join("Cline").join("Rules")));
    }
}
