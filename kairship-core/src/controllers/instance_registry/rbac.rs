//! Per-instance access control on the host cluster: the ClusterRoles
//! `kairship:instance:<name>:admin|edit|view` and the ClusterRoleBindings that grant them.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::instance::{GROUP, INSTANCE_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, ROLE_LABEL};
use crate::naming::{NAME_PREFIX, hash_parts, slugify};

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// Resource the roles grant access to.
pub const INSTANCES_RESOURCE: &str = "instances";
/// Subresource that carries every action on objects inside an instance: REST calls and native
/// Kubernetes requests through the proxy alike ([`crate::access::InstanceResource::Proxy`]).
pub const PROXY_SUBRESOURCE: &str = "instances/proxy";
/// Annotation on a binding with the exact subject kind.
pub const SUBJECT_KIND_ANNOTATION: &str = "kairship.io/subject-kind";
/// Annotation on a binding with the exact subject name (binding names are slugged and hashed).
pub const SUBJECT_NAME_ANNOTATION: &str = "kairship.io/subject-name";
/// Longest binding name produced (a DNS-1123 label).
pub const MAX_BINDING_NAME_LEN: usize = 63;
/// Hex characters of the hash suffix of a binding name.
const BINDING_HASH_LEN: usize = 10;

const READ_VERBS: [&str; 3] = ["get", "list", "watch"];
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// A role a subject can hold on one instance.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum InstanceRole {
    /// Everything `edit` may do, plus deleting the instance.
    Admin,
    /// Read and write the instance's resources; update the instance.
    Edit,
    /// Read only.
    View,
}

impl InstanceRole {
    /// All roles, most powerful first.
    pub const ALL: [InstanceRole; 3] =
        [InstanceRole::Admin, InstanceRole::Edit, InstanceRole::View];

    /// The role's name in object names and labels.
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceRole::Admin => "admin",
            InstanceRole::Edit => "edit",
            InstanceRole::View => "view",
        }
    }

    /// Verbs granted on the `instances` resource (restricted to the instance's name).
    pub fn instance_verbs(self) -> Vec<&'static str> {
        let mut verbs = READ_VERBS.to_vec();
        match self {
            InstanceRole::View => {}
            InstanceRole::Edit => verbs.extend(["update", "patch"]),
            InstanceRole::Admin => verbs.extend(["update", "patch", "delete"]),
        }
        verbs
    }

    /// Verbs granted on `instances/proxy`, i.e. on the instance's own Kubernetes API.
    pub fn proxy_verbs(self) -> Vec<&'static str> {
        let mut verbs = READ_VERBS.to_vec();
        if self != InstanceRole::View {
            verbs.extend(WRITE_VERBS);
        }
        verbs
    }
}

impl std::fmt::Display for InstanceRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kind of an RBAC subject an external IAM binds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    /// A user name as the authenticator reports it.
    User,
    /// A group name.
    Group,
}

impl SubjectKind {
    /// The RBAC `Subject.kind` value.
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectKind::User => "User",
            SubjectKind::Group => "Group",
        }
    }
}

/// Name of the ClusterRole of `role` on `instance`: `kairship:instance:<name>:<role>`.
pub fn cluster_role_name(instance: &str, role: InstanceRole) -> String {
    format!("{NAME_PREFIX}:instance:{instance}:{}", role.as_str())
}

fn owned_labels(instance: &str, role: InstanceRole) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (INSTANCE_LABEL.to_owned(), instance.to_owned()),
        (ROLE_LABEL.to_owned(), role.as_str().to_owned()),
    ])
}

fn rule(resource: &str, instance: &str, verbs: Vec<&str>) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![GROUP.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        resource_names: Some(vec![instance.to_owned()]),
        verbs: verbs.into_iter().map(str::to_owned).collect(),
        non_resource_urls: None,
    }
}

