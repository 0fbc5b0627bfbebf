//! Routing: the model name a client sends to a route of `[serve.routes]` or to
//! `PROVIDER/MODEL`, and that route to its failover chain, built once per name.
//! Spec: R14.3, R12.1.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use switchyard_api::config::RouteSettings;
use switchyard_api::providers::preset;
use switchyard_api::{
    ApiConfiguration, ChainEntry, ConfigError, Mode, ModeSettings, build_failover_chain,
};

use crate::glob::glob_matches;
use crate::refusal::{Kind, Refusal};

/// How many model names keep a built chain: names are the client's to choose.
const CACHE_LIMIT: usize = 256;

/// A model name resolved to its failover chain, the route's own entry first.
pub(crate) type Chain = Arc<[ChainEntry]>;

#[derive(Debug)]
pub(crate) enum RouteError {
    /// No route and no `PROVIDER/MODEL` of a known provider: a 404 listing the routes.
    Unknown(String),
    /// The route's first entry cannot be built, its key not set say.
    Build(ConfigError),
}

impl RouteError {
    pub(crate) fn refusal(self) -> Refusal {
        match self {
            Self::Unknown(message) => Refusal::new(404, Kind::NotFound, message),
            // The gateway's own set-up, not the provider's fault, and said so.
            Self::Build(error) => {
                let message = format!(
                    "This gateway is not set up for this route: {error} (in the gateway's environment or configuration file), then restart it."
                );
                Refusal::new(500, Kind::Server, message)
            }
        }
    }
}

pub(crate) struct Router {
    config: ApiConfiguration,
    cache: Mutex<HashMap<String, Chain>>,
}

