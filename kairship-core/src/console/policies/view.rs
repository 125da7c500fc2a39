//! The policy form page: the form of either kind (every value escaped by the builder), and
//! what a button answered under it: the policy as YAML, the placement preview, or the API's
//! refusal above the form.

use serde_json::Value;

use super::fields::{PolicyKind, SelectorRow};
use super::form::PolicyForm;
use super::overrides::{IMAGE_COMPONENTS, LIST_OPERATORS, OPERATORS, OverrideForm, RuleForm};
use super::propagation::PropagationForm;
use crate::api::{ApiError, PlacementPreview};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, notice_box, page};

/// New or existing policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `…/policies/new?kind=`.
    New,
    /// `…/policies/{kind}/{name}/edit`, filled from the stored object at `resource_version`.
    Edit {
        /// The version the form was filled from.
        resource_version: String,
        /// What the stored policy holds that the form does not show (kept by an edit).
        kept: Vec<String>,
    },
}

/// What the page shows under the form.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// The object the form would create (or, editing, store), as YAML.
    Yaml(&'a Value),
    /// The placement preview's answer.
    Placement(&'a Result<PlacementPreview, ApiError>),
    /// A notice (created, saved).
    Done(&'a str),
}

/// The console page of the form for a new policy of `kind`.
pub fn new_url(instance: &str, kind: PolicyKind, namespace: &str) -> String {
    let mut url = format!(
        "/ui/instances/{}/policies/new?kind={}",
        url_segment(instance),
        kind.kind()
    );
    if kind.namespaced() && !namespace.is_empty() {
        url.push_str("&ns=");
        url.push_str(&url_segment(namespace));
    }
    url
}

/// The console page editing policy `name` of `kind` with the form.
pub fn edit_url(instance: &str, kind: PolicyKind, namespace: &str, name: &str) -> String {
    let mut url = format!(
        "/ui/instances/{}/policies/{}/{}/edit",
        url_segment(instance),
        kind.kind(),
        url_segment(name)
    );
    if kind.namespaced() && !namespace.is_empty() {
        url.push_str("?ns=");
        url.push_str(&url_segment(namespace));
    }
    url
}

/// The resource browser's page of the policy.
pub fn object_url(instance: &str, kind: PolicyKind, namespace: &str, name: &str) -> String {
    let mut url = format!(
        "/ui/instances/{}/resources/policy.karmada.io/v1alpha1/{}/{}",
        url_segment(instance),
        kind.resource(),
        url_segment(name)
    );
    if kind.namespaced() && !namespace.is_empty() {
        url.push_str("?ns=");
        url.push_str(&url_segment(namespace));
    }
    url
}

/// The policy kind of a resource of the browser (`policy.karmada.io` and one of the four
/// policy plurals), else `None`.
pub fn kind_of_resource(group: &str, resource: &str) -> Option<PolicyKind> {
    (group == "policy.karmada.io")
        .then(|| PolicyKind::parse(resource))
        .flatten()
}

/// A policy list's "New policy" button (nothing for other resources); `ns_filter`: the list's
/// namespace filter, the new policy's namespace when it names one.
pub fn list_link(h: &mut Html, instance: &str, group: &str, resource: &str, ns_filter: &str) {
    let Some(kind) = kind_of_resource(group, resource) else {
        return;
    };
    let ns = if ns_filter.contains(',') {
        ""
    } else {
        ns_filter
    };
    let url = new_url(instance, kind, ns);
    h.el(
        "a",
        &[("href", &url), ("class", "button"), ("id", "new-policy")],
        "New policy",
    );
}

/// The overview's "New policy" button (a PropagationPolicy in the namespace shown).
pub fn overview_link(h: &mut Html, instance: &str, namespace: &str) {
    let url = new_url(instance, PolicyKind::Propagation, namespace);
    h.raw(" ").el(
        "a",
        &[("href", &url), ("class", "button"), ("id", "new-policy")],
        "New policy",
    );
}

/// A policy's "Edit with form" button on its object page (nothing for other resources).
pub fn edit_link(
    h: &mut Html,
    instance: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    name: &str,
) {
    let Some(kind) = kind_of_resource(group, resource) else {
        return;
    };
    let url = edit_url(instance, kind, namespace.unwrap_or_default(), name);
    h.el(
        "a",
        &[("href", &url), ("class", "button"), ("id", "edit-form")],
        "Edit with form",
    )
    .raw(" ");
}

fn field_id(name: &str) -> String {
    name.replace('_', "-")
}

fn input(h: &mut Html, label: &str, name: &str, value: &str, hint: &str) {
    let id = field_id(name);
    h.open("label", &[]).text(label).raw(" ");
    h.open(
        "input",
        &[
            ("name", name),
            ("id", &id),
            ("value", value),
            ("placeholder", hint),
        ],
    );
    h.close("label");
}

fn select(h: &mut Html, label: &str, name: &str, value: &str, options: &[(&str, &str)]) {
    let id = field_id(name);
    h.open("label", &[]).text(label).raw(" ");
    select_cell(h, name, &id, label, value, options);
    h.close("label");
}

/// A `<select>`; a value that is none of `options` is kept as one more option (a refused form
/// comes back as sent).
fn select_cell(
    h: &mut Html,
    name: &str,
    id: &str,
    label: &str,
    value: &str,
    options: &[(&str, &str)],
) {
    h.open(
        "select",
        &[("name", name), ("id", id), ("aria-label", label)],
    );
    let mut found = false;
    for (v, text) in options {
        let mut attrs = vec![("value", *v)];
        if *v == value {
            attrs.push(("selected", "selected"));
            found = true;
        }
        h.open("option", &attrs).text(text).close("option");
    }
    if !found {
        h.open("option", &[("value", value), ("selected", "selected")])
            .text(value)
            .close("option");
    }
    h.close("select");
}

/// A table of rows of inputs: `columns` are `(field, heading, kind)`; each cell's name is
/// `{prefix}_{row}_{field}`.
fn rows_table(
    h: &mut Html,
    id: &str,
    prefix: &str,
    columns: &[(&str, &str, Cell<'_>)],
    rows: &[Vec<&str>],
) {
    h.open("table", &[("class", "list rows"), ("id", id)])
        .raw("<thead><tr>");
    for (_, heading, _) in columns {
        h.el("th", &[], heading);
    }
    h.raw("</tr></thead><tbody>");
    for (i, row) in rows.iter().enumerate() {
        h.raw("<tr>");
        for ((field, heading, cell), value) in columns.iter().zip(row) {
            let name = format!("{prefix}_{i}_{field}");
            let id = field_id(&name);
            let label = format!("{heading} (row {})", i + 1);
            h.raw("<td>");
            match cell {
                Cell::Text(hint) => {
                    h.open(
                        "input",
                        &[
                            ("name", &name),
                            ("id", &id),
                            ("value", value),
                            ("placeholder", hint),
                            ("aria-label", &label),
                        ],
                    );
                }
                Cell::Choice(options) => select_cell(h, &name, &id, &label, value, options),
            }
            h.raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
}

enum Cell<'a> {
    Text(&'a str),
    Choice(&'a [(&'a str, &'a str)]),
}

const UNSET: (&str, &str) = ("", "(not set)");

fn selectors_fieldset(h: &mut Html, kind: PolicyKind, rows: &[SelectorRow]) {
    h.raw("<fieldset><legend>Resource selectors</legend><p class=\"muted\">Each row selects objects by apiVersion and kind, and one by name or several by labels (blank rows are left out).</p>");
    let ns_hint = if kind.namespaced() {
        "the policy's"
    } else {
        "any"
    };
    let values: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            vec![
                r.api_version.as_str(),
                r.kind.as_str(),
                r.name.as_str(),
                r.namespace.as_str(),
                r.labels.as_str(),
            ]
        })
        .collect();
    rows_table(
        h,
        "selectors",
        "sel",
        &[
            ("api", "apiVersion", Cell::Text("apps/v1")),
            ("kind", "Kind", Cell::Text("Deployment")),
            ("name", "Name", Cell::Text("all")),
            ("ns", "Namespace", Cell::Text(ns_hint)),
            ("labels", "Label selector", Cell::Text("app=web")),
        ],
        &values,
    );
    h.raw("</fieldset>");
}

fn head_fieldset(h: &mut Html, kind: PolicyKind, name: &str, namespace: &str, editing: bool) {
    h.raw("<fieldset><legend>Policy</legend>");
    if editing {
        // Name and namespace identify the stored object: shown, sent back, not edited.
        h.raw("<p>")
            .text(kind.kind())
            .raw(" <strong>")
            .text(name)
            .raw("</strong>");
        if kind.namespaced() {
            h.raw(" in namespace <strong>")
                .text(namespace)
                .raw("</strong>");
        }
        h.raw("</p>");
        h.open(
            "input",
            &[("type", "hidden"), ("name", "name"), ("value", name)],
        );
        h.open(
            "input",
            &[
                ("type", "hidden"),
                ("name", "namespace"),
                ("value", namespace),
            ],
        );
    } else {
        input(h, "Name", "name", name, "web-spread");
        if kind.namespaced() {
            input(h, "Namespace", "namespace", namespace, "default");
        }
    }
    h.raw("</fieldset>");
}

fn propagation_fields(h: &mut Html, f: &PropagationForm, editing: bool) {
    head_fieldset(h, f.kind, &f.name, &f.namespace, editing);
    selectors_fieldset(h, f.kind, &f.selectors);
    h.raw("<fieldset><legend>Placement: which clusters (all given criteria hold)</legend>");
    input(
        h,
        "Cluster names",
        "cluster_names",
        &f.cluster_names,
        "east, west",
    );
    input(
        h,
        "Cluster labels",
        "cluster_labels",
        &f.cluster_labels,
        "env=prod",
    );
    input(h, "Providers", "providers", &f.providers, "aws");
    input(h, "Regions", "regions", &f.regions, "eu-west");
    input(h, "Zones", "zones", &f.zones, "eu-west-1a");
    input(h, "Exclude clusters", "exclude", &f.exclude, "legacy");
    h.raw("<h3>Tolerated cluster taints</h3>");
    let tolerations: Vec<Vec<&str>> = f
        .tolerations
        .iter()
        .map(|t| {
            vec![
                t.key.as_str(),
                t.operator.as_str(),
                t.value.as_str(),
                t.effect.as_str(),
                t.seconds.as_str(),
            ]
        })
        .collect();
    rows_table(
        h,
        "tolerations",
        "tol",
        &[
            ("key", "Key", Cell::Text("dedicated")),
            (
                "operator",
                "Operator",
                Cell::Choice(&[UNSET, ("Equal", "Equal"), ("Exists", "Exists")]),
            ),
            ("value", "Value", Cell::Text("gpu")),
            (
                "effect",
                "Effect",
                Cell::Choice(&[
                    ("", "(any)"),
                    ("NoSchedule", "NoSchedule"),
                    ("PreferNoSchedule", "PreferNoSchedule"),
                    ("NoExecute", "NoExecute"),
                ]),
            ),
            ("seconds", "Seconds", Cell::Text("NoExecute only")),
        ],
        &tolerations,
    );
    h.raw("<h3>Spread constraints</h3>");
    let spread: Vec<Vec<&str>> = f
        .spread
        .iter()
        .map(|c| {
            vec![
                c.field.as_str(),
                c.label.as_str(),
                c.min.as_str(),
                c.max.as_str(),
            ]
        })
        .collect();
    rows_table(
        h,
        "spread",
        "spread",
        &[
            (
                "field",
                "Spread by",
                Cell::Choice(&[
                    UNSET,
                    ("cluster", "cluster"),
                    ("region", "region"),
                    ("zone", "zone"),
                    ("provider", "provider"),
                ]),
            ),
            ("label", "Or by cluster label", Cell::Text("topology")),
            ("min", "Min groups", Cell::Text("1")),
            ("max", "Max groups", Cell::Text("2")),
        ],
        &spread,
    );
    h.raw("</fieldset><fieldset><legend>Replicas</legend>");
    select(
        h,
        "Scheduling",
        "scheduling",
        &f.scheduling,
        &[
            UNSET,
            ("Duplicated", "Duplicated: all replicas on every cluster"),
            ("Divided", "Divided among the clusters"),
        ],
    );
    select(
        h,
        "Division",
        "division",
        &f.division,
        &[
            UNSET,
            ("Weighted", "Weighted"),
            ("Aggregated", "Aggregated: as few clusters as possible"),
        ],
    );
    select(
        h,
        "Weights",
        "weighting",
        &f.weighting,
        &[
            ("static", "Static: per cluster, below"),
            ("AvailableReplicas", "Dynamic: by available replicas"),
        ],
    );
    let weights: Vec<Vec<&str>> = f
        .weights
        .iter()
        .map(|w| vec![w.clusters.as_str(), w.weight.as_str()])
        .collect();
    rows_table(
        h,
        "weights",
        "weight",
        &[
            ("clusters", "Clusters", Cell::Text("east")),
            ("weight", "Weight", Cell::Text("1")),
        ],
        &weights,
    );
    input(
        h,
        "Preview with replicas",
        "preview_replicas",
        &f.preview_replicas,
        "blank: the first named object",
    );
    h.raw("</fieldset><fieldset><legend>Priority and conflicts</legend>");
    input(h, "Priority", "priority", &f.priority, "0");
    select(
        h,
        "Preemption",
        "preemption",
        &f.preemption,
        &[UNSET, ("Never", "Never"), ("Always", "Always")],
    );
    select(
        h,
        "Conflict resolution",
        "conflict_resolution",
        &f.conflict_resolution,
        &[UNSET, ("Abort", "Abort"), ("Overwrite", "Overwrite")],
    );
    h.raw("</fieldset><fieldset><legend>Application failover (optional)</legend>");
    input(
        h,
        "Move after unhealthy for (seconds)",
        "failover_after",
        &f.failover_after,
        "300",
    );
    select(
        h,
        "Purge mode",
        "failover_purge",
        &f.failover_purge,
        &[
            UNSET,
            ("Gracefully", "Gracefully"),
            ("Directly", "Directly"),
            ("Never", "Never"),
        ],
    );
    input(
        h,
        "Grace period (seconds)",
        "failover_grace",
        &f.failover_grace,
        "600",
    );
    h.raw("</fieldset>");
}

fn rule_fields(h: &mut Html, r: usize, rule: &RuleForm) {
    h.open("fieldset", &[("class", "rule")])
        .raw("<legend>")
        .text(&format!("Override rule {}", r + 1))
        .raw("</legend>");
    input(
        h,
        "Target clusters",
        &format!("rule_{r}_clusters"),
        &rule.clusters,
        "blank: every cluster",
    );
    input(
        h,
        "Target cluster labels",
        &format!("rule_{r}_cluster_labels"),
        &rule.cluster_labels,
        "env=prod",
    );
    let operators: Vec<(&str, &str)> = std::iter::once(UNSET)
        .chain(OPERATORS.iter().map(|o| (*o, *o)))
        .collect();
    let list_operators: Vec<(&str, &str)> = std::iter::once(UNSET)
        .chain(LIST_OPERATORS.iter().map(|o| (*o, *o)))
        .collect();
    let components: Vec<(&str, &str)> = std::iter::once(UNSET)
        .chain(IMAGE_COMPONENTS.iter().map(|c| (*c, *c)))
        .collect();
    h.raw("<h3>Image</h3>");
    let images: Vec<Vec<&str>> = rule
        .images
        .iter()
        .map(|i| {
            vec![
                i.component.as_str(),
                i.operator.as_str(),
                i.value.as_str(),
                i.path.as_str(),
            ]
        })
        .collect();
    rows_table(
        h,
        &format!("rule-{r}-images"),
        &format!("rule_{r}_image"),
        &[
            ("component", "Component", Cell::Choice(&components)),
            ("operator", "Operator", Cell::Choice(&operators)),
            ("value", "Value", Cell::Text("1.28")),
            (
                "path",
                "Only the image at",
                Cell::Text("/spec/template/spec/containers/0/image"),
            ),
        ],
        &images,
    );
    for (table, title, rows) in [
        ("command", "Command", &rule.commands),
        ("args", "Args", &rule.args),
    ] {
        h.open("h3", &[]).text(title).close("h3");
        let values: Vec<Vec<&str>> = rows
            .iter()
            .map(|l| vec![l.container.as_str(), l.operator.as_str(), l.values.as_str()])
            .collect();
        rows_table(
            h,
            &format!("rule-{r}-{table}"),
            &format!("rule_{r}_{table}"),
            &[
                ("container", "Container", Cell::Text("web")),
                ("operator", "Operator", Cell::Choice(&list_operators)),
                ("values", "Values", Cell::Text("--v=2, --verbose")),
            ],
            &values,
        );
    }
    for (table, title, rows) in [
        ("labels", "Labels", &rule.labels),
        ("annotations", "Annotations", &rule.annotations),
    ] {
        h.open("h3", &[]).text(title).close("h3");
        let values: Vec<Vec<&str>> = rows
            .iter()
            .map(|m| vec![m.operator.as_str(), m.pairs.as_str()])
            .collect();
        rows_table(
            h,
            &format!("rule-{r}-{table}"),
            &format!("rule_{r}_{table}"),
            &[
                ("operator", "Operator", Cell::Choice(&operators)),
                ("pairs", "key=value, …", Cell::Text("tier=edge")),
            ],
            &values,
        );
    }
    h.raw("<h3>Plaintext (JSON patch)</h3>");
    let plain: Vec<Vec<&str>> = rule
        .plaintext
        .iter()
        .map(|p| vec![p.path.as_str(), p.operator.as_str(), p.value.as_str()])
        .collect();
    rows_table(
        h,
        &format!("rule-{r}-plaintext"),
        &format!("rule_{r}_plain"),
        &[
            ("path", "Path", Cell::Text("/spec/replicas")),
            ("operator", "Operator", Cell::Choice(&operators)),
            ("value", "Value (JSON or text)", Cell::Text("3")),
        ],
        &plain,
    );
    h.close("fieldset");
}

fn override_fields(h: &mut Html, f: &OverrideForm, editing: bool) {
    head_fieldset(h, f.kind, &f.name, &f.namespace, editing);
    selectors_fieldset(h, f.kind, &f.selectors);
    for (r, rule) in f.rules.iter().enumerate() {
        rule_fields(h, r, rule);
    }
}

/// The form page. `can_write`: the caller may create (new) or update (edit) inside the
/// instance, else a notice replaces the form. `refused`: the API's (or the form's) refusal,
/// shown above the form as sent.
pub fn policy_page(
    viewer: &Viewer<'_>,
    instance: &str,
    form: &PolicyForm,
    mode: &Mode,
    can_write: bool,
    refused: Option<&ApiError>,
    outcome: Option<Outcome<'_>>,
) -> String {
    let kind = form.kind();
    let (name, namespace) = form.name_and_namespace();
    let editing = matches!(mode, Mode::Edit { .. });
    let mut h = Html::new();
    let list = format!(
        "/ui/instances/{}/resources/policy.karmada.io/v1alpha1/{}",
        url_segment(instance),
        kind.resource()
    );
    h.open("p", &[("class", "crumbs")])
        .el(
            "a",
            &[("href", &format!("/ui/instances/{}", url_segment(instance)))],
            instance,
        )
        .raw(" › ")
        .el("a", &[("href", &list)], kind.resource());
    if editing {
        h.raw(" › ").el(
            "a",
            &[("href", &object_url(instance, kind, namespace, name))],
            name,
        );
    }
    h.close("p");
    let title = if editing {
        format!("Edit {} {name}", kind.kind())
    } else {
        format!("New {}", kind.kind())
    };
    h.el("h1", &[], &title);
    if !editing {
        h.raw("<nav class=\"kinds\" id=\"policy-kinds\">");
        for other in PolicyKind::ALL {
            let url = new_url(instance, other, namespace);
            if other == kind {
                h.el("strong", &[], other.kind());
            } else {
                h.el("a", &[("href", &url)], other.kind());
            }
            h.raw(" ");
        }
        h.raw("</nav>");
    }
    if !can_write {
        notice_box(
            &mut h,
            if editing {
                "You may not change objects in this instance: ask for the edit role."
            } else {
                "You may not create objects in this instance: ask for the edit role."
            },
        );
        if let Some(err) = refused {
            error_box(&mut h, err);
        }
        return page(&title, Some(viewer), h);
    }
    if let Some(err) = refused {
        error_box(&mut h, err);
    }
    if let Some(Outcome::Done(text)) = &outcome {
        notice_box(&mut h, text);
    }
    let action = match mode {
        Mode::New => new_url(instance, kind, ""),
        Mode::Edit { .. } => edit_url(instance, kind, namespace, name),
    };
    h.open(
        "form",
        &[
            ("method", "post"),
            ("action", &action),
            ("id", "policy-form"),
        ],
    );
    csrf_field(&mut h, viewer.csrf);
    if let Mode::Edit {
        resource_version,
        kept,
    } = mode
    {
        h.open(
            "input",
            &[
                ("type", "hidden"),
                ("name", "resource_version"),
                ("value", resource_version),
            ],
        );
        h.raw("<p class=\"muted\">Saving changes only what the form changed: fields it does not show (annotations, other placement settings) are kept as stored. A change made by someone else meanwhile is refused, not overwritten.</p>");
        if !kept.is_empty() {
            h.open("p", &[("id", "policy-kept"), ("class", "muted")])
                .raw("Kept as stored, not shown in the form: ")
                .text(&kept.join(", "))
                .close("p");
        }
    }
    match form {
        PolicyForm::Propagation(f) => propagation_fields(&mut h, f, editing),
        PolicyForm::Override(f) => override_fields(&mut h, f, editing),
    }
    h.raw("<p class=\"toolbar\">");
    h.raw("<button id=\"policy-yaml\" type=\"submit\" name=\"op\" value=\"yaml\">Preview YAML</button> ");
    if kind.propagates() {
        h.raw("<button id=\"policy-placement\" type=\"submit\" name=\"op\" value=\"placement\">Preview placement</button> ");
    }
    h.raw(
        "<button id=\"policy-rows\" type=\"submit\" name=\"op\" value=\"rows\">More rows</button> ",
    );
    if editing {
        h.raw(
            "<button id=\"policy-save\" type=\"submit\" name=\"op\" value=\"save\">Save</button>",
        );
    } else {
        h.raw("<button id=\"policy-create\" type=\"submit\" name=\"op\" value=\"create\">Create</button>");
    }
    h.raw("</p></form><div id=\"policy-result\">");
    match outcome {
        Some(Outcome::Yaml(object)) => {
            notice_box(
                &mut h,
                if editing {
                    "The object Save would store; nothing was changed."
                } else {
                    "The object Create would create; nothing was created."
                },
            );
            let yaml = serde_saphyr::to_string(object)
                .unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
            h.el(
                "pre",
                &[("id", "policy-yaml-preview"), ("class", "yaml")],
                &yaml,
            );
        }
        Some(Outcome::Placement(preview)) => {
            h.append(crate::console::placement::preview_html(preview));
        }
        Some(Outcome::Done(_)) | None => {}
    }
    h.raw("</div>");
    page(&title, Some(viewer), h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::placement::PreviewTarget;
    use serde_json::json;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "<u>",
            csrf: "tok",
        }
    }

    #[test]
    fn every_field_is_escaped_and_viewers_get_no_form() {
        let evil = "<script>x()</script>\"'";
        let mut form = PolicyForm::blank(PolicyKind::Propagation, evil);
        if let PolicyForm::Propagation(f) = &mut form {
            f.name = evil.into();
            f.selectors[0].labels = evil.into();
            f.weights[0].clusters = evil.into();
            f.division = evil.into();
        }
        let err = ApiError::invalid(evil);
        let page = policy_page(&viewer(), evil, &form, &Mode::New, true, Some(&err), None);
        assert!(!page.contains("<script>x()"), "{page}");
        assert!(page.contains("&lt;script&gt;x()&lt;/script&gt;&quot;&#39;"));
        assert!(page.contains("id=\"policy-form\""));
        assert!(page.contains("name=\"_csrf\" value=\"tok\""));
        assert!(page.contains("id=\"policy-placement\"") && page.contains("id=\"policy-create\""));
        // The refusal is above the form.
        assert!(page.find("role=\"alert\"").unwrap() < page.find("id=\"policy-form\"").unwrap());
        let hidden = policy_page(&viewer(), "i", &form, &Mode::New, false, None, None);
        assert!(hidden.contains("class=\"notice\""));
        for control in [
            "policy-form",
            "policy-create",
            "<input name",
            "<select",
            "<button id=\"policy",
        ] {
            assert!(!hidden.contains(control), "{control}");
        }

        let mut over = PolicyForm::blank(PolicyKind::Override, "demo");
        if let PolicyForm::Override(f) = &mut over {
            f.rules[0].plaintext[0].value = evil.into();
            f.rules[0].images[0].component = evil.into();
        }
        let page = policy_page(
            &viewer(),
            "i",
            &over,
            &Mode::Edit {
                resource_version: evil.into(),
                kept: vec![evil.into()],
            },
            true,
            None,
            Some(Outcome::Yaml(&json!({"metadata": {"name": evil}}))),
        );
        assert!(!page.contains("<script>x()"), "{page}");
        assert!(page.contains("id=\"policy-save\"") && !page.contains("policy-placement"));
        assert!(page.contains("id=\"policy-yaml-preview\""));
        assert!(page.contains("name=\"rule_0_image_0_component\""));
    }

    #[test]
    fn links_only_for_policies() {
        let mut h = Html::new();
        list_link(&mut h, "i", "policy.karmada.io", "overridepolicies", "demo");
        edit_link(
            &mut h,
            "i",
            "policy.karmada.io",
            "clusterpropagationpolicies",
            None,
            "all",
        );
        list_link(&mut h, "i", "apps", "deployments", "demo");
        edit_link(&mut h, "i", "core", "configmaps", Some("demo"), "x");
        let out = h.finish();
        assert_eq!(out.matches("<a ").count(), 2, "{out}");
        assert!(
            out.contains("href=\"/ui/instances/i/policies/new?kind=OverridePolicy&amp;ns=demo\"")
        );
        assert!(
            out.contains("href=\"/ui/instances/i/policies/ClusterPropagationPolicy/all/edit\"")
        );
    }

    #[test]
    fn the_placement_preview_is_under_the_form() {
        let form = PolicyForm::blank(PolicyKind::ClusterPropagation, "demo");
        let preview = Ok(PlacementPreview {
            replicas: 3,
            replica_scheduling_type: "Divided".into(),
            clusters: vec![PreviewTarget {
                cluster: "a-east".into(),
                replicas: 2,
            }],
            ..PlacementPreview::default()
        });
        let page = policy_page(
            &viewer(),
            "i",
            &form,
            &Mode::New,
            true,
            None,
            Some(Outcome::Placement(&preview)),
        );
        let result = page.find("id=\"policy-result\"").unwrap();
        let table = page.find("data-cluster=\"a-east\"").unwrap();
        assert!(result < table);
        // A cluster-wide policy has no namespace field.
        assert!(!page.contains("name=\"namespace\""));
        assert!(
            new_url("i", PolicyKind::ClusterPropagation, "demo")
                .ends_with("kind=ClusterPropagationPolicy")
        );
        assert_eq!(
            edit_url("i", PolicyKind::Override, "demo ns", "a/b"),
            "/ui/instances/i/policies/OverridePolicy/a%2Fb/edit?ns=demo%20ns"
        );
    }
}
