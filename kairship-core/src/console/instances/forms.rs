//! The console's "new instance" page: adopt a Karmada by pasting its kubeconfig
//! ([`InstancesApi::adopt_instance`](crate::api::InstancesApi::adopt_instance), which stores it
//! in a Secret), adopt one whose kubeconfig already is in a Secret, or provision one through
//! the karmada-operator (both [`InstancesApi::create_instance`](crate::api::InstancesApi::create_instance)).
//! Three forms on one page, each posting its `mode`; the API's refusal is shown above the form
//! that was sent. Only callers the authorizer lets create instances get the page; the API
//! checks every call anyway.

use std::collections::{BTreeMap, HashMap};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::view::AdoptForm;
use crate::access::{InstanceResource, Verb};
use crate::api::{AdoptInstanceOptions, AdoptInstanceRequest, ApiError, CreateInstanceRequest};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, page};
use crate::console::request::{Shared, html, see_other, signed_in, signed_post, status_of};
use crate::instance::KarmadaComponent;

/// Karmada release the Provision form proposes.
pub const DEFAULT_KARMADA_VERSION: &str = "v1.14.0";

/// The console routes of this module (merged into [`super::routes`]).
pub(in crate::console) fn routes() -> Router<Shared> {
    Router::new().route("/ui/new-instance", get(new_instance).post(submit))
}

/// Which of the page's forms was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Adopt with a pasted kubeconfig.
    Paste,
    /// Adopt with a kubeconfig already stored in a Secret.
    Secret,
    /// Provision through the karmada-operator.
    Provision,
}

impl Mode {
    fn from_field(value: Option<&String>) -> Mode {
        match value.map(String::as_str) {
            Some("secret") => Mode::Secret,
            Some("provision") => Mode::Provision,
            _ => Mode::Paste,
        }
    }
}

/// The "adopt with a pasted kubeconfig" form. The kubeconfig is never written back into a
/// page: after a refusal it is pasted again.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PasteForm {
    /// Instance name.
    pub name: String,
    /// Display name.
    pub alias: String,
    /// `Delete` or `Retain`.
    pub deletion_policy: String,
    /// The kubeconfig text.
    pub kubeconfig: String,
}

impl std::fmt::Debug for PasteForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasteForm")
            .field("name", &self.name)
            .field("alias", &self.alias)
            .field("deletion_policy", &self.deletion_policy)
            .finish_non_exhaustive()
    }
}

impl PasteForm {
    /// The form from posted fields.
    pub fn from_fields(fields: &HashMap<String, String>) -> PasteForm {
        PasteForm {
            name: field(fields, "name"),
            alias: field(fields, "alias"),
            deletion_policy: field(fields, "deletionPolicy"),
            kubeconfig: fields.get("kubeconfig").cloned().unwrap_or_default(),
        }
    }

    /// The API call it makes.
    pub fn request(&self) -> AdoptInstanceRequest {
        AdoptInstanceRequest {
            instance: self.name.clone(),
            options: AdoptInstanceOptions {
                kubeconfig: self.kubeconfig.clone(),
                alias: non_empty(&self.alias),
                deletion_policy: non_empty(&self.deletion_policy),
                secret_namespace: None,
                labels: BTreeMap::new(),
            },
        }
    }
}

/// The Provision form: what `spec.provision` carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProvisionForm {
    /// Instance name.
    pub name: String,
    /// Display name.
    pub alias: String,
    /// Karmada release (`vX.Y.Z`).
    pub karmada_version: String,
    /// Host namespace of the control plane (default: the instance's name).
    pub host_namespace: String,
    /// Registry of every image.
    pub image_registry: String,
    /// Optional components ticked.
    pub components: Vec<KarmadaComponent>,
    /// `component=tag` lines.
    pub image_tags: String,
    /// `Gate=true|false` lines.
    pub feature_gates: String,
    /// `Delete` or `Retain`.
    pub deletion_policy: String,
}