impl Router {
    /// A router over `config`'s `[serve.routes]`, with the keys read when it was loaded.
    pub(crate) fn new(config: ApiConfiguration) -> Self {
        Self {
            config,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn config(&self) -> &ApiConfiguration {
        &self.config
    }

    /// The route names in order, globs as written.
    pub(crate) fn route_names(&self) -> impl Iterator<Item = &str> {
        self.config.serve.routes.keys().map(String::as_str)
    }

    pub(crate) fn chain(&self, model: &str) -> Result<Chain, RouteError> {
        let cache = || self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(chain) = cache().get(model) {
            return Ok(Arc::clone(chain));
        }
        let route = self.find(model).ok_or_else(|| self.unknown(model))?;
        let config = route_config(&self.config, &route);
        let chain: Chain = build_failover_chain(&config, Mode::Act)
            .map_err(RouteError::Build)?
            .into();
        let mut cache = cache();
        if cache.len() < CACHE_LIMIT {
            cache.insert(model.to_owned(), Arc::clone(&chain));
        }
        Ok(chain)
    }

    /// The route `model` names: an exact route name, else `PROVIDER/MODEL` of a provider the
    /// presets know, else the most specific matching glob.
    fn find(&self, model: &str) -> Option<RouteSettings> {
        let routes = &self.config.serve.routes;
        if let Some(route) = routes.get(model).filter(|_| !model.contains('*')) {
            return Some(route.clone());
        }
        if let Some((provider, id)) = model.split_once('/') {
            if preset(provider).is_some() && !id.is_empty() {
                return Some(RouteSettings {
                    provider: provider.to_owned(),
                    model: Some(id.to_owned()),
                    ..RouteSettings::default()
                });
            }
        }
        self.best_glob(model).map(|(_, route)| route.clone())
    }

    /// The glob route `model` goes to: the metrics' route label is the pattern, never the
    /// client's name.
    /// Spec: R14.9.
    pub(crate) fn glob_for(&self, model: &str) -> Option<&str> {
        let routes = &self.config.serve.routes;
        if routes.contains_key(model) && !model.contains('*') {
            return None;
        }
        if let Some((provider, id)) = model.split_once('/')
            && preset(provider).is_some()
            && !id.is_empty()
        {
            return None;
        }
        self.best_glob(model).map(|(name, _)| name.as_str())
    }

    /// The `reserve_usd` `model`'s route sets, if any.
    /// Spec: R14.7.
    pub(crate) fn reserve_usd(&self, model: &str) -> Option<f64> {
        let routes = &self.config.serve.routes;
        if let Some(route) = routes.get(model).filter(|_| !model.contains('*')) {
            return route.reserve_usd;
        }
        routes.get(self.glob_for(model)?)?.reserve_usd
    }

    /// The most specific glob route matching `model`: the longest, then the first by name.
    fn best_glob(&self, model: &str) -> Option<(&String, &RouteSettings)> {
        let routes = &self.config.serve.routes;
        let globs = routes.iter().filter(|(name, _)| name.contains('*'));
        let matching = globs.filter(|(name, _)| glob_matches(name, model));
        matching.fold(
            None,
            |best: Option<(&String, &RouteSettings)>, next| match best {
                Some(b) if b.0.len() >= next.0.len() => Some(b),
                _ => Some(next),
            },
        )
    }

    fn unknown(&self, model: &str) -> RouteError {
        let names: Vec<&str> = self.route_names().collect();
        let routes = if names.is_empty() {
            "no routes are configured".to_owned()
        } else {
            format!("the routes are {}", names.join(", "))
        };
        RouteError::Unknown(format!(
            "The model `{model}` is neither a route nor PROVIDER/MODEL with a known provider id \
             ({routes}; `switchyard models` lists the providers)."
        ))
    }
}

/// Every route's failover chain as the gateway builds it, in name order, or why it cannot be
/// built, for `switchyard limits`.
pub fn route_chains(
    config: &ApiConfiguration,
) -> Vec<(String, Result<Vec<ChainEntry>, ConfigError>)> {
    let routes = config.serve.routes.iter();
    routes
        .map(|(name, route)| {
            let chain = build_failover_chain(&route_config(config, route), Mode::Act);
            (name.clone(), chain)
        })
        .collect()
}

/// `config` with `route` as the act mode and the route's `base_url` in place of the
/// provider's.
pub(crate) fn route_config(config: &ApiConfiguration, route: &RouteSettings) -> ApiConfiguration {
    let mut config = config.clone();
    config.act = ModeSettings {
        provider: Some(route.provider.clone()),
        model_id: route.model.clone(),
        reasoning_effort: route.reasoning_effort.clone(),
        thinking_budget_tokens: route.thinking_budget_tokens,
        fallbacks: route.fallbacks.clone(),
        ..ModeSettings::default()
    };
    if let Some(url) = &route.base_url {
        let endpoints = &mut config.providers.endpoints;
        endpoints
            .entry(route.provider.clone())
            .or_default()
            .base_url = Some(url.clone());
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(text: &str) -> Router {
        let config = ApiConfiguration::from_toml(text, "t.toml", |_| Some("k".into())).unwrap();
        Router::new(config)
    }

    #[test]
    fn exact_names_win_over_globs_and_provider_ids_over_globs() {
        let r = router(
            "[serve.routes.\"claude-*\"]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n\
             [serve.routes.\"*\"]\nprovider = \"deepseek\"\n\
             [serve.routes.claude-exact]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\n",
        );
        let model = |m: &str| r.find(m).map(|route| (route.provider, route.model));
        let named = |p: &str, m: &str| Some((p.to_owned(), Some(m.to_owned())));
        assert_eq!(model("claude-exact"), named("anthropic", "claude-x"));
        assert_eq!(model("claude-sonnet-4-5"), named("openai", "gpt-4o"));
        assert_eq!(model("openai/gpt-5"), named("openai", "gpt-5"));
        assert_eq!(
            model("openrouter/openai/gpt-5"),
            named("openrouter", "openai/gpt-5")
        );
        assert_eq!(model("nope/gpt-5").map(|m| m.0), Some("deepseek".into()));
    }

    #[test]
    fn an_unknown_model_names_the_routes() {
        let r = router("[serve.routes.fast]\nprovider = \"openai\"\n");
        match r.chain("nope/x") {
            Err(RouteError::Unknown(m)) => assert!(m.contains("fast"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
