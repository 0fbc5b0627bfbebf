//! Approving the model's tool calls on the terminal.
//! Spec: R11.2.

use std::io::{BufRead, IsTerminal, Write};

use switchyard_core::task::{BoxFuture, ToolApprover, ToolCallRequest};

/// Approves all tool calls with `--yes`, else asks on the terminal, else denies with a warning.
#[derive(Debug, Clone, Copy)]
pub struct TerminalApprover {
    pub yes: bool,
}

impl ToolApprover for TerminalApprover {
    fn approve<'a>(&'a self, call: &'a ToolCallRequest) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if self.yes {
                return true;
            }
            if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
                tracing::warn!(
                    "the tool call {} (MCP server \"{}\") was not run: there is no terminal to ask \
                     for approval; pass --yes or add \"{}\" to the server's autoApprove list",
                    call.tool,
                    call.server,
                    call.tool
                );
                return false;
            }
            let prompt = format!(
                "Run the tool {} of MCP server \"{}\" with {}? [y/N]: ",
                call.tool, call.server, call.arguments
            );
            tokio::task::spawn_blocking(move || ask(&prompt))
                .await
                .unwrap_or(false)
        })
    }
}

fn ask(prompt: &str) -> bool {
    // The stderr lock is released before waiting: a Ctrl-C meanwhile is reported on stderr.
    {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\n{prompt}");
        let _ = err.flush();
    }
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