impl ProvisionForm {
    /// The form from posted fields (`component-<field name>` per ticked component).
    pub fn from_fields(fields: &HashMap<String, String>) -> ProvisionForm {
        ProvisionForm {
            name: field(fields, "name"),
            alias: field(fields, "alias"),
            karmada_version: field(fields, "karmadaVersion"),
            host_namespace: field(fields, "hostNamespace"),
            image_registry: field(fields, "imageRegistry"),
            components: KarmadaComponent::ALL
                .into_iter()
                .filter(|c| c.is_optional())
                .filter(|c| fields.contains_key(&format!("component-{}", c.field_name())))
                .collect(),
            image_tags: field(fields, "imageTags"),
            feature_gates: field(fields, "featureGates"),
            deletion_policy: field(fields, "deletionPolicy"),
        }
    }

    /// The Provision-mode Instance to create: the form with its defaults (the proposed Karmada
    /// release, the instance's name as host namespace) filled in; the API checks what this
    /// does not (version format, component names, the name).
    pub fn instance(&self) -> Result<Value, ApiError> {
        let mut filled = self.clone();
        if filled.karmada_version.is_empty() {
            filled.karmada_version = DEFAULT_KARMADA_VERSION.to_owned();
        }
        if filled.host_namespace.is_empty() {
            filled.host_namespace = filled.name.clone();
        }
        filled.as_instance()
    }

    /// The Provision-mode Instance exactly as the form says, no default filled in (an edit
    /// compares and sends this: an emptied field is the API's to refuse, not replaced).
    pub fn as_instance(&self) -> Result<Value, ApiError> {
        let image_tags = pairs("imageTags", &self.image_tags, |v| Ok(Value::from(v)))?;
        let feature_gates = pairs("featureGates", &self.feature_gates, |v| match v {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("{v:?} is not true or false")),
        })?;
        let mut provision = json!({
            "karmadaVersion": self.karmada_version,
            "hostNamespace": self.host_namespace,
        });
        if !self.image_registry.is_empty() {
            provision["imageRegistry"] = Value::from(self.image_registry.clone());
        }
        if !self.components.is_empty() {
            provision["components"] = serde_json::to_value(&self.components)
                .map_err(|e| ApiError::internal(format!("components: {e}")))?;
        }
        if !image_tags.is_empty() {
            provision["imageTags"] = Value::Object(image_tags);
        }
        if !feature_gates.is_empty() {
            provision["featureGates"] = Value::Object(feature_gates);
        }
        let mut spec = json!({"mode": "Provision", "provision": provision});
        if !self.alias.is_empty() {
            spec["alias"] = Value::from(self.alias.clone());
        }
        if !self.deletion_policy.is_empty() {
            spec["deletionPolicy"] = Value::from(self.deletion_policy.clone());
        }
        Ok(json!({
            "apiVersion": "kairship.io/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": self.name},
            "spec": spec,
        }))
    }

    /// The form filled from a stored Provision-mode Instance: what [`ProvisionForm::from_fields`]
    /// would read back from it shown (image tags and feature gates as sorted `key=value`
    /// lines, the optional components in their install order; what the form cannot show, such
    /// as a component that is not optional, is left out).
    pub fn of_instance(instance: &Value) -> ProvisionForm {
        let text = |pointer: &str| {
            instance
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let lines = |pointer: &str| {
            let Some(map) = instance.pointer(pointer).and_then(Value::as_object) else {
                return String::new();
            };
            let mut lines: Vec<String> = map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
            lines.sort();
            lines.join("\n")
        };
        let listed: Vec<&str> = instance
            .pointer("/spec/provision/components")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        ProvisionForm {
            name: text("/metadata/name"),
            alias: text("/spec/alias"),
            karmada_version: text("/spec/provision/karmadaVersion"),
            host_namespace: text("/spec/provision/hostNamespace"),
            image_registry: text("/spec/provision/imageRegistry"),
            components: KarmadaComponent::ALL
                .into_iter()
                .filter(|c| c.is_optional() && listed.contains(&c.field_name()))
                .collect(),
            image_tags: lines("/spec/provision/imageTags"),
            feature_gates: lines("/spec/provision/featureGates"),
            deletion_policy: text("/spec/deletionPolicy"),
        }
    }
}

