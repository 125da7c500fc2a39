//! A static authorization policy for development servers.

use std::path::Path;

use async_trait::async_trait;

use crate::access::{AccessError, Authorizer, Caller, InstanceResource, Verb};

/// Every verb, in RBAC order.
const ALL_VERBS: [Verb; 7] = [
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Delete,
];

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read policy file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("policy line {line}: {reason}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// Whom a rule applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A user, by name.
    User(String),
    /// Every member of a group.
    Group(String),
}

impl Subject {
    fn matches(&self, caller: &Caller) -> bool {
        match self {
            Subject::User(name) => caller.user == *name,
            Subject::Group(name) => caller.groups.iter().any(|g| g == name),
        }
    }
}

/// Both resources, for rules that do not name any.
const ALL_RESOURCES: [InstanceResource; 2] = [InstanceResource::Instances, InstanceResource::Proxy];

/// One line of a policy: a subject may apply some verbs to some instances, to the Instance
/// objects, the objects inside them, or both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRule {
    /// Whom the rule applies to.
    pub subject: Subject,
    /// The verbs allowed; `None` for all (`*`).
    pub verbs: Option<Vec<Verb>>,
    /// The instances; `None` for all (`*`), which is also what acting on no particular
    /// instance (listing or creating instances) needs.
    pub instances: Option<Vec<String>>,
    /// What the verbs apply to: `instances` (the Instance objects) and/or `instances/proxy`
    /// (the objects inside them); `None` for both (`*`, or the field left out).
    pub resources: Option<Vec<InstanceResource>>,
}

impl PolicyRule {
    /// Whether the rule allows `caller` to apply `verb` to `resource` of `instance`.
    pub fn allows(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> bool {
        let verb_ok = self.verbs.as_ref().is_none_or(|v| v.contains(&verb));
        let resource_ok = self
            .resources
            .as_ref()
            .is_none_or(|r| r.contains(&resource));
        let instance_ok = match (&self.instances, instance) {
            (None, _) => true,
            (Some(names), Some(instance)) => names.iter().any(|n| n == instance),
            (Some(_), None) => false,
        };
        verb_ok && resource_ok && instance_ok && self.subject.matches(caller)
    }
}

fn parse_verb(word: &str) -> Option<Verb> {
    ALL_VERBS.into_iter().find(|v| v.as_str() == word)
}

/// Parses a policy: one rule per line, `<user:NAME|group:NAME> <verbs> <instances>
/// [<resources>]`, where verbs, instances and resources are comma-separated lists or `*`;
/// `read` stands for `get,list,watch` and `write` for `create,update,patch,delete`; resources
/// are `instances` (the Instance objects) and `instances/proxy` (the objects inside them),
/// both when left out. Blank lines and `#` comments are skipped.
///
/// ```text
/// group:system:masters  *               *
/// user:alice            read,patch      prod,staging
/// user:erin             read            prod
/// user:erin             write           prod          instances/proxy
/// ```
pub fn parse_policy(text: &str) -> Result<Vec<PolicyRule>, PolicyError> {
    let mut rules = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let err = |reason: String| PolicyError::Parse {
            line: index + 1,
            reason,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (subject, verbs, instances, resources) = match fields[..] {
            [subject, verbs, instances] => (subject, verbs, instances, "*"),
            [subject, verbs, instances, resources] => (subject, verbs, instances, resources),
            _ => {
                return Err(err(format!(
                    "expected 3 or 4 fields (subject, verbs, instances[, resources]), found {}",
                    fields.len()
                )));
            }
        };
        let subject = match subject.split_once(':') {
            Some(("user", name)) if !name.is_empty() => Subject::User(name.to_owned()),
            Some(("group", name)) if !name.is_empty() => Subject::Group(name.to_owned()),
            _ => {
                return Err(err(format!(
                    "subject {subject:?} is neither user:NAME nor group:NAME"
                )));
            }
        };
        let verbs = if verbs == "*" {
            None
        } else {
            let mut list = Vec::new();
            for word in verbs.split(',').filter(|w| !w.is_empty()) {
                let expanded: Vec<Verb> = match word {
                    "read" => ALL_VERBS.into_iter().filter(|v| !v.is_write()).collect(),
                    "write" => ALL_VERBS.into_iter().filter(|v| v.is_write()).collect(),
                    _ => vec![
                        parse_verb(word).ok_or_else(|| err(format!("unknown verb {word:?}")))?,
                    ],
                };
                for verb in expanded {
                    if !list.contains(&verb) {
                        list.push(verb);
                    }
                }
            }
            if list.is_empty() {
                return Err(err("no verbs".into()));
            }
            Some(list)
        };
        let instances = if instances == "*" {
            None
        } else {
            let names: Vec<String> = instances
                .split(',')
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            if names.is_empty() {
                return Err(err("no instances".into()));
            }
            Some(names)
        };
        let resources = if resources == "*" {
            None
        } else {
            let mut list = Vec::new();
            for word in resources.split(',').filter(|w| !w.is_empty()) {
                let resource = ALL_RESOURCES
                    .into_iter()
                    .find(|r| r.as_str() == word)
                    .ok_or_else(|| {
                        err(format!(
                            "unknown resource {word:?} (instances or instances/proxy)"
                        ))
                    })?;
                if !list.contains(&resource) {
                    list.push(resource);
                }
            }
            if list.is_empty() {
                return Err(err("no resources".into()));
            }
            Some(list)
        };
        rules.push(PolicyRule {
            subject,
            verbs,
            instances,
            resources,
        });
    }
    Ok(rules)
}

/// An [`Authorizer`] deciding from a fixed list of [`PolicyRule`]s, for development servers:
/// allowed when any rule allows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticAuthorizer {
    rules: Vec<PolicyRule>,
}