/// The ClusterRole granting `role` on `instance`.
pub fn instance_cluster_role(instance: &str, role: InstanceRole) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(cluster_role_name(instance, role)),
            labels: Some(owned_labels(instance, role)),
            ..ObjectMeta::default()
        },
        rules: Some(vec![
            rule(INSTANCES_RESOURCE, instance, role.instance_verbs()),
            rule(PROXY_SUBRESOURCE, instance, role.proxy_verbs()),
        ]),
        aggregation_rule: None,
    }
}

/// The three ClusterRoles (admin, edit, view) of an instance.
pub fn instance_cluster_roles(instance_name: &str) -> Vec<ClusterRole> {
    InstanceRole::ALL
        .into_iter()
        .map(|role| instance_cluster_role(instance_name, role))
        .collect()
}

/// Deterministic name, a DNS-1123 label, of the binding of `subject_kind/subject_name` to
/// `role` on `instance`: `kairship-<instance>-<role>-<user|group>-<subject slug>` cut to fit,
/// then `-<10 hex>`.
///
/// The hash suffix (SHA-256 of the exact inputs) is always present: slugging is lossy
/// (`Alice` and `alice` share a slug), instance names contain `-`, and long names are cut,
/// so without it two different bindings could share a name. The whole name is at most 63
/// characters.
pub fn binding_name(
    instance: &str,
    role: InstanceRole,
    subject_kind: SubjectKind,
    subject_name: &str,
) -> String {
    let hash = hash_parts(&[instance, role.as_str(), subject_kind.as_str(), subject_name]);
    let kind = subject_kind.as_str().to_ascii_lowercase();
    let mut readable = format!(
        "{NAME_PREFIX}-{}-{}-{kind}-{}",
        slugify(instance),
        role.as_str(),
        slugify(subject_name)
    );
    readable.truncate(MAX_BINDING_NAME_LEN - 1 - BINDING_HASH_LEN);
    let readable = readable.trim_end_matches('-');
    format!("{readable}-{}", &hash[..BINDING_HASH_LEN])
}

/// The ClusterRoleBinding granting `role` on `instance` to a subject.
pub fn cluster_role_binding(
    instance: &str,
    role: InstanceRole,
    subject_kind: SubjectKind,
    subject_name: &str,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(binding_name(instance, role, subject_kind, subject_name)),
            labels: Some(owned_labels(instance, role)),
            annotations: Some(BTreeMap::from([
                (
                    SUBJECT_KIND_ANNOTATION.to_owned(),
                    subject_kind.as_str().to_owned(),
                ),
                (SUBJECT_NAME_ANNOTATION.to_owned(), subject_name.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: RBAC_GROUP.to_owned(),
            kind: "ClusterRole".to_owned(),
            name: cluster_role_name(instance, role),
        },
        subjects: Some(vec![Subject {
            api_group: Some(RBAC_GROUP.to_owned()),
            kind: subject_kind.as_str().to_owned(),
            name: subject_name.to_owned(),
            namespace: None,
        }]),
    }
}

/// Label selector (`key=value,...`) matching every ClusterRole and ClusterRoleBinding
/// Kairship created for `instance`.
pub fn owned_by_instance_selector(instance: &str) -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE},{INSTANCE_LABEL}={instance}")
}

/// Names of the ClusterRoles of `instance`: the three it always has, plus any stored ClusterRole
/// labelled with it (`stored`), so that cleanup works from what exists, not from memory.
pub fn instance_role_names(
    instance: &str,
    stored: impl IntoIterator<Item = String>,
) -> BTreeSet<String> {
    InstanceRole::ALL
        .iter()
        .map(|role| cluster_role_name(instance, *role))
        .chain(stored)
        .collect()
}