fn field(fields: &HashMap<String, String>, key: &str) -> String {
    fields
        .get(key)
        .map(|v| v.trim().to_owned())
        .unwrap_or_default()
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// `key=value` lines (blank lines skipped) as a JSON object, each value converted by `value`.
fn pairs(
    name: &str,
    text: &str,
    value: impl Fn(&str) -> Result<Value, String>,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    let mut out = serde_json::Map::new();
    for (n, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
        if line.is_empty() {
            continue;
        }
        let bad = |m: String| ApiError::invalid_field(name, format!("line {n}: {m}"));
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| bad(format!("{line:?} is not key=value")))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(bad("empty key".into()));
        }
        out.insert(k.to_owned(), value(v).map_err(bad)?);
    }
    Ok(out)
}

/// What the page shows: the forms as last sent, and the refusal of the one that was.
#[derive(Debug, Default)]
pub struct NewInstancePage<'a> {
    /// The paste form.
    pub paste: PasteForm,
    /// The Secret form.
    pub secret: AdoptForm,
    /// The Provision form.
    pub provision: ProvisionForm,
    /// The form refused and why.
    pub refused: Option<(Mode, &'a ApiError)>,
}

/// A labelled text input.
pub(in crate::console::instances) fn input(
    h: &mut Html,
    label: &str,
    name: &'static str,
    id: &str,
    value: &str,
    required: bool,
) {
    h.raw("<label>").text(label).raw(" ");
    let mut attrs = vec![("name", name), ("id", id), ("value", value)];
    if required {
        attrs.push(("required", ""));
    }
    h.open("input", &attrs).raw("</label>");
}

/// The deletion policy's choice (`Delete` or `Retain`).
pub(in crate::console::instances) fn deletion_policy(h: &mut Html, id: &str, chosen: &str) {
    h.raw("<label>Deletion policy ")
        .open("select", &[("name", "deletionPolicy"), ("id", id)]);
    for option in ["Delete", "Retain"] {
        let mut attrs = vec![("value", option)];
        if chosen == option {
            attrs.push(("selected", "selected"));
        }
        h.el("option", &attrs, option);
    }
    h.raw("</select></label>");
}

fn refusal(h: &mut Html, page: &NewInstancePage<'_>, mode: Mode) {
    if let Some((m, err)) = page.refused
        && m == mode
    {
        error_box(h, err);
    }
}

/// The Provision settings' fields (Karmada version, host namespace when `host_namespace`,
/// image registry, optional components, image tags, feature gates) as [`ProvisionForm::from_fields`]
/// reads them: the new-instance form's and an instance's edit page's.
pub(in crate::console::instances) fn provision_settings(
    h: &mut Html,
    v: &ProvisionForm,
    host_namespace: bool,
) {
    input(
        h,
        "Karmada version",
        "karmadaVersion",
        "karmadaVersion",
        &v.karmada_version,
        true,
    );
    if host_namespace {
        input(
            h,
            "Host namespace (default: the instance's name)",
            "hostNamespace",
            "hostNamespace",
            &v.host_namespace,
            false,
        );
    }
    input(
        h,
        "Image registry (optional)",
        "imageRegistry",
        "imageRegistry",
        &v.image_registry,
        false,
    );
    h.raw("<fieldset><legend>Optional components</legend>");
    for c in KarmadaComponent::ALL
        .into_iter()
        .filter(|c| c.is_optional())
    {
        let name = format!("component-{}", c.field_name());
        // The field name carries the component: a form field keeps one value per name.
        let mut attrs = vec![
            ("type", "checkbox"),
            ("name", name.as_str()),
            ("id", name.as_str()),
        ];
        if v.components.contains(&c) {
            attrs.push(("checked", "checked"));
        }
        h.raw("<label>")
            .open("input", &attrs)
            .raw(" ")
            .text(c.field_name())
            .raw("</label>");
    }
    h.raw("</fieldset>");
    h.raw("<label>Image tags, one <code>component=tag</code> a line (optional) ");
    h.open(
        "textarea",
        &[("name", "imageTags"), ("id", "imageTags"), ("rows", "3")],
    )
    .text(&v.image_tags)
    .close("textarea")
    .raw("</label>");
    h.raw("<label>Feature gates, one <code>Gate=true</code> a line (optional) ");
    h.open(
        "textarea",
        &[
            ("name", "featureGates"),
            ("id", "featureGates"),
            ("rows", "3"),
        ],
    )
    .text(&v.feature_gates)
    .close("textarea")
    .raw("</label>");
}