impl StaticAuthorizer {
    /// From rules.
    pub fn new(rules: Vec<PolicyRule>) -> Self {
        StaticAuthorizer { rules }
    }

    /// Members of `group` may do anything to every instance; nobody else anything.
    pub fn admin_group(group: impl Into<String>) -> Self {
        Self::new(vec![PolicyRule {
            subject: Subject::Group(group.into()),
            verbs: None,
            instances: None,
            resources: None,
        }])
    }

    /// From the text of a policy (see [`parse_policy`]).
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        Ok(Self::new(parse_policy(text)?))
    }

    /// Reads and parses a policy file.
    pub fn from_file(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// The rules.
    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    /// Whether any rule allows `caller` to apply `verb` to `resource` of `instance`.
    pub fn decide(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> bool {
        self.rules
            .iter()
            .any(|r| r.allows(caller, verb, resource, instance))
    }
}

#[async_trait]
impl Authorizer for StaticAuthorizer {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(self.decide(caller, verb, resource, instance))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = "\
# who                 verbs        instances
group:system:masters  *            *
user:alice            read,patch   prod,staging   # alice looks after two
group:viewers         get,list     *
user:erin             read         prod
user:erin             write        prod         instances/proxy   # edits inside prod only
";

    #[test]
    fn parses_rules() {
        let rules = parse_policy(POLICY).unwrap();
        assert_eq!(
            rules,
            [
                PolicyRule {
                    subject: Subject::Group("system:masters".into()),
                    verbs: None,
                    instances: None,
                    resources: None,
                },
                PolicyRule {
                    subject: Subject::User("alice".into()),
                    verbs: Some(vec![Verb::Get, Verb::List, Verb::Watch, Verb::Patch]),
                    instances: Some(vec!["prod".into(), "staging".into()]),
                    resources: None,
                },
                PolicyRule {
                    subject: Subject::Group("viewers".into()),
                    verbs: Some(vec![Verb::Get, Verb::List]),
                    instances: None,
                    resources: None,
                },
                PolicyRule {
                    subject: Subject::User("erin".into()),
                    verbs: Some(vec![Verb::Get, Verb::List, Verb::Watch]),
                    instances: Some(vec!["prod".into()]),
                    resources: None,
                },
                PolicyRule {
                    subject: Subject::User("erin".into()),
                    verbs: Some(vec![Verb::Create, Verb::Update, Verb::Patch, Verb::Delete]),
                    instances: Some(vec!["prod".into()]),
                    resources: Some(vec![InstanceResource::Proxy]),
                },
            ]
        );
    }

    #[test]
    fn reports_bad_lines_with_their_number() {
        for (text, line, reason) in [
            ("user:a *", 1, "expected 3 or 4 fields"),
            ("user:a * * * x", 1, "expected 3 or 4 fields"),
            ("user:a * * pods", 1, "unknown resource"),
            ("user:a * * ,", 1, "no resources"),
            ("\n\nrole:a * *", 3, "neither user"),
            ("user: * *", 1, "neither user"),
            ("user:a fly *", 1, "unknown verb"),
            ("user:a , *", 1, "no verbs"),
            ("user:a get ,", 1, "no instances"),
        ] {
            match parse_policy(text) {
                Err(PolicyError::Parse { line: l, reason: r }) => {
                    assert_eq!(l, line, "{text:?}");
                    assert!(r.contains(reason), "{text:?}: {r}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn decides_like_the_rules_say() {
        let policy = StaticAuthorizer::parse(POLICY).unwrap();
        let admin = Caller::new("root", vec!["system:masters".into()]);
        let alice = Caller::new("alice", vec![]);
        let viewer = Caller::new("vic", vec!["viewers".into()]);
        let erin = Caller::new("erin", vec![]);
        let nobody = Caller::new("nobody", vec!["system:authenticated".into()]);
        use InstanceResource::{Instances as I, Proxy as X};
        let cases = [
            (&admin, Verb::Delete, I, Some("prod"), true),
            (&admin, Verb::Create, X, Some("prod"), true),
            (&admin, Verb::Create, I, None, true),
            (&alice, Verb::Watch, X, Some("prod"), true),
            (&alice, Verb::Patch, I, Some("staging"), true),
            (&alice, Verb::Patch, X, Some("staging"), true),
            (&alice, Verb::Delete, X, Some("prod"), false),
            (&alice, Verb::Get, I, Some("dev"), false),
            (&alice, Verb::List, I, None, false),
            (&viewer, Verb::List, I, None, true),
            (&viewer, Verb::Get, X, Some("any"), true),
            (&viewer, Verb::Watch, X, Some("any"), false),
            (&viewer, Verb::Update, I, Some("any"), false),
            // erin writes inside prod, but may not change or delete the Instance itself.
            (&erin, Verb::Get, I, Some("prod"), true),
            (&erin, Verb::Create, X, Some("prod"), true),
            (&erin, Verb::Delete, X, Some("prod"), true),
            (&erin, Verb::Update, I, Some("prod"), false),
            (&erin, Verb::Delete, I, Some("prod"), false),
            (&erin, Verb::Create, X, Some("staging"), false),
            (&nobody, Verb::Get, I, Some("prod"), false),
        ];
        for (caller, verb, resource, instance, want) in cases {
            assert_eq!(
                policy.decide(caller, verb, resource, instance),
                want,
                "{} {verb:?} {resource} {instance:?}",
                caller.user
            );
        }
        let only_admins = StaticAuthorizer::admin_group("ops");
        let ops = Caller::new("x", vec!["ops".into()]);
        assert!(only_admins.decide(&ops, Verb::Delete, I, None));
        assert!(only_admins.decide(&ops, Verb::Create, X, Some("prod")));
        assert!(!only_admins.decide(&alice, Verb::Get, I, Some("prod")));
    }
}
