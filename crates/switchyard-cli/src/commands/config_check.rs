//! `switchyard config check`: the resolved plan and act settings, the serve routes, and every
//! problem found.
//! Spec: R3, R4, R12.1, R14.3a.

use std::path::Path;
use std::process::ExitCode;

use switchyard_api::auth::check::{check_bedrock, check_signin, check_vertex};
use switchyard_api::providers::presets::WireFamily;
use switchyard_api::{ApiConfiguration, ConfigError, Mode, ResolvedMode, resolve_mode};

use crate::cli::SelectionArgs;
use crate::settings;

/// Prints the configuration in effect for both modes; exits 1 when a problem would stop a task.
pub fn run(config_path: Option<&Path>, selection: &SelectionArgs) -> ExitCode {
    let (config, source, default_mode) = match load(config_path, selection) {
        Ok(loaded) => loaded,
        Err(e) => {
            say!("problems:\n  - {e}");
            return ExitCode::from(1);
        }
    };
    say!("configuration: {}", source.describe());
    let mut problems = Problems::default();
    for mode in [Mode::Act, Mode::Plan] {
        let default = if mode == default_mode {
            " (default)"
        } else {
            ""
        };
        say!("{} mode{default}:", mode.as_str());
        // A file of serve routes that sets no provider for a mode is whole for `serve`: that
        // no task can run in that mode is worth saying, not a failure.
        let unset = config.mode_settings(mode).provider.is_none();
        problems.lenient = unset && !config.serve.routes.is_empty();
        match resolve_mode(&config, mode) {
            Ok(r) => print_mode(&config, mode, &r, &mut problems),
            Err(e) => {
                say!("  (cannot be used)");
                problems.error(mode, e);
            }
        }
    }
    problems.lenient = false;
    check_serve(config_path, &mut problems);
    problems.report()
}

/// The `serve` routes, checked by the function a running `serve` reloads the file with, so a
/// file that passes here is one a reload puts in effect.
fn check_serve(config_path: Option<&Path>, problems: &mut Problems) {
    match settings::load_serve(config_path) {
        Ok(serve) => {
            let routes = serve.config.serve.routes.len();
            if routes > 0 {
                say!("serve: {routes} routes");
            }
            let warnings = serve.warnings.into_iter();
            (problems.warnings).extend(warnings.map(|w| format!("serve: {w}")));
        }
        Err(found) => {
            say!("serve: (cannot be used)");
            (problems.errors).extend(found.into_iter().map(|e| format!("serve: {e}")));
        }
    }
}

fn load(
    config_path: Option<&Path>,
    selection: &SelectionArgs,
) -> Result<(ApiConfiguration, settings::ConfigSource, Mode), ConfigError> {
    let (mut config, source, default_mode) = settings::load(config_path, selection, None)?;
    // The selection applies to whichever mode a task runs in, so both are shown with it.
    let other_mode = if default_mode == Mode::Act {
        Mode::Plan
    } else {
        Mode::Act
    };
    settings::apply_selection(&mut config, other_mode, selection);
    settings::check_typed(&config, selection)?;
    Ok((config, source, default_mode))
}

#[derive(Default)]
struct Problems {
    errors: Vec<String>,
    warnings: Vec<String>,
    /// A mode's errors are warnings: the file is for `serve` and does not set that mode.
    lenient: bool,
}

impl Problems {
    fn error(&mut self, mode: Mode, e: impl std::fmt::Display) {
        let line = format!("{} mode: {e}", mode.as_str());
        if self.lenient {
            self.warnings.push(line);
        } else {
            self.errors.push(line);
        }
    }

    fn warnings<T: std::fmt::Display>(&mut self, mode: Mode, found: impl IntoIterator<Item = T>) {
        self.warnings.extend(
            found
                .into_iter()
                .map(|w| format!("{} mode: {w}", mode.as_str())),
        );
    }

