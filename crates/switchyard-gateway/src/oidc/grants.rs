//! What a user's groups grant: `[serve.oidc.groups."GROUP"]` applied to the groups their ID
//! token lists.
//! Spec: R14.11b.

use std::collections::BTreeMap;

use switchyard_api::config::GroupGrant;
use switchyard_core::store::Role;

/// The role, team, model globs and budget a user's groups add up to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grant {
    pub(crate) role: Role,
    pub(crate) team: Option<String>,
    /// Empty: every model.
    pub(crate) models: Vec<String>,
    pub(crate) budget: Option<String>,
    /// The mapped groups the user is in, in name order.
    pub(crate) groups: Vec<String>,
}

/// What `groups` grant under `table`, or `None` when no group of theirs is mapped. Several
/// groups give the highest role and every model any of them allows; the team and the budget
/// come from the first group that sets each, the groups of higher roles first, then by name.
pub(crate) fn grant(groups: &[String], table: &BTreeMap<String, GroupGrant>) -> Option<Grant> {
    let mut mine: Vec<(&String, &GroupGrant)> = table
        .iter()
        .filter(|(name, _)| groups.contains(name))
        .collect();
    // The sort is stable, so groups of one role stay in name order.
    mine.sort_by_key(|(_, g)| std::cmp::Reverse(Role::parse(&g.role).map_or(0, rank)));
    let role = (mine.iter())
        .filter_map(|(_, g)| Role::parse(&g.role))
        .max_by_key(|r| rank(*r))?;
    // A group that names no models allows them all, so the union is all.
    let models = if mine.iter().any(|(_, g)| g.models.is_empty()) {
        Vec::new()
    } else {
        let mut all: Vec<String> = mine.iter().flat_map(|(_, g)| g.models.clone()).collect();
        all.dedup();
        all
    };
    Some(Grant {
        role,
        team: mine.iter().find_map(|(_, g)| g.team.clone()),
        models,
        budget: mine.iter().find_map(|(_, g)| g.budget.clone()),
        groups: mine.iter().map(|(name, _)| (*name).clone()).collect(),
    })
}

/// How much a role may do, to pick the highest of several groups'.
fn rank(role: Role) -> u8 {
    match role {
        Role::Viewer => 0,
        Role::Member => 1,
        Role::Admin => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> BTreeMap<String, GroupGrant> {
        let g =
            |role: &str, team: Option<&str>, models: &[&str], budget: Option<&str>| GroupGrant {
                role: role.to_owned(),
                team: team.map(str::to_owned),
                models: models.iter().map(|m| (*m).to_owned()).collect(),
                budget: budget.map(str::to_owned),
            };
        BTreeMap::from([
            (
                "eng".to_owned(),
                g("member", Some("eng"), &["claude-*"], Some("5/day")),
            ),
            (
                "research".to_owned(),
                g("member", Some("research"), &["gpt-*"], None),
            ),
            ("auditors".to_owned(), g("viewer", None, &[], None)),
            (
                "platform".to_owned(),
                g("admin", None, &[], Some("100/month")),
            ),
        ])
    }

    fn of(groups: &[&str]) -> Option<Grant> {
        grant(
            &groups.iter().map(|g| (*g).to_owned()).collect::<Vec<_>>(),
            &table(),
        )
    }

    #[test]
    fn groups_map_to_the_highest_role_the_union_of_models_and_the_first_team_and_budget() {
        let eng = of(&["eng", "everyone"]).unwrap();
        assert_eq!(
            (eng.role, eng.team.as_deref(), eng.budget.as_deref()),
            (Role::Member, Some("eng"), Some("5/day"))
        );
        assert_eq!(eng.models, ["claude-*"]);
        let both = of(&["research", "eng"]).unwrap();
        assert_eq!((both.team.as_deref(), both.models.len()), (Some("eng"), 2));
        let admin = of(&["eng", "platform"]).unwrap();
        assert_eq!((admin.role, admin.models.len()), (Role::Admin, 0));
        // The admin group's budget, though `eng` comes first by name; `eng`'s team, as the
        // admin group sets none.
        assert_eq!(
            (admin.budget.as_deref(), admin.team.as_deref()),
            (Some("100/month"), Some("eng"))
        );
        assert_eq!(of(&["auditors"]).unwrap().role, Role::Viewer);
        assert_eq!(of(&["everyone", "Eng"]), None);
        assert_eq!(of(&[]), None);
    }
}
