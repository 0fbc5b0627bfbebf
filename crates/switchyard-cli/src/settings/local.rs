//! The built-in local default: with no configuration file and no provider named, requests go to
//! the OpenAI-compatible server of `scripts/local-model.sh` with no key.

use switchyard_api::{ApiConfiguration, ModeSettings, ProviderEndpoint};

/// The model id the local server (`scripts/local-model.sh`) serves.
pub const LOCAL_MODEL_ID: &str = "smollm2-135m-instruct";

pub(super) const LOCAL_PROVIDER: &str = "openai";
pub const LOCAL_MODEL_PORT: u16 = 8089;

/// The local model server's base URL; `SWITCHYARD_LOCAL_MODEL_PORT` overrides the port.
pub fn local_model_base_url() -> String {
    let port = std::env::var("SWITCHYARD_LOCAL_MODEL_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(LOCAL_MODEL_PORT);
    format!("http://127.0.0.1:{port}/v1")
}

/// Says at once when nothing listens on the local server's port, with how to start it, instead
/// of retrying a refused connection for seconds; a slow server is the request's business.
pub async fn check_local_model_server() -> Result<(), String> {
    let url = local_model_base_url();
    let Some(host) = switchyard_api::providers::url_host(&url) else {
        return Ok(());
    };
    let connect = tokio::net::TcpStream::connect(host.as_str());
    match tokio::time::timeout(std::time::Duration::from_secs(2), connect).await {
        Ok(Ok(_)) | Err(_) => Ok(()),
        Ok(Err(e)) => Err(format!(
            "no local model server is listening at {url} ({e}), Switchyard's default when there is no configuration file; start one with `scripts/local-model.sh start` in a Switchyard checkout (or run scripts/quickstart.sh), or choose a provider, e.g. `switchyard task --provider anthropic \"…\"` with ANTHROPIC_API_KEY set"
        )),
    }
}

/// The built-in configuration used when there is no file.
///
/// Keys are read only when the user chose where requests go with `--base-url`: a user's
/// `OPENAI_API_KEY` must not go to whatever listens on the local port.
pub(super) fn built_in_local(
    env: impl Fn(&str) -> Option<String>,
    read_keys: bool,
) -> ApiConfiguration {
    let act = ModeSettings {
        provider: Some(LOCAL_PROVIDER.into()),
        // Its limits and $0 price are the catalogue's, in models/switchyard/openai.toml.
        model_id: Some(LOCAL_MODEL_ID.into()),
        ..ModeSettings::default()
    };
    let mut config = ApiConfiguration {
        plan: act.clone(),
        act,
        ..ApiConfiguration::default()
    };
    config.providers.endpoints.insert(
        LOCAL_PROVIDER.into(),
        ProviderEndpoint {
            base_url: Some(local_model_base_url()),
            ..ProviderEndpoint::default()
        },
    );
    if read_keys {
        config.read_keys(env);
    }
    config
}
