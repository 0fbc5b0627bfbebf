//! MCP failures in plain words.
//! Spec: R11.1, R11.2.

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

pub(super) fn spawn_error(
    command: &str,
    cwd: Option<&std::path::Path>,
    e: &std::io::Error,
) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => match cwd {
            Some(cwd) if !cwd.is_dir() => format!(
                "its working directory {} does not exist; fix \"cwd\" in the MCP settings",
                cwd.display()
            ),
            _ => format!(
                "the command \"{command}\" was not found; install it or fix \"command\" in the MCP \
                 settings"
            ),
        },
        std::io::ErrorKind::PermissionDenied => {
            format!("the command \"{command}\" cannot be run (permission denied)")
        }
        _ => format!("the command \"{command}\" could not be started: {e}"),
    }
}
pub(super) fn plain_init_error(e: &ClientInitializeError, stdio: bool) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) if stdio => {
            "the server process exited (or closed its output) during the MCP handshake".to_owned()
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection during the MCP handshake".to_owned()
        }
        ClientInitializeError::TransportError { .. } if stdio => {
            "the server process exited (or stopped reading) during the MCP handshake".to_owned()
        }
        ClientInitializeError::TransportError { error, .. } => {
            format!("could not reach the server: {}", innermost(error))
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("the server refused the MCP handshake: {}", data.message)
        }
        other => format!("the MCP handshake failed: {}", error_chain(other)),
    }
}

pub(super) fn plain_service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => data.message.to_string(),
        ServiceError::TransportClosed => "the connection to the server is closed".to_owned(),
        ServiceError::Timeout { timeout } => {
            format!("no answer within {} s", timeout.as_secs_f64())
        }
        other => error_chain(other),
    }
}

/// The deepest cause of an error without the SDK's type names.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &(dyn std::error::Error + 'static) = e;
    let mut source = e.source();
    while let Some(s) = source {
        let client = match s.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(r)) => Some(r),
            _ => s.downcast_ref::<reqwest::Error>(),
        };
        if let Some(r) = client {
            if r.is_connect() {
                let chain = error_chain(r).to_ascii_lowercase();
                if chain.contains("dns error") || chain.contains("failed to lookup address") {
                    return "its host name could not be resolved (check the url)".to_owned();
                }
                return "nothing answered at that address (is the server running?)".to_owned();
            }
            if r.is_timeout() {
                return "the connection timed out".to_owned();
            }
            if let Some(status) = r.status() {
                return format!("it answered HTTP {status}");
            }
            return error_chain(r);
        }
        last = s;
        source = s.source();
    }
    last.to_string()
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
