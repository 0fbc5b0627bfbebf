//! `get_system_prompt`: the one place a `SystemPromptContext` becomes the prompt and tools.
//! Spec: R6.2.

use switchyard_api::{Mode, ToolSpec};

use super::context::SystemPromptContext;
use super::gather::RuleFile;
use super::tools::{BoundServer, bind_mcp_tools};

const SECTION_SEPARATOR: &str = "\n\n====\n\n";

const ROLE: &str = "You are a highly skilled coding assistant with broad knowledge of programming \
languages, frameworks, tools and good engineering practice. You work in the user's project on \
their machine: you read and change code, run commands and explain what you find. Be direct and \
concise, and check your work.";

const PLAN_MODE: &str = "MODE\n\nYou are in PLAN MODE. Discuss the task with the user and plan \
it: gather the context you need, ask clarifying questions when something is unclear, and present \
a concrete, step-by-step plan for the user to review. Do not change any files and do not run \
commands that change anything. When the plan is agreed, ask the user to switch to ACT MODE to \
carry it out.";

const ACT_MODE: &str = "MODE\n\nYou are in ACT MODE. Carry out the user's task step by step with \
the tools available, checking the result of each step before the next. When the task is done, \
say briefly what you changed and how it was verified.";

/// Builds `(system_prompt, tools)` from `ctx`; without native tool calling the prompt
/// describes the tools and the array is empty.
pub fn get_system_prompt(ctx: &SystemPromptContext) -> (String, Vec<ToolSpec>) {
    let bound = bind_mcp_tools(&ctx.mcp_servers);

    let mut sections = vec![
        ROLE.to_owned(),
        mode_section(ctx.mode).to_owned(),
        environment_section(ctx),
    ];
    if !ctx.mcp_servers.is_empty() {
        sections.push(mcp_section(&bound, ctx.native_tool_calling));
    }
    if !ctx.rules.is_empty() {
        sections.push(rules_section(&ctx.rules));
    }
    if let Some(section) = ctx.clineignore.as_deref().and_then(clineignore_section) {
        sections.push(section);
    }
    if let Some(language) = ctx
        .preferred_language
        .as_deref()
        .map(str::trim)
        .filter(|language| !language.is_empty())
    {
        sections.push(format!("LANGUAGE\n\nAlways respond in {language}."));
    }

    let tools = if ctx.native_tool_calling {
        bound
            .iter()
            .flat_map(|server| &server.tools)
            .map(|(binding, spec)| ToolSpec {
                name: binding.function_name.clone(),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    (sections.join(SECTION_SEPARATOR), tools)
}

fn mode_section(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => PLAN_MODE,
        Mode::Act => ACT_MODE,
    }
}

fn environment_section(ctx: &SystemPromptContext) -> String {
    format!(
        "SYSTEM INFORMATION\n\nOperating system: {}\nDefault shell: {}\nCurrent working directory: {}",
        ctx.os,
        ctx.shell,
        ctx.cwd.display()
    )
}

const MCP_INTRO: &str =
    "MCP SERVERS\n\nThese Model Context Protocol servers are connected and give you extra tools.";

const MCP_NATIVE_CALLS: &str = " Each tool is offered to you as a function named `server__tool`.";

const MCP_TEXT_CALLS: &str = " To call one, reply with this block, where the arguments are a \
    JSON object matching the tool's input schema, then wait for the result:\n\n\
    <use_mcp_tool>\n<server_name>server name</server_name>\n\
    <tool_name>tool name</tool_name>\n\
    <arguments>{\"key\": \"value\"}</arguments>\n</use_mcp_tool>";

fn mcp_section(servers: &[BoundServer<'_>], native: bool) -> String {
    let mut out = String::from(MCP_INTRO);
    out.push_str(if native {
        MCP_NATIVE_CALLS
    } else {
        MCP_TEXT_CALLS
    });
    for server in servers {
        out.push_str(&format!("\n\n## {}\n", server.name));
        if server.tools.is_empty() {
            out.push_str("\n(no tools)");
        }
        for (binding, spec) in &server.tools {
            let description = indent_continuation(spec.description.trim());
            if native {
                out.push_str(&format!(
                    "\n- `{}` ({}): {description}",
                    binding.function_name, binding.tool
                ));
            } else {
                out.push_str(&format!("\n- {}: {description}", binding.tool));
                out.push_str(&format!("\n  Input schema: {}", spec.input_schema));
            }
        }
    }
    out
}

fn rules_section(rules: &[RuleFile]) -> String {
    let mut out = String::from(
        "USER'S CUSTOM INSTRUCTIONS\n\nThe user gave the following instructions. Follow them \
         as well as you can, unless they conflict with the instructions above.",
    );
    for rule in rules {
        out.push_str(&format!(
            "\n\n# {}\n\n{}",
            rule.path.display(),
            rule.content
        ));
    }
    out
}

/// `None` when the file has no patterns, only blanks and comments.
fn clineignore_section(content: &str) -> Option<String> {
    let patterns: Vec<&str> = content
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    if patterns.is_empty() {
        return None;
    }
    let mut out = String::from(
        "IGNORED FILES\n\nThe user's .clineignore file (gitignore syntax) lists paths you must \
         not read, search, list or change. Treat them as if they did not exist; if the task \
         needs one, ask the user.",
    );
    if patterns.iter().any(|pattern| pattern.starts_with('!')) {
        out.push_str(" A pattern starting with `!` is an exception: that path is allowed.");
    }
    out.push('\n');
    for pattern in patterns {
        out.push_str(&format!("\n- {pattern}"));
    }
    Some(out)
}

fn indent_continuation(text: &str) -> String {
    text.replace('\n', "\n  ")
}
