//! Opening a task from the command line: the store, the configuration, the fallbacks, the MCP
//! servers and the task, new or resumed.
//! Spec: R11, R12.1.

use std::path::Path;
use std::sync::Arc;

use switchyard_api::{ApiConfiguration, Mode};
use switchyard_core::Task;
use switchyard_core::mcp::McpServerHub;
use switchyard_core::store::{TaskRecord, TaskStore};

use super::refused::Refused;
use super::resumed::{keep_endpoint, keep_model};
use crate::approve::TerminalApprover;
use crate::cli::{SelectionArgs, TaskOptions};
use crate::decide::OnFailure;
use crate::endpoint::Endpoint;
use crate::settings;

/// What the session starts from.
pub enum Start {
    New,
    /// A saved task; `TaskArgs::prompt`, which may be empty, is the next message.
    Resume(String),
}

/// The task, its MCP hub, the store, the endpoint to record if it changed, the auth hint and
/// the telemetry its spans go to.
pub(super) type Opened = (
    Task,
    Arc<McpServerHub>,
    Arc<dyn TaskStore>,
    Option<Endpoint>,
    Option<String>,
    Arc<switchyard_gateway::Telemetry>,
);

/// Creates or reopens the task; a resumed one keeps its mode, provider and model unless told.
pub(super) async fn open(
    config_path: Option<&Path>,
    place: settings::StorePlace<'_>,
    prompt: &str,
    options: &TaskOptions,
    start: &Start,
) -> Result<Opened, Refused> {
    if matches!(start, Start::New) && prompt.trim().is_empty() {
        return Err(Refused::config(
            "the prompt is empty; pass what to ask, e.g. switchyard task \"Explain Rust lifetimes\", pipe it in, or give --file FILE",
        ));
    }
    let store = open_store(place).await?;
    let saved = match start {
        Start::New => None,
        Start::Resume(id) => Some(store.task(id).await.map_err(Refused::store)?),
    };
    let (mut config, source, mode) = load_config(config_path, options, saved.as_ref())?;
    let endpoint = match start {
        Start::New => Endpoint::of(&config, mode),
        Start::Resume(id) => {
            let recorded = crate::endpoint::recorded(store.as_ref(), id).await;
            keep_endpoint(
                &mut config,
                config_path,
                mode,
                options,
                recorded.as_ref(),
                id,
            )?
        }
    };
    if matches!(start, Start::New) {
        super::served_model::choose(&mut config, &source, mode, &options.selection).await?;
    }
    check_local_default(&source, &config, mode).await?;
    let auth_hint = auth_hint(&config, mode);
    apply_fallbacks(&mut config, mode, options)?;
    let telemetry = crate::telemetry::start(&config).unwrap_or_else(|e| {
        tracing::warn!("the task's spans are not exported: {e}");
        Arc::new(switchyard_gateway::Telemetry::off())
    });
    let (task, hub) = build(&config, mode, Arc::clone(&store), prompt, options, start).await?;
    Ok((task, hub, store, endpoint, auth_hint, telemetry))
}

/// Opens the task store; a configuration file that does not load is reported as such.
async fn open_store(place: settings::StorePlace<'_>) -> Result<Arc<dyn TaskStore>, Refused> {
    let configured = match place.store.filter(|s| !s.trim().is_empty()) {
        None => settings::configured_store(place).map_err(Refused::config)?,
        Some(_) => None,
    };
    let spec = settings::store_spec_with(place, configured.as_ref()).map_err(Refused::store)?;
    settings::open_spec(&spec).await.map_err(Refused::store)
}

/// The configuration for the task's mode, with the typed selection checked.
fn load_config(
    config_path: Option<&Path>,
    options: &TaskOptions,
    saved: Option<&TaskRecord>,
) -> Result<(ApiConfiguration, settings::ConfigSource, Mode), Refused> {
    let mut mode = options.mode.as_deref().and_then(|m| m.parse::<Mode>().ok());
    if let Some(task) = saved {
        mode = mode.or_else(|| task.mode.parse::<Mode>().ok());
    }
    let selection = &options.selection;
    let (mut config, source, mode) =
        settings::load(config_path, selection, mode).map_err(Refused::config)?;

    settings::check_typed(&config, selection).map_err(Refused::config)?;
    if let Some(task) = saved.filter(|_| selection.provider.is_none()) {
        keep_model(&mut config, config_path, mode, selection, task)?;
    }
    Ok((config, source, mode))
}

/// With the built-in default still in effect, the local model server must be listening.
async fn check_local_default(
    source: &settings::ConfigSource,
    config: &ApiConfiguration,
    mode: Mode,
) -> Result<(), Refused> {
    let local = settings::local_model_base_url();
    if matches!(source, settings::ConfigSource::BuiltInLocal)
        && Endpoint::of(config, mode).is_some_and(|e| e.base_url == local)
    {
        settings::check_local_model_server()
            .await
            .map_err(Refused::config)?;
    }
    Ok(())
}

fn auth_hint(config: &ApiConfiguration, mode: Mode) -> Option<String> {
    switchyard_api::resolve_mode(config, mode)
        .ok()
        .filter(|r| !r.api_key_env.is_empty())
        .map(|r| {
            format!(
                "check {}, the variable the key for {} is read from (or name another with api_key_env under [providers.{}])",
                r.api_key_env, r.provider_id, r.provider_id
            )
        })
}

/// `--fallback` entries replace the file's chain, as `--model` replaces its model.
fn apply_fallbacks(
    config: &mut ApiConfiguration,
    mode: Mode,
    options: &TaskOptions,
) -> Result<(), Refused> {
    if options.fallback.is_empty() {
        return Ok(());
    }
    // Typed provider ids are checked as `--provider` is; model ids are sent as typed.
    for fallback in &options.fallback {
        let mut entry = config.clone();
        *entry.mode_settings_mut(mode) = fallback.mode_settings();
        let typed = SelectionArgs {
            provider: fallback.provider.clone(),
            model: fallback.model_id.clone(),
            base_url: fallback.base_url.clone(),
        };
        settings::check_typed(&entry, &typed).map_err(Refused::config)?;
    }
    config.mode_settings_mut(mode).fallbacks = options.fallback.clone();
    Ok(())
}

/// Builds the task and creates it with `prompt` or reopens it.
async fn build(
    config: &ApiConfiguration,
    mode: Mode,
    store: Arc<dyn TaskStore>,
    prompt: &str,
    options: &TaskOptions,
    start: &Start,
) -> Result<(Task, Arc<McpServerHub>), Refused> {
    let mut builder = Task::builder(config, mode, store).map_err(Refused::config)?;
    if let Some(usd) = options.max_cost {
        builder = builder.max_cost_usd(usd);
    }
    // MCP servers connect in the background while the task starts.
    let hub =
        crate::settings::mcp::start_hub(options.mcp_config.as_deref()).map_err(Refused::config)?;
    let mut builder = builder
        .mcp_hub(Arc::clone(&hub))
        .failure_decider(Arc::new(OnFailure::choose(
            options.on_failure.as_deref(),
            options.json,
        )))
        .tool_approver(Arc::new(TerminalApprover { yes: options.yes }))
        .max_auto_retries(options.retries);
    if let Some(system) = &options.system {
        builder = builder.system_prompt(system.clone());
    }
    if let Some(title) = &options.title {
        builder = builder.title(title.clone());
    }
    let task = match start {
        Start::New => builder.create(prompt).await,
        Start::Resume(id) => builder.resume(id).await,
    };
    match task {
        Ok(task) => Ok((task, hub)),
        Err(e) => {
            hub.shutdown().await;
            Err(e.into())
        }
    }
}
