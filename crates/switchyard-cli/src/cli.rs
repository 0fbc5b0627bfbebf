//! Command-line arguments: every subcommand and flag of `switchyard`, whose doc comments are
//! its `--help` text.
//! Spec: R3.6, R12.1, R12.2, R13.1.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Switchyard: stream a task's answer from any LLM provider.
#[derive(Debug, Parser)]
#[command(name = "switchyard", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// More log lines on stderr: -v info, -vv debug, -vvv trace (`RUST_LOG` or
    /// `SWITCHYARD_LOG`, e.g. `switchyard=debug`, choose them finely).
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Set one configuration field for this run, as in config.toml: `-c act.model=gpt-4.1`,
    /// `-c providers.openai.base_url=http://127.0.0.1:8080/v1` (values are TOML, else text).
    #[arg(short = 'c', long = "set", global = true, value_name = "KEY=VALUE",
          value_parser = crate::overrides::parse)]
    pub overrides: Vec<crate::overrides::Override>,

    /// Configuration file (default: $SWITCHYARD_HOME/config.toml, else ~/.config/switchyard/config.toml).
    #[arg(long, global = true, value_name = "FILE", env = "SWITCHYARD_CONFIG")]
    pub config: Option<PathBuf>,

    /// Directory of the task database (default: $SWITCHYARD_HOME/data when SWITCHYARD_HOME is
    /// set, else ~/.local/share/switchyard).
    #[arg(long, global = true, value_name = "DIR", env = "SWITCHYARD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// Where tasks are kept: postgres://USER@HOST:PORT/DATABASE for a store shared by many
    /// machines, or sqlite:PATH (default: the configuration's `store`, else the SQLite file in
    /// the data directory).
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "SWITCHYARD_STORE",
        hide_env_values = true
    )]
    pub store: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a task: send PROMPT to the model and stream its answer; in a terminal, ask for a
    /// follow-up after each answer (an empty line, Ctrl-D or Ctrl-C ends the task).
    Task(TaskArgs),
    /// Continue a saved task, with PROMPT as the next message (or answer its last message).
    Resume(ResumeArgs),
    /// Show the failover entries of both modes (ready, or cooling down until when and why),
    /// the rate-limit windows and the spend caps, as every process on the task store sees them.
    Limits {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// List the saved tasks, newest first: id, date, model, tokens, cost and first prompt.
    Tasks {
        /// One JSON object per task.
        #[arg(long)]
        json: bool,
        /// Show at most N tasks (default 20 as text, all with --json; 0 shows all).
        #[arg(long, short = 'n', value_name = "N")]
        limit: Option<usize>,
    },
    /// List the requests `switchyard serve` relayed, newest first: time, request id, route,
    /// the provider and model that answered, tokens, cost, first-token time, duration, status.
    Requests {
        /// One JSON object per request.
        #[arg(long)]
        json: bool,
        /// Show at most N requests (default 20 as text, all with --json; 0 shows all).
        #[arg(long, short = 'n', value_name = "N")]
        limit: Option<usize>,
    },
    /// Sum the requests `switchyard serve` recorded by client key, team, user, model or UTC
    /// day: requests, tokens, cost.
    Usage {
        /// How to group: key, team, user, model or day.
        #[arg(long, value_enum, default_value = "key")]
        by: UsageGroup,
        /// Only requests from this UTC date on (YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// One JSON object per group.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script, e.g. `switchyard completions bash >
    /// ~/.local/share/bash-completion/completions/switchyard`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print a task's conversation as JSON (Anthropic message shape, like Cline's
    /// api_conversation_history.json).
    Export {
        /// The task id (see `switchyard tasks`).
        task_id: String,
    },
    /// Import a task directory written by Cline (api_conversation_history.json,
    /// ui_messages.json, context_history.json, task_metadata.json).
    Import {
        /// The task directory, e.g. ~/.cline/data/tasks/1764471234567.
        dir: PathBuf,
    },
    /// List the providers and their model catalogue (context windows, max output, prices,
    /// where each entry came from; your own in models.toml in the configuration directory).
    Models {
        /// Only this provider.
        #[arg(long, value_name = "ID")]
        provider: Option<String>,
        /// One JSON object per provider (and region) per line, with every model's fields.
        #[arg(long)]
        json: bool,
    },
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// MCP servers (from the `mcpServers` settings file).
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Serve the OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini APIs
    /// on this machine, forwarding through Switchyard's layer to the providers of `[serve.routes]`
    /// or a model named PROVIDER/MODEL (Ctrl-C or SIGTERM stops it after the streams in flight).
    Serve(ServeArgs),
    /// Client keys for `switchyard serve` (each shown once; the store keeps a hash): make,
    /// list, show, update, revoke or rotate them.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Teams of client keys, each with a budget its keys share.
    Teams {
        #[command(subcommand)]
        command: TeamsCommand,
    },
    /// The people who signed in to the dashboard through the identity provider: their roles,
    /// budgets over every key they own, and whether they may use their keys.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// The audit log: every change to keys and teams and every dashboard sign-in, oldest
    /// first, with who, when, from where and what changed (never a secret).
    Audit {
        /// Only entries from this UTC date on (YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// One JSON object per entry.
        #[arg(long)]
        json: bool,
    },
    /// The task store: bring its schema up to date, copy tasks between stores, or check the
    /// budgets' running totals.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
}

/// How `switchyard usage` groups.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum UsageGroup {
    /// By client key.
    Key,
    /// By team.
    Team,
    /// By the user who owns the key.
    User,
    /// By the provider and model that answered.
    Model,
    /// By UTC day.
    Day,
}

