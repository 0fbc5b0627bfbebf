//! The `[serve.oidc]` section: the OpenID provider people sign in to the dashboard with, and
//! what each of its groups grants.
//! Spec: R14.11b.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// How long a user's keys keep working after their last sign-in, when the file says nothing.
pub const DEFAULT_MEMBERSHIP_HOURS: u64 = 168;

/// The dashboard's single sign-on through an OpenID provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcSettings {
    /// The issuer URL, exactly as the provider's discovery document and ID tokens name it.
    pub issuer: String,
    pub client_id: String,
    /// The environment variable holding the client secret; none for a public client.
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The scopes asked for besides `openid`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The ID token claim that lists the user's groups.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// The gateway's public URL as browsers reach it; the provider sends them back to
    /// `{redirect_base}/ui/oidc/callback`.
    pub redirect_base: String,
    /// Hours a user's keys keep working after their last sign-in.
    #[serde(default = "default_membership_hours")]
    pub membership_hours: u64,
    /// `[serve.oidc.groups."GROUP"]`: what membership of each group grants.
    #[serde(default)]
    pub groups: BTreeMap<String, GroupGrant>,
}

/// What one group grants its members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupGrant {
    /// `admin`, `member` or `viewer`.
    pub role: String,
    #[serde(default)]
    pub team: Option<String>,
    /// Model globs a member's keys may use; empty: every model.
    #[serde(default)]
    pub models: Vec<String>,
    /// The user's own budget, as `USD`, `USD/day` or `USD/month`.
    #[serde(default)]
    pub budget: Option<String>,
}

fn default_scopes() -> Vec<String> {
    vec!["email".to_owned(), "profile".to_owned()]
}

fn default_groups_claim() -> String {
    "groups".to_owned()
}

fn default_membership_hours() -> u64 {
    DEFAULT_MEMBERSHIP_HOURS
}

impl OidcSettings {
    /// The URL the provider sends a browser back to.
    pub fn redirect_url(&self) -> String {
        format!(
            "{}/ui/oidc/callback",
            self.redirect_base.trim_end_matches('/')
        )
    }

    /// [`ConfigError::Limit`] for a setting that cannot work.
    pub(super) fn check(&self, file: &str) -> Result<(), ConfigError> {
        let error = |setting: &str, value: &str, what: &str| ConfigError::Limit {
            file: file.to_owned(),
            setting: format!("[serve.oidc] {setting}"),
            value: format!("{value:?}"),
            what: what.to_owned(),
        };
        for (name, url) in [
            ("issuer", &self.issuer),
            ("redirect_base", &self.redirect_base),
        ] {
            if !web_url(url) {
                return Err(error(
                    name,
                    url,
                    "write an https:// URL (http:// only for localhost or 127.0.0.1)",
                ));
            }
        }
        if self.client_id.trim().is_empty() {
            return Err(error(
                "client_id",
                &self.client_id,
                "write the client id the provider gave the gateway",
            ));
        }
        if self.membership_hours == 0 {
            return Err(error(
                "membership_hours",
                "0",
                "write at least 1, or leave it out for 168",
            ));
        }
        if self.groups_claim.trim().is_empty() {
            return Err(error(
                "groups_claim",
                "",
                "name the ID token claim that lists groups, e.g. groups",
            ));
        }
        for (group, grant) in &self.groups {
            if !matches!(grant.role.as_str(), "admin" | "member" | "viewer") {
                return Err(ConfigError::Limit {
                    file: file.to_owned(),
                    setting: format!("[serve.oidc.groups.\"{group}\"] role"),
                    value: format!("{:?}", grant.role),
                    what: "write admin, member or viewer".to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// Whether `url` is an absolute https URL, or http to this machine.
fn web_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    match scheme {
        "https" => !name.is_empty(),
        "http" => matches!(name, "localhost" | "127.0.0.1" | "[::1]"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::ApiConfiguration;

    const FILE: &str = "[serve.oidc]\nissuer = \"https://login.example.com/realms/eng\"\n\
        client_id = \"switchyard\"\nclient_secret_env = \"SSO_SECRET\"\n\
        redirect_base = \"https://gw.example.com/\"\n\
        [serve.oidc.groups.\"eng\"]\nrole = \"member\"\nteam = \"eng\"\nmodels = [\"claude-*\"]\nbudget = \"5/day\"\n";

    #[test]
    fn the_oidc_section_is_read_with_its_defaults_and_its_secret_from_the_environment() {
        let env = |k: &str| (k == "SSO_SECRET").then(|| "s3cret-value".to_owned());
        let config = ApiConfiguration::from_toml(FILE, "c.toml", env).unwrap();
        let oidc = config.serve.oidc.as_ref().unwrap();
        assert_eq!(
            oidc.redirect_url(),
            "https://gw.example.com/ui/oidc/callback"
        );
        assert_eq!(
            (oidc.membership_hours, oidc.groups_claim.as_str()),
            (168, "groups")
        );
        assert_eq!(oidc.scopes, ["email", "profile"]);
        assert_eq!(oidc.groups["eng"].budget.as_deref(), Some("5/day"));
        assert_eq!(
            config.providers.api_keys["SSO_SECRET"].expose(),
            "s3cret-value"
        );
        assert!(!format!("{config:?}").contains("s3cret-value"));
    }

    #[test]
    fn an_oidc_setting_that_cannot_work_is_refused_by_name() {
        for (from, to, named) in [
            (
                "https://login.example.com/realms/eng",
                "http://login.example.com",
                "issuer",
            ),
            ("role = \"member\"", "role = \"owner\"", "role"),
            (
                "client_id = \"switchyard\"",
                "client_id = \" \"",
                "client_id",
            ),
            (
                "redirect_base = \"https://gw.example.com/\"",
                "redirect_base = \"gw\"",
                "redirect_base",
            ),
        ] {
            let text = FILE.replace(from, to);
            let e = ApiConfiguration::from_toml(&text, "c.toml", |_| None).unwrap_err();
            assert!(e.to_string().contains(named), "{e}");
        }
        let local = FILE.replace(
            "https://login.example.com/realms/eng",
            "http://127.0.0.1:9/x",
        );
        assert!(ApiConfiguration::from_toml(&local, "c.toml", |_| None).is_ok());
        let zero = FILE.replace(
            "[serve.oidc.groups",
            "membership_hours = 0\n[serve.oidc.groups",
        );
        let e = ApiConfiguration::from_toml(&zero, "c.toml", |_| None).unwrap_err();
        assert!(e.to_string().contains("membership_hours"), "{e}");
    }
}