/// The "new instance" page.
pub fn new_instance_page(viewer: &Viewer<'_>, p: &NewInstancePage<'_>) -> String {
    let mut h = Html::new();
    h.raw("<h1>New instance</h1>");

    h.raw("<section class=\"card\" id=\"adopt-paste\"><h2>Adopt a Karmada: paste its kubeconfig</h2>")
        .raw("<p>Kairship stores the kubeconfig in the Secret <code>kairship-system/&lt;name&gt;-kubeconfig</code>, owned by the instance (deleting the instance removes it). It is never shown again.</p>");
    refusal(&mut h, p, Mode::Paste);
    h.raw("<form method=\"post\" action=\"/ui/new-instance\"><input type=\"hidden\" name=\"mode\" value=\"paste\">");
    csrf_field(&mut h, viewer.csrf);
    input(&mut h, "Name", "name", "paste-name", &p.paste.name, true);
    input(
        &mut h,
        "Display name",
        "alias",
        "paste-alias",
        &p.paste.alias,
        false,
    );
    deletion_policy(&mut h, "paste-deletion-policy", &p.paste.deletion_policy);
    h.raw("<label>Kubeconfig of the Karmada API server <textarea id=\"kubeconfig\" name=\"kubeconfig\" rows=\"10\" required autocomplete=\"off\" spellcheck=\"false\"></textarea></label>")
        .raw("<button id=\"adopt-pasted\" type=\"submit\">Adopt</button></form></section>");

    let s = &p.secret;
    h.raw("<section class=\"card\" id=\"adopt-secret\"><h2>Adopt a Karmada: its kubeconfig is in a Secret</h2>")
        .raw("<p>Name a Secret on the host cluster that holds the Karmada API server's kubeconfig (<code>kubectl -n kairship-system create secret generic prod-karmada --from-file=kubeconfig=karmada-apiserver.kubeconfig</code>).</p>");
    refusal(&mut h, p, Mode::Secret);
    h.raw("<form method=\"post\" action=\"/ui/new-instance\"><input type=\"hidden\" name=\"mode\" value=\"secret\">");
    csrf_field(&mut h, viewer.csrf);
    let namespace = if s.secret_namespace.is_empty() {
        "kairship-system"
    } else {
        &s.secret_namespace
    };
    input(&mut h, "Name", "name", "name", &s.name, true);
    input(&mut h, "Display name", "alias", "alias", &s.alias, false);
    input(
        &mut h,
        "Secret namespace",
        "secretNamespace",
        "secretNamespace",
        namespace,
        true,
    );
    input(
        &mut h,
        "Secret name",
        "secretName",
        "secretName",
        &s.secret_name,
        true,
    );
    input(
        &mut h,
        "Secret key (optional)",
        "secretKey",
        "secretKey",
        &s.secret_key,
        false,
    );
    h.raw("<button id=\"adopt\" type=\"submit\">Adopt</button></form></section>");

    let v = &p.provision;
    h.raw("<section class=\"card\" id=\"provision\"><h2>Provision a Karmada with the karmada-operator</h2>")
        .raw("<p>Kairship creates the operator's <code>Karmada</code> object; the operator installs the control plane in the host namespace.</p>");
    refusal(&mut h, p, Mode::Provision);
    h.raw("<form method=\"post\" action=\"/ui/new-instance\"><input type=\"hidden\" name=\"mode\" value=\"provision\">");
    csrf_field(&mut h, viewer.csrf);
    let version = if v.karmada_version.is_empty() {
        DEFAULT_KARMADA_VERSION
    } else {
        &v.karmada_version
    };
    input(&mut h, "Name", "name", "provision-name", &v.name, true);
    input(
        &mut h,
        "Display name",
        "alias",
        "provision-alias",
        &v.alias,
        false,
    );
    let shown = ProvisionForm {
        karmada_version: version.to_owned(),
        ..v.clone()
    };
    provision_settings(&mut h, &shown, true);
    deletion_policy(&mut h, "provision-deletion-policy", &v.deletion_policy);
    h.raw("<button id=\"provision-submit\" type=\"submit\">Provision</button></form></section>")
        .raw("<p><a href=\"/ui/instances\">Cancel</a></p>");
    page("New instance", Some(viewer), h)
}