    /// "no problems found", or every problem, errors first.
    fn report(self) -> ExitCode {
        if self.errors.is_empty() && self.warnings.is_empty() {
            say!("no problems found");
            return ExitCode::SUCCESS;
        }
        say!("problems:");
        for e in &self.errors {
            say!("  - error: {e}");
        }
        for w in &self.warnings {
            say!("  - warning: {w}");
        }
        if self.errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

/// One mode's lines; its problems go to `problems`.
fn print_mode(config: &ApiConfiguration, mode: Mode, r: &ResolvedMode, problems: &mut Problems) {
    say!("  provider   {}", r.provider_id);
    say!("  model      {}", r.model_id);
    say!("  model info {}", r.model_origin);
    if let Some(region) = &r.region {
        say!("  region     {region}");
    }
    let cloud = print_access(mode, r, problems);
    say!(
        "  limits     context {} tokens · max output {}",
        r.model_info.context_window,
        if r.model_info.max_tokens > 0 {
            format!("{} tokens", r.model_info.max_tokens)
        } else {
            "unknown".to_owned()
        }
    );
    let effort = r.reasoning_effort.map_or("default", |e| e.as_str());
    say!(
        "  thinking   budget {} tokens · reasoning effort {effort}",
        r.thinking_budget_tokens
    );
    if let (false, Err(e)) = (cloud, r.check_key()) {
        problems.error(mode, e);
    }
    problems.warnings(mode, &r.notices);
    let fallbacks = &config.mode_settings(mode).fallbacks;
    if !fallbacks.is_empty() {
        let listed: Vec<String> = fallbacks.iter().map(|f| f.label()).collect();
        say!("  fallbacks  {}", listed.join(", "));
    }
    // A fallback that cannot run is left out of the chain, so it is said here.
    problems.warnings(mode, switchyard_api::failover_problems(config, mode));
}

/// The base URL and credentials of a cloud or sign-in provider; true when it had such a check.
fn print_access(mode: Mode, r: &ResolvedMode, problems: &mut Problems) -> bool {
    let env = |k: &str| std::env::var(k).ok();
    let cloud = match r.preset.family {
        WireFamily::Bedrock => Some(check_bedrock(r, &env)),
        WireFamily::Vertex => Some(check_vertex(r, &env)),
        _ => check_signin(r, &env),
    };
    let Some(check) = cloud else {
        say!("  base URL   {}", r.base_url);
        say!("  API key    {}", key_line(r));
        return false;
    };
    say!("  base URL   {}", base_url_line(r));
    for (label, value) in &check.facts {
        say!("  {label:<10} {value}");
    }
    for e in &check.errors {
        problems.error(mode, e);
    }
    problems.warnings(mode, &check.warnings);
    true
}

fn base_url_line(r: &ResolvedMode) -> String {
    match r.preset.family {
        WireFamily::ClaudeCode => "none (a local program)".to_owned(),
        _ if r.cloud.base_url_overridden => r.base_url.clone(),
        WireFamily::SapAiCore => "the service key's AI API URL".to_owned(),
        WireFamily::QwenCode => {
            format!("{} (or the sign-in's resource_url)", r.base_url)
        }
        WireFamily::Bedrock | WireFamily::Vertex => {
            format!("{} (from the region)", r.base_url)
        }
        _ => r.base_url.clone(),
    }
}

/// Where the key comes from, or every variable that may hold it.
fn key_line(r: &ResolvedMode) -> String {
    match (&r.api_key, r.needs_key()) {
        (Some(_), _) => format!("${} is set ([redacted])", r.api_key_env),
        (None, false) => "not needed (local server)".to_owned(),
        (None, true) => {
            // A variable named by `api_key_env` is the only one read.
            let custom = !r.preset.api_key_env.contains(&r.api_key_env.as_str());
            let others: Vec<String> = r
                .preset
                .api_key_env
                .iter()
                .filter(|v| !custom && **v != r.api_key_env)
                .map(|v| format!("${v}"))
                .collect();
            if others.is_empty() {
                format!("MISSING: set ${}", r.api_key_env)
            } else {
                format!("MISSING: set ${} (or {})", r.api_key_env, others.join(", "))
            }
        }
    }
}