/// Whether a binding's `roleRef` names one of the ClusterRoles `roles`. Such a binding would
/// grant the role again to a re-created instance of the same name, so it goes with the instance.
pub fn refers_to_cluster_role(role_ref: &RoleRef, roles: &BTreeSet<String>) -> bool {
    role_ref.kind == "ClusterRole"
        // v1 requires the RBAC group; an empty one is what old clients stored.
        && (role_ref.api_group == RBAC_GROUP || role_ref.api_group.is_empty())
        && roles.contains(&role_ref.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verbs_of(role: &ClusterRole, resource: &str) -> Vec<String> {
        role.rules
            .as_ref()
            .unwrap()
            .iter()
            .find(|r| r.resources.as_ref().unwrap().iter().any(|x| x == resource))
            .unwrap()
            .verbs
            .clone()
    }

    #[test]
    fn three_roles_with_names_labels_and_resource_names() {
        let roles = instance_cluster_roles("prod");
        let names: Vec<_> = roles
            .iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "kairship:instance:prod:admin",
                "kairship:instance:prod:edit",
                "kairship:instance:prod:view"
            ]
        );
        for role in &roles {
            let labels = role.metadata.labels.as_ref().unwrap();
            assert_eq!(labels[INSTANCE_LABEL], "prod");
            assert_eq!(labels[MANAGED_BY_LABEL], "kairship");
            for rule in role.rules.as_ref().unwrap() {
                assert_eq!(
                    rule.api_groups.as_deref(),
                    Some(&["kairship.io".to_owned()][..])
                );
                assert_eq!(
                    rule.resource_names.as_deref(),
                    Some(&["prod".to_owned()][..])
                );
            }
        }
    }

    #[test]
    fn roles_name_what_the_api_server_checks() {
        use crate::access::InstanceResource;
        assert_eq!(InstanceResource::Instances.as_str(), INSTANCES_RESOURCE);
        assert_eq!(InstanceResource::Proxy.as_str(), PROXY_SUBRESOURCE);
    }

    #[test]
    fn verbs_per_role() {
        let cases: &[(InstanceRole, &str, &[&str], &[&str])] = &[
            (
                InstanceRole::View,
                INSTANCES_RESOURCE,
                &["get", "list", "watch"],
                &["update", "delete"],
            ),
            (
                InstanceRole::View,
                PROXY_SUBRESOURCE,
                &["get", "list", "watch"],
                &["create", "patch", "delete"],
            ),
            (
                InstanceRole::Edit,
                INSTANCES_RESOURCE,
                &["get", "update", "patch"],
                &["delete"],
            ),
            (
                InstanceRole::Edit,
                PROXY_SUBRESOURCE,
                &["get", "create", "update", "delete"],
                &[],
            ),
            (
                InstanceRole::Admin,
                INSTANCES_RESOURCE,
                &["get", "update", "delete"],
                &["create"],
            ),
            (
                InstanceRole::Admin,
                PROXY_SUBRESOURCE,
                &["watch", "create", "deletecollection"],
                &[],
            ),
        ];
        for (role, resource, granted, denied) in cases {
            let cr = instance_cluster_role("prod", *role);
            let verbs = verbs_of(&cr, resource);
            for v in *granted {
                assert!(
                    verbs.iter().any(|x| x == v),
                    "{role} should grant {v} on {resource}"
                );
            }
            for v in *denied {
                assert!(
                    !verbs.iter().any(|x| x == v),
                    "{role} must not grant {v} on {resource}"
                );
            }
        }
    }

    fn is_dns_label(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-')
    }

    #[test]
    fn binding_names_are_deterministic_dns_safe_and_distinct() {
        let a = binding_name("prod", InstanceRole::Admin, SubjectKind::User, "alice");
        assert_eq!(
            a,
            binding_name("prod", InstanceRole::Admin, SubjectKind::User, "alice")
        );
        assert!(a.starts_with("kairship-prod-admin-user-alice-"), "{a}");
        assert_eq!(a.len(), "kairship-prod-admin-user-alice-".len() + 10);
        let variants = [
            binding_name("prod", InstanceRole::Admin, SubjectKind::User, "Alice"),
            binding_name("prod", InstanceRole::Admin, SubjectKind::Group, "alice"),
            binding_name("prod", InstanceRole::View, SubjectKind::User, "alice"),
            binding_name(
                "prod-admin-user",
                InstanceRole::Admin,
                SubjectKind::User,
                "alice",
            ),
            // Same readable prefix as the previous one through a different split.
            binding_name("prod", InstanceRole::Admin, SubjectKind::User, "user-alice"),
        ];
        for v in &variants {
            assert_ne!(&a, v);
        }
        let long_subject = format!("{}@example.com", "x".repeat(400));
        for name in [
            a.clone(),
            binding_name(
                "prod",
                InstanceRole::Edit,
                SubjectKind::User,
                "Alice@Example.com",
            ),
            binding_name(
                "prod",
                InstanceRole::Edit,
                SubjectKind::Group,
                "system:serviceaccounts:team-a",
            ),
            binding_name("prod", InstanceRole::Edit, SubjectKind::User, "日本"),
            binding_name(
                &"p".repeat(63),
                InstanceRole::Edit,
                SubjectKind::User,
                &long_subject,
            ),
        ] {
            assert!(
                is_dns_label(&name),
                "{name} ({} chars) is not DNS-safe",
                name.len()
            );
        }
        let long = binding_name(
            &"p".repeat(63),
            InstanceRole::Edit,
            SubjectKind::User,
            &long_subject,
        );
        assert_eq!(long.len(), MAX_BINDING_NAME_LEN);
        let longer = binding_name(
            &"p".repeat(63),
            InstanceRole::Edit,
            SubjectKind::User,
            &format!("{long_subject}x"),
        );
        assert_ne!(
            long, longer,
            "truncated names still differ through the hash"
        );
    }

    #[test]
    fn binding_points_at_role_and_subject() {
        let b = cluster_role_binding("prod", InstanceRole::View, SubjectKind::Group, "team-a");
        assert_eq!(b.role_ref.name, "kairship:instance:prod:view");
        assert_eq!(b.role_ref.kind, "ClusterRole");
        let subject = &b.subjects.as_ref().unwrap()[0];
        assert_eq!(
            (subject.kind.as_str(), subject.name.as_str()),
            ("Group", "team-a")
        );
        assert_eq!(
            b.metadata.annotations.as_ref().unwrap()[SUBJECT_NAME_ANNOTATION],
            "team-a"
        );
        assert_eq!(
            owned_by_instance_selector("prod"),
            "app.kubernetes.io/managed-by=kairship,kairship.io/instance=prod"
        );
    }

    #[test]
    fn bindings_to_instance_roles_table() {
        let roles = instance_role_names("prod", ["kairship:instance:prod:extra".to_owned()]);
        assert_eq!(roles.len(), 4);
        let role_ref = |group: &str, kind: &str, name: &str| RoleRef {
            api_group: group.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
        };
        for (r, want) in [
            (
                role_ref(RBAC_GROUP, "ClusterRole", "kairship:instance:prod:view"),
                true,
            ),
            (
                role_ref(RBAC_GROUP, "ClusterRole", "kairship:instance:prod:admin"),
                true,
            ),
            (
                role_ref(RBAC_GROUP, "ClusterRole", "kairship:instance:prod:extra"),
                true,
            ),
            (
                role_ref("", "ClusterRole", "kairship:instance:prod:edit"),
                true,
            ),
            // A namespaced Role of the same name is not an instance role.
            (
                role_ref(RBAC_GROUP, "Role", "kairship:instance:prod:view"),
                false,
            ),
            (
                role_ref(RBAC_GROUP, "ClusterRole", "kairship:instance:prod2:view"),
                false,
            ),
            (role_ref(RBAC_GROUP, "ClusterRole", "prod-viewer"), false),
            (
                role_ref("example.com", "ClusterRole", "kairship:instance:prod:view"),
                false,
            ),
        ] {
            assert_eq!(refers_to_cluster_role(&r, &roles), want, "{r:?}");
        }
    }
}
