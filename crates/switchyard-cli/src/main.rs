//! `switchyard`: the command-line front end, its runtime, its signals and each subcommand.
//! Spec: R9.5, R10.5.

/// `println!` that ignores a closed stdout instead of panicking, and scrubs every secret.
macro_rules! say {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            switchyard_api::secrets::scrub(&line)
        );
    }};
}

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod approve;
mod cli;
mod commands;
mod decide;
mod endpoint;
mod follow_up;
mod logging;
mod overrides;
mod prompt_input;
mod render;
mod settings;
mod signals;
mod stdout_watch;
mod table;
mod telemetry;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ConfigCommand, McpCommand, StoreCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose);
    overrides::set(cli.overrides.clone());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Ctrl-C is handled from the first instant, before any output.
    signals::install(
        &runtime,
        matches!(cli.command, Command::Task(_) | Command::Resume(_)),
    );
    let config = cli.config.as_deref();
    let place = settings::StorePlace {
        config,
        data_dir: cli.data_dir.as_deref(),
        store: cli.store.as_deref(),
    };
    let code = match cli.command {
        Command::Task(args) => runtime.block_on(commands::task::run(config, place, args)),
        Command::Resume(args) => runtime.block_on(commands::resume::run(config, place, args)),
        Command::Tasks { json, limit } => {
            runtime.block_on(commands::tasks::run(place, json, limit))
        }
        Command::Requests { json, limit } => {
            runtime.block_on(commands::requests::run(place, json, limit))
        }
        Command::Completions { shell } => commands::completions::run(shell),
        Command::Export { task_id } => runtime.block_on(commands::export::run(place, &task_id)),
        Command::Import { dir } => runtime.block_on(commands::import::run(place, &dir)),
        Command::Store {
            command: StoreCommand::Migrate,
        } => runtime.block_on(commands::store::migrate(place)),
        Command::Store {
            command: StoreCommand::Copy { from, to },
        } => runtime.block_on(commands::store::copy(place, &from, to.as_deref())),
        Command::Store {
            command: StoreCommand::Check { repair, json },
        } => runtime.block_on(commands::store::check(place, repair, json)),
        Command::Usage { by, since, json } => {
            runtime.block_on(commands::usage::run(place, by.by(), since.as_deref(), json))
        }
        Command::Keys { command } => runtime.block_on(commands::keys::run(place, &command)),
        Command::Teams { command } => runtime.block_on(commands::teams::run(place, &command)),
        Command::Users { command } => runtime.block_on(commands::users::run(place, &command)),
        Command::Audit { since, json } => {
            runtime.block_on(commands::audit::run(place, since.as_deref(), json))
        }
        Command::Serve(args) => runtime.block_on(commands::serve::run(place, &args)),
        Command::Limits { json } => runtime.block_on(commands::limits::run(place, json)),
        Command::Models { provider, json } => commands::models::run(provider.as_deref(), json),
        Command::Config {
            command: ConfigCommand::Check(sel),
        } => commands::config_check::run(config, &sel),
        Command::Mcp {
            command: McpCommand::List(args),
        } => runtime.block_on(commands::mcp::list(&args)),
    };
    // A question still waiting for a line on stdin must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}