impl UsageGroup {
    pub fn by(self) -> switchyard_core::store::UsageBy {
        use switchyard_core::store::UsageBy;
        match self {
            Self::Key => UsageBy::Key,
            Self::Team => UsageBy::Team,
            Self::User => UsageBy::User,
            Self::Model => UsageBy::Model,
            Self::Day => UsageBy::Day,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key and print it (only now; the store keeps its hash).
    Create(NewKeyArgs),
    /// List the keys: id, prefix, name, team, budget and what it used, models, state.
    List {
        /// One JSON object per key.
        #[arg(long)]
        json: bool,
    },
    /// Show one key (by id or prefix).
    Show {
        /// The key's id or display prefix.
        key: String,
        /// As a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key (by id or prefix): gateways refuse it within a second.
    Revoke {
        /// The key's id or display prefix.
        key: String,
    },
    /// Give a key a new secret (printed once); the old one stops working.
    Rotate {
        /// The key's id or display prefix.
        key: String,
        /// Print `{key, id, prefix}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change a key's limits, team or name (by id or prefix): every gateway on the store
    /// applies it within a second. `none` removes a limit.
    Update(KeyUpdateArgs),
}

/// `switchyard keys update`'s flags; each left out keeps its value.
#[derive(Debug, Args)]
pub struct KeyUpdateArgs {
    /// The key's id or display prefix.
    pub key: String,
    /// Its budget in USD, per day, per month or in total (`5/day`), or `none`.
    #[arg(long, value_name = "USD[/day|/month]|none")]
    pub budget: Option<String>,
    /// The model names it may use, as globs separated by commas, or `*` for every model.
    #[arg(long, value_name = "GLOB,…|*")]
    pub models: Option<String>,
    /// Requests per minute, or `none`.
    #[arg(long, value_name = "N|none")]
    pub rpm: Option<String>,
    /// Input tokens per minute, or `none`.
    #[arg(long, value_name = "N|none")]
    pub tpm: Option<String>,
    /// Requests in flight at once, or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_parallel: Option<String>,
    /// When it stops working (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC), or `none`.
    #[arg(long, value_name = "DATE|none")]
    pub expires: Option<String>,
    /// Its team, or `none`.
    #[arg(long, value_name = "NAME|none")]
    pub team: Option<String>,
    /// The user whose budget its spend counts in from now on (`switchyard users list`), or
    /// `none`.
    #[arg(long, value_name = "USER_ID|none")]
    pub owner: Option<String>,
    /// Who or what it is for.
    #[arg(long)]
    pub name: Option<String>,
}

/// `switchyard keys create`'s flags.
#[derive(Debug, Args)]
pub struct NewKeyArgs {
    /// Who or what the key is for.
    #[arg(long)]
    pub name: String,
    /// The team it belongs to (made with `switchyard teams create`); it shares its budget.
    #[arg(long)]
    pub team: Option<String>,
    /// The model names it may use, as globs separated by commas (`claude-*,gpt-4.1`;
    /// default: every model).
    #[arg(long, value_name = "GLOB,…")]
    pub models: Vec<String>,
    /// Its budget in USD, per day, per month or in total (`5/day`, `100/month`, `20`).
    #[arg(long, value_name = "USD[/day|/month]")]
    pub budget: Option<String>,
    /// Requests per minute, shared by every gateway on the store.
    #[arg(long, value_name = "N")]
    pub rpm: Option<u64>,
    /// Input tokens per minute (Switchyard's estimate of each request).
    #[arg(long, value_name = "N")]
    pub tpm: Option<u64>,
    /// Requests in flight at once.
    #[arg(long, value_name = "N")]
    pub max_parallel: Option<u64>,
    /// When it stops working: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC).
    #[arg(long, value_name = "DATE")]
    pub expires: Option<String>,
    /// A key for /metrics and the dashboard's sign-in, never for requests to models.
    #[arg(long)]
    pub admin: bool,
    /// The user who owns it (`switchyard users list`): their budget counts it too, and it stops
    /// working when they are disabled.
    #[arg(long, value_name = "USER_ID")]
    pub owner: Option<String>,
    /// Print `{key, id, prefix}` as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// List the users: email, role, team, budget and what their keys used, keys, state.
    List {
        /// One JSON object per user.
        #[arg(long)]
        json: bool,
    },
    /// Show one user.
    Show {
        /// The user's id (`usr_…`).
        id: String,
        /// As a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Change a user's budget or role, or disable or enable them: every gateway on the store
    /// applies it within a second. It lasts until the user's next sign-in, which sets budget
    /// and role from their groups again and enables them; disable someone in the identity
    /// provider to keep them out.
    Update(UserUpdateArgs),
}

/// `switchyard users update`'s flags; each left out keeps its value.
#[derive(Debug, Args)]
pub struct UserUpdateArgs {
    /// The user's id (`usr_…`).
    pub id: String,
    /// Their budget over every key they own, in USD per day, per month or in total, or `none`.
    #[arg(long, value_name = "USD[/day|/month]|none")]
    pub budget: Option<String>,
    /// admin, member or viewer.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Refuse their keys (403) on every gateway within a second.
    #[arg(long, conflicts_with = "enable")]
    pub disable: bool,
    /// Let their keys work again.
    #[arg(long)]
    pub enable: bool,
}

#[derive(Debug, Subcommand)]
pub enum TeamsCommand {
    /// Make a team.
    Create {
        /// Its name.
        name: String,
        /// Its budget in USD, per day, per month or in total (`100/month`).
        #[arg(long, value_name = "USD[/day|/month]")]
        budget: Option<String>,
    },
    /// List the teams: budget, what they used in its window, their keys.
    List {
        /// One JSON object per team.
        #[arg(long)]
        json: bool,
    },
    /// Show one team.
    Show {
        /// Its name.
        name: String,
        /// As a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Change a team's budget: every gateway on the store applies it within a second.
    Update {
        /// Its name.
        name: String,
        /// Its budget in USD, per day, per month or in total (`100/month`), or `none`.
        #[arg(long, value_name = "USD[/day|/month]|none")]
        budget: String,
    },
}

/// `switchyard serve`'s flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on, HOST:PORT (default: the configuration's `serve.listen`, else
    /// 127.0.0.1:4141; port 0 picks a free one). Loopback only unless the store holds client
    /// keys (`switchyard keys create`), which every request must then present.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Serve without client keys even when the store holds some: loopback addresses only.
    #[arg(long)]
    pub no_auth: bool,
    /// The reservation (USD) for a request to a model whose prices are unknown, held against
    /// the key's budget until its cost is known (default 0.05).
    #[arg(long, value_name = "USD")]
    pub reserve_usd: Option<f64>,
    /// How long a process's budget slices last unrenewed, and a per-request reservation counts
    /// when nothing settles it (its process died), in seconds (defaults 15 and 1800).
    #[arg(long, value_name = "SECONDS")]
    pub hold_lease: Option<u64>,
    /// Reload the configuration on SIGHUP only, not also when its file changes.
    #[arg(long)]
    pub no_watch: bool,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create the store's tables, or bring an older schema up to date (every command does it
    /// on first use; this does only that, and says which version it found).
    Migrate,
    /// Copy every task (history, events, context edits, totals) from one store to another;
    /// tasks already in the target are left as they are, so a copy can be run again.
    Copy {
        /// The store to read: sqlite:PATH (a switchyard.db, or the data directory holding it)
        /// or postgres://….
        #[arg(long, value_name = "STORE")]
        from: String,
        /// The store to write (default: the store in effect, see --store).
        #[arg(long, value_name = "STORE")]
        to: Option<String>,
    },
    /// Recompute the budgets' running totals from the ledger and report any difference
    /// (exit 1 when one is left).
    Check {
        /// Rewrite the totals that differ, in one transaction.
        #[arg(long)]
        repair: bool,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect to every configured MCP server and show its state, its tools and its errors.
    List(McpListArgs),
}

#[derive(Debug, Args)]
pub struct McpListArgs {
    /// MCP settings file (default: mcp_settings.json in the configuration directory).
    #[arg(long, value_name = "FILE", env = "SWITCHYARD_MCP_CONFIG")]
    pub mcp_config: Option<PathBuf>,
    /// Print one JSON object per server instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the resolved plan and act provider and model (keys redacted) and every problem found.
    Check(SelectionArgs),
}

/// Choices that override the configuration file for one run.
#[derive(Debug, Clone, Default, Args)]
pub struct SelectionArgs {
    /// Provider id (anthropic, openai, openrouter, deepseek, …; see `switchyard models`).
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// Model id.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Base URL of the provider's API, e.g. http://127.0.0.1:8089/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    /// What to ask the model; `-` reads it from standard input, as does piped input with no
    /// prompt. Piped text given with a prompt is added before it as context.
    pub prompt: Option<String>,
    #[command(flatten)]
    pub options: TaskOptions,
}

/// The options `switchyard task` and `switchyard resume` share.
#[derive(Debug, Args)]
pub struct TaskOptions {
    /// Task mode; each mode has its own provider and model (a resumed task keeps its own
    /// unless this is given).
    #[arg(long, value_parser = ["plan", "act"])]
    pub mode: Option<String>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Print one JSON object per line on stdout instead of text (see docs/tasks.md, "JSON output").
    #[arg(long)]
    pub json: bool,
    /// Do not show reasoning (thinking) text.
    #[arg(long, short)]
    pub quiet: bool,
    /// Read the prompt from FILE (`-`: standard input); any size the model accepts.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Replace the built-in system prompt with this text.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// What to do when automatic retries are used up: `fail` (exit non-zero) or `retry`
    /// (three more automatic retries; auth, quota, spend-limit and entitlement errors still
    /// fail). Default: ask in a terminal, else `fail`.
    #[arg(long, value_name = "POLICY", value_parser = ["fail", "retry"])]
    pub on_failure: Option<String>,
    /// Automatic retries of a failed request before `--on-failure` applies; waits 2 s, 4 s,
    /// 8 s, … (longer when the provider asks).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// MCP settings file in the common `mcpServers` shape (Cline's `cline_mcp_settings.json`
    /// works as is). Default: mcp_settings.json in the configuration directory.
    #[arg(long, value_name = "FILE", env = "SWITCHYARD_MCP_CONFIG")]
    pub mcp_config: Option<PathBuf>,
    /// Let `resume` send the task to a different host than the one it was held with (a
    /// conversation with a local model must not go to a cloud provider by surprise).
    #[arg(long)]
    pub allow_new_host: bool,
    /// Run the model's MCP tool calls without asking (tools in a server's `autoApprove` list
    /// never ask).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// A failover entry, `PROVIDER:MODEL` or `PROVIDER:MODEL@BASE_URL` (e.g.
    /// `openai:qwen2.5@http://127.0.0.1:8080/v1`), tried in order when the mode's provider
    /// fails before answering (rate limit, overload, quota, server, timeout, network, auth).
    /// Repeatable; replaces the mode's `fallbacks` from the configuration file.
    #[arg(long, value_name = "PROVIDER:MODEL[@URL]", value_parser = parse_fallback)]
    pub fallback: Vec<switchyard_api::FallbackSettings>,
    /// Stop the task (exit code 3) before a request that would take its cost to USD; overrides
    /// `max_cost_usd` under [limits].
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost: Option<f64>,
    /// The prompt as typed when piped text joined it, which `switchyard tasks` lists; no flag.
    #[arg(skip)]
    pub title: Option<String>,
}

/// `--fallback PROVIDER:MODEL`.
fn parse_fallback(text: &str) -> Result<switchyard_api::FallbackSettings, String> {
    switchyard_api::FallbackSettings::parse_flag(text).ok_or_else(|| {
        format!("`{text}` is not PROVIDER:MODEL or PROVIDER:MODEL@BASE_URL; write e.g. --fallback openrouter:anthropic/claude-sonnet-4.5 or --fallback openai:MODEL@http://127.0.0.1:8080/v1")
    })
}

/// `--max-cost USD`: a positive number of dollars.
fn parse_usd(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(format!(
            "`{text}` is not a positive amount of US dollars; write e.g. --max-cost 0.50"
        )),
    }
}

/// `switchyard resume TASK_ID [PROMPT]` or `switchyard resume --last [PROMPT]`: the task
/// options of `switchyard task`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The task id (see `switchyard tasks`); with --last, the next message instead.
    #[arg(value_name = "TASK_ID")]
    pub task_id: Option<String>,
    /// The next message (`-`: standard input); without it, an unanswered last message is
    /// answered.
    pub prompt: Option<String>,
    /// Continue the task used most recently (no id needed).
    #[arg(long)]
    pub last: bool,
    /// The provider and model default to the task's.
    #[command(flatten)]
    pub options: TaskOptions,
}