async fn may_create(
    console: &crate::console::request::Console,
    caller: &crate::access::Caller,
) -> bool {
    console
        .authorizer
        .allowed(caller, Verb::Create, InstanceResource::Instances, None)
        .await
        .unwrap_or(false)
}

async fn new_instance(State(console): State<Shared>, headers: HeaderMap) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if !may_create(&console, &signed.caller).await {
        let err = ApiError::forbidden(format!(
            "user {:?} may not create instances",
            signed.caller.user
        ));
        return html(
            StatusCode::FORBIDDEN,
            crate::console::page::error_page(Some(&signed.viewer()), "New instance", &err),
        );
    }
    html(
        StatusCode::OK,
        new_instance_page(&signed.viewer(), &NewInstancePage::default()),
    )
}

async fn submit(State(console): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let (signed, fields) = match signed_post(&console, &headers, &body).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let mode = Mode::from_field(fields.get("mode"));
    let mut p = NewInstancePage::default();
    let (name, result) = match mode {
        Mode::Paste => {
            p.paste = PasteForm::from_fields(&fields);
            let result = console
                .api
                .adopt_instance(&signed.caller, p.paste.request())
                .await;
            // Never written back into the page.
            p.paste.kubeconfig.clear();
            (p.paste.name.clone(), result)
        }
        Mode::Secret => {
            p.secret = AdoptForm::from_fields(&fields);
            let req = CreateInstanceRequest {
                body: p.secret.instance(),
            };
            let result = console.api.create_instance(&signed.caller, req).await;
            (p.secret.name.clone(), result)
        }
        Mode::Provision => {
            p.provision = ProvisionForm::from_fields(&fields);
            let result = match p.provision.instance() {
                Ok(body) => {
                    let req = CreateInstanceRequest { body };
                    console.api.create_instance(&signed.caller, req).await
                }
                Err(err) => Err(err),
            };
            (p.provision.name.clone(), result)
        }
    };
    match result {
        Ok(_) => see_other(&headers, &format!("/ui/instances/{}", url_segment(&name))),
        Err(err) => {
            let status = status_of(&err);
            p.refused = Some((mode, &err));
            html(status, new_instance_page(&signed.viewer(), &p))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn provision_form_builds_the_instance() {
        let cases = [
            (
                "defaults",
                fields(&[("name", "edge"), ("karmadaVersion", "")]),
                json!({"mode": "Provision", "provision": {"karmadaVersion": "v1.14.0", "hostNamespace": "edge"}}),
            ),
            (
                "everything",
                fields(&[
                    ("name", "edge"),
                    ("alias", "Edge"),
                    ("karmadaVersion", "v1.13.2"),
                    ("hostNamespace", "karmada-edge"),
                    ("imageRegistry", "registry.local"),
                    ("component-karmadaSearch", "on"),
                    ("component-karmadaDescheduler", "on"),
                    ("imageTags", "etcd=3.5.16-0\n\n karmadaScheduler = v1.13.3 "),
                    ("featureGates", "Failover=true\nGracefulEviction=false"),
                    ("deletionPolicy", "Retain"),
                ]),
                json!({"mode": "Provision", "alias": "Edge", "deletionPolicy": "Retain", "provision": {
                    "karmadaVersion": "v1.13.2", "hostNamespace": "karmada-edge",
                    "imageRegistry": "registry.local",
                    "components": ["karmadaDescheduler", "karmadaSearch"],
                    "imageTags": {"etcd": "3.5.16-0", "karmadaScheduler": "v1.13.3"},
                    "featureGates": {"Failover": true, "GracefulEviction": false}}}),
            ),
        ];
        for (what, f, spec) in cases {
            let instance = ProvisionForm::from_fields(&f).instance().unwrap();
            assert_eq!(instance["spec"], spec, "{what}");
            assert_eq!(instance["metadata"]["name"], "edge", "{what}");
        }
    }

    #[test]
    fn a_stored_instance_reads_back_into_the_form() {
        for (what, f) in [
            ("the defaults filled in", fields(&[("name", "edge")])),
            (
                "everything",
                fields(&[
                    ("name", "edge"),
                    ("alias", "Edge"),
                    ("karmadaVersion", "v1.13.2"),
                    ("hostNamespace", "karmada-edge"),
                    ("imageRegistry", "registry.local"),
                    ("component-karmadaMetricsAdapter", "on"),
                    ("component-karmadaDescheduler", "on"),
                    ("imageTags", "karmadaScheduler=v1.13.3\netcd=3.5.16-0"),
                    ("featureGates", "GracefulEviction=false\nFailover=true"),
                    ("deletionPolicy", "Retain"),
                ]),
            ),
        ] {
            let instance = ProvisionForm::from_fields(&f).instance().unwrap();
            let form = ProvisionForm::of_instance(&instance);
            // The same Instance again, without a default to fill in.
            assert_eq!(form.as_instance().unwrap(), instance, "{what}");
            assert_eq!(form.instance().unwrap(), instance, "{what}");
        }
        let form = ProvisionForm::of_instance(&json!({"metadata": {"name": "edge"},
            "spec": {"provision": {"components": ["karmadaSearch", "etcd", "karmadaDescheduler"],
                "imageTags": {"etcd": "3.5", "karmadaWebhook": "v1"},
                "featureGates": {"B": false, "A": true}}}}));
        // Optional components only, in install order; lines sorted.
        assert_eq!(
            form.components,
            [
                KarmadaComponent::KarmadaDescheduler,
                KarmadaComponent::KarmadaSearch
            ]
        );
        assert_eq!(form.image_tags, "etcd=3.5\nkarmadaWebhook=v1");
        assert_eq!(form.feature_gates, "A=true\nB=false");
        // No default slips into what an edit sends.
        assert_eq!(
            form.as_instance().unwrap()["spec"]["provision"]["karmadaVersion"],
            ""
        );
    }

    #[test]
    fn provision_form_refuses_bad_lines_by_field() {
        for (key, value, expected) in [
            ("featureGates", "Failover=yes", "featureGates"),
            ("featureGates", "Failover", "not key=value"),
            ("imageTags", "=v1", "empty key"),
        ] {
            let err = ProvisionForm::from_fields(&fields(&[("name", "x"), (key, value)]))
                .instance()
                .unwrap_err();
            assert!(
                err.message.contains(expected),
                "{key}={value}: {}",
                err.message
            );
        }
    }

    #[test]
    fn the_page_escapes_everything_and_never_shows_the_kubeconfig() {
        let evil = "<script>alert(1)</script>";
        let err = ApiError::invalid(evil);
        let p = NewInstancePage {
            paste: PasteForm {
                name: evil.into(),
                alias: evil.into(),
                deletion_policy: "Retain".into(),
                kubeconfig: "token: do-not-show".into(),
            },
            secret: AdoptForm {
                name: evil.into(),
                alias: evil.into(),
                secret_namespace: evil.into(),
                secret_name: evil.into(),
                secret_key: evil.into(),
            },
            provision: ProvisionForm {
                name: evil.into(),
                image_tags: evil.into(),
                feature_gates: evil.into(),
                karmada_version: evil.into(),
                ..ProvisionForm::default()
            },
            refused: Some((Mode::Provision, &err)),
        };
        let viewer = Viewer {
            user: evil,
            csrf: "csrf",
        };
        let page = new_instance_page(&viewer, &p);
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!page.contains("do-not-show"));
        assert!(!format!("{:?}", p.paste).contains("do-not-show"));
        assert_eq!(page.matches("role=\"alert\"").count(), 1);
        assert!(page.contains("selected=\"selected\">Retain"));
    }
}
