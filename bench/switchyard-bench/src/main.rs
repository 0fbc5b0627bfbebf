//! `switchyard-bench`: the Rust half of the benchmark in `bench/` (see bench/README.md).
//!
//! - `serve`: a loopback HTTP/1.1 server (127.0.0.1) that answers every POST under
//!   `/s/NAME/...` with the pre-generated stream `DIR/NAME.sse` as `text/event-stream`, in
//!   16 KiB HTTP chunks, as fast as the socket takes it. Thousands of connections at once.
//! - `consume`: consumes one stream through Switchyard's `ApiHandler` (built by
//!   `build_api_handler` from an `ApiConfiguration`, exactly as the CLI builds it), counting
//!   the chunks, and prints one JSON line; with `--streams N`, N streams at once in one process.
//!
//! Like the Node and Python clients, `consume` reports its own stream time, the CPU time the
//! stream took and its peak RSS (`VmHWM`); the driver (`bench/run.py`) also measures the whole
//! process from outside (`wait4`), the same way for every client.

mod consume;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "switchyard-bench",
    about = "Switchyard benchmark server and client"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serves `DIR/*.sse` on 127.0.0.1; prints `listening http://127.0.0.1:PORT` when ready.
    Serve {
        /// Folder holding the generated `NAME.sse` files.
        #[arg(long)]
        dir: PathBuf,
        /// Port to listen on (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Consumes a stream through Switchyard's ApiHandler and prints its counts as JSON.
    Consume {
        /// Provider id: `openai` (Chat Completions) or `anthropic` (Messages).
        #[arg(long)]
        provider: String,
        /// Base URL given to the provider, e.g. `http://127.0.0.1:PORT/s/openai_full/v1`.
        #[arg(long)]
        base_url: String,
        /// Model id sent in the request.
        #[arg(long)]
        model: String,
        /// Number of streams consumed at once in this process (1 = a single stream).
        #[arg(long, default_value_t = 1)]
        streams: usize,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Serve { dir, port } => server::serve(&dir, port),
        Command::Consume {
            provider,
            base_url,
            model,
            streams,
        } => consume::run(&consume::Target {
            provider,
            base_url,
            model,
            streams,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("switchyard-bench: {message}");
            ExitCode::FAILURE
        }
    }
}
