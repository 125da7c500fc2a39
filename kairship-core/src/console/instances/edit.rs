//! An instance's edit page, `/ui/instances/{i}/edit` (the overview's **Edit**): one form
//! filled from the stored Instance (`GetInstance`) with what a user changes on an instance:
//! its display name and deletion policy, and, by its mode, the provisioning settings (the
//! new-instance form's fields and parsing, [`ProvisionForm`]; the host namespace is shown,
//! not offered) or the kubeconfig Secret reference ([`AdoptForm`]'s fields).
//!
//! **Save** merges what the user changed in the form into the stored Instance
//! ([`crate::console::merge`]) and sends it as `UpdateInstance` carrying the `resourceVersion`
//! the form was filled from: fields the form does not show (labels, annotations, the host
//! namespace, a component the form cannot offer, ...) are kept, and a change made meanwhile is
//! refused rather than overwritten. Any refusal is shown above the form as it was sent. Who
//! may not `update` the instance gets a notice instead of the form, and their POST is
//! answered 403; the page does not refresh itself, so what is typed is never lost.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::forms::{ProvisionForm, deletion_policy, input, provision_settings};
use super::view::AdoptForm;
use crate::access::{InstanceResource, Verb};
use crate::api::{ApiError, GetInstanceRequest, UpdateInstanceRequest};
use crate::console::html::{Html, url_segment};
use crate::console::merge::edited_object;
use crate::console::page::{Viewer, notice_box, page, post_form, s};
use crate::console::request::{
    Console, Shared, SignedForm, SignedIn, allowed, error_answer, html, see_other, status_of,
};

/// The edit form of an instance, by its mode (which never changes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstanceEdit {
    /// Provision mode: display name, deletion policy and the provisioning settings.
    Provision(ProvisionForm),
    /// Adopt mode: display name and the kubeconfig Secret reference, and the deletion policy
    /// (which [`AdoptForm`] does not carry).
    Adopt {
        /// Name, display name and the Secret reference.
        secret: AdoptForm,
        /// `Delete` or `Retain`.
        deletion_policy: String,
    },
}

fn text(v: &Value, pointer: &str) -> String {
    s(v, pointer).unwrap_or_default().to_owned()
}

fn mode_of(stored: &Value) -> Result<&str, ApiError> {
    match s(stored, "/spec/mode") {
        Some(mode @ ("Provision" | "Adopt")) => Ok(mode),
        other => Err(ApiError::invalid_field(
            "spec.mode",
            format!("{other:?} is neither Provision nor Adopt: edit the Instance as YAML"),
        )),
    }
}

impl InstanceEdit {
    /// The form filled from the stored Instance.
    pub fn of_instance(stored: &Value) -> Result<InstanceEdit, ApiError> {
        Ok(match mode_of(stored)? {
            "Provision" => InstanceEdit::Provision(ProvisionForm::of_instance(stored)),
            _ => InstanceEdit::Adopt {
                secret: AdoptForm {
                    name: text(stored, "/metadata/name"),
                    alias: text(stored, "/spec/alias"),
                    secret_namespace: text(stored, "/spec/kubeconfigSecretRef/namespace"),
                    secret_name: text(stored, "/spec/kubeconfigSecretRef/name"),
                    secret_key: text(stored, "/spec/kubeconfigSecretRef/key"),
                },
                deletion_policy: text(stored, "/spec/deletionPolicy"),
            },
        })
    }

    /// The form as posted for the stored Instance: its name, mode and (Provision) host
    /// namespace are the stored ones, whatever the form says; the rest is what was sent.
    pub fn posted(
        stored: &Value,
        fields: &HashMap<String, String>,
    ) -> Result<InstanceEdit, ApiError> {
        let name = text(stored, "/metadata/name");
        Ok(match mode_of(stored)? {
            "Provision" => InstanceEdit::Provision(ProvisionForm {
                name,
                host_namespace: text(stored, "/spec/provision/hostNamespace"),
                ..ProvisionForm::from_fields(fields)
            }),
            _ => InstanceEdit::Adopt {
                secret: AdoptForm {
                    name,
                    ..AdoptForm::from_fields(fields)
                },
                deletion_policy: fields
                    .get("deletionPolicy")
                    .map(|v| v.trim().to_owned())
                    .unwrap_or_default(),
            },
        })
    }

    /// The Instance as the form says (what an edit compares with the stored one's form).
    pub fn to_instance(&self) -> Result<Value, ApiError> {
        match self {
            InstanceEdit::Provision(form) => form.as_instance(),
            InstanceEdit::Adopt {
                secret,
                deletion_policy,
            } => {
                let mut instance = secret.instance();
                if !deletion_policy.is_empty() {
                    instance["spec"]["deletionPolicy"] = Value::from(deletion_policy.clone());
                }
                Ok(instance)
            }
        }
    }

    fn alias(&self) -> &str {
        match self {
            InstanceEdit::Provision(form) => &form.alias,
            InstanceEdit::Adopt { secret, .. } => &secret.alias,
        }
    }

    fn deletion_policy(&self) -> &str {
        match self {
            InstanceEdit::Provision(form) => &form.deletion_policy,
            InstanceEdit::Adopt {
                deletion_policy, ..
            } => deletion_policy,
        }
    }
}

/// What a form was filled from, carried in its hidden fields: the Instance's
/// `resourceVersion` and a digest of what the form showed of it ([`shown_digest`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilledFrom<'a> {
    /// `metadata.resourceVersion` of the Instance the form was filled from.
    pub resource_version: &'a str,
    /// [`shown_digest`] of that Instance.
    pub shown: &'a str,
}

/// A digest of what the edit form shows of `stored` (its display name, deletion policy and
/// settings, as [`InstanceEdit::to_instance`] writes them).
pub fn shown_digest(stored: &Value) -> Result<String, ApiError> {
    let shown = InstanceEdit::of_instance(stored)?.to_instance()?;
    let bytes = serde_json::to_vec(&shown).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    Ok(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

/// The `resourceVersion` a save carries. When nothing the form shows changed since it was
/// filled (the controllers write the status, someone a label), the stored version: the
/// merge keeps what changed meanwhile, and a write between this read and the update is still
/// refused. Otherwise the version the form was filled from, which the API refuses as stale,
/// so a change made meanwhile to what the form shows is never overwritten.
pub fn version_to_carry(stored: &Value, filled: FilledFrom<'_>) -> Result<String, ApiError> {
    if !filled.shown.is_empty() && shown_digest(stored)? == filled.shown {
        return Ok(text(stored, "/metadata/resourceVersion"));
    }
    Ok(filled.resource_version.to_owned())
}

/// The Instance an edit stores: `stored` with the change from the form as it showed `stored`
/// to the form as posted, carrying `resource_version` ([`version_to_carry`]).
pub fn edited_instance(
    stored: &Value,
    posted: &InstanceEdit,
    resource_version: &str,
) -> Result<Value, ApiError> {
    let before = InstanceEdit::of_instance(stored)?.to_instance()?;
    let after = posted.to_instance()?;
    Ok(edited_object(stored, &before, &after, resource_version))
}

/// The overview of `instance`.
pub fn overview_path(instance: &str) -> String {
    format!("/ui/instances/{}", url_segment(instance))
}

/// The edit page of `instance`: the form (the refusal of the last save above it) for who may
/// change it, else a notice; `filled` says what the form was filled from.
pub fn edit_page(
    viewer: &Viewer<'_>,
    instance: &str,
    form: Option<(&InstanceEdit, FilledFrom<'_>)>,
    err: Option<&ApiError>,
) -> String {
    let back = overview_path(instance);
    let title = format!("Edit {instance}");
    let mut h = Html::new();
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], instance)
        .close("p");
    h.open("h1", &[])
        .raw("Edit instance ")
        .text(instance)
        .close("h1");
    let Some((form, filled)) = form else {
        if let Some(err) = err {
            crate::console::page::error_box(&mut h, err);
        }
        notice_box(
            &mut h,
            "You may not change this instance: ask for a role that may update instances.",
        );
        return page(&title, Some(viewer), h);
    };
    h.open("p", &[("class", "facts")]).raw("Mode ");
    match form {
        InstanceEdit::Provision(p) => {
            h.el("span", &[("id", "mode")], "Provision")
                .raw(" · host namespace ")
                .el("code", &[("id", "host-namespace")], &p.host_namespace);
        }
        InstanceEdit::Adopt { .. } => {
            h.el("span", &[("id", "mode")], "Adopt");
        }
    }
    h.close("p");
    h.raw("<p>Only what you change is written; what the form does not show (labels, annotations, other fields) stays as stored. A change made since this form was opened to what it shows makes the save fail instead of being overwritten.</p>");
    post_form(&mut h, err, &format!("{back}/edit"), viewer.csrf);
    h.open(
        "input",
        &[
            ("type", "hidden"),
            ("name", "resource_version"),
            ("value", filled.resource_version),
        ],
    );
    h.open(
        "input",
        &[
            ("type", "hidden"),
            ("name", "shown"),
            ("value", filled.shown),
        ],
    );
    input(
        &mut h,
        "Display name",
        "alias",
        "alias",
        form.alias(),
        false,
    );
    deletion_policy(&mut h, "deletionPolicy", form.deletion_policy());
    match form {
        InstanceEdit::Provision(p) => {
            h.raw("<h2>Provisioning (the karmada-operator's <code>Karmada</code> object)</h2>");
            provision_settings(&mut h, p, false);
        }
        InstanceEdit::Adopt { secret, .. } => {
            h.raw("<h2>Kubeconfig Secret on the host cluster</h2>");
            input(
                &mut h,
                "Secret namespace",
                "secretNamespace",
                "secretNamespace",
                &secret.secret_namespace,
                true,
            );
            input(
                &mut h,
                "Secret name",
                "secretName",
                "secretName",
                &secret.secret_name,
                true,
            );
            input(
                &mut h,
                "Secret key (optional: the first of kubeconfig, karmada.config, config)",
                "secretKey",
                "secretKey",
                &secret.secret_key,
                false,
            );
        }
    }
    h.raw("<p><button id=\"save\" type=\"submit\">Save</button> ");
    h.el("a", &[("href", &back), ("id", "cancel")], "Cancel");
    h.raw("</p>").close("form");
    page(&title, Some(viewer), h)
}

async fn may_update(console: &Console, signed: &SignedIn, instance: &str) -> bool {
    allowed(
        console,
        &signed.caller,
        Verb::Update,
        InstanceResource::Instances,
        instance,
    )
    .await
}

async fn read_instance(
    console: &Console,
    signed: &SignedIn,
    instance: &str,
) -> Result<Value, ApiError> {
    console
        .api
        .get_instance(
            &signed.caller,
            GetInstanceRequest {
                instance: instance.to_owned(),
            },
        )
        .await
}

/// `GET /ui/instances/{i}/edit`.
pub(in crate::console) async fn edit_form(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    signed: SignedIn,
) -> Response {
    let stored = match read_instance(&console, &signed, &instance).await {
        Ok(stored) => stored,
        Err(err) => return error_answer(&signed, &instance, &err),
    };
    if !may_update(&console, &signed, &instance).await {
        return html(
            StatusCode::OK,
            edit_page(&signed.viewer(), &instance, None, None),
        );
    }
    let filled =
        InstanceEdit::of_instance(&stored).and_then(|form| Ok((form, shown_digest(&stored)?)));
    match filled {
        Ok((form, shown)) => {
            let resource_version = text(&stored, "/metadata/resourceVersion");
            let filled = FilledFrom {
                resource_version: &resource_version,
                shown: &shown,
            };
            html(
                StatusCode::OK,
                edit_page(&signed.viewer(), &instance, Some((&form, filled)), None),
            )
        }
        Err(err) => error_answer(&signed, &instance, &err),
    }
}

/// `POST /ui/instances/{i}/edit` (**Save**): `UpdateInstance` with the stored Instance and the
/// form's change merged in, then the overview; a refusal comes back above the form as sent.
pub(in crate::console) async fn edit(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    if !may_update(&console, &signed, &instance).await {
        let err = ApiError::forbidden(format!(
            "user {:?} may not update instance {instance:?}",
            signed.caller.user
        ));
        return html(
            StatusCode::FORBIDDEN,
            edit_page(&signed.viewer(), &instance, None, Some(&err)),
        );
    }
    let stored = match read_instance(&console, &signed, &instance).await {
        Ok(stored) => stored,
        Err(err) => return error_answer(&signed, &instance, &err),
    };
    let form = match InstanceEdit::posted(&stored, &fields) {
        Ok(form) => form,
        Err(err) => return error_answer(&signed, &instance, &err),
    };
    let field = |name: &str| fields.get(name).map(String::as_str).unwrap_or_default();
    let filled = FilledFrom {
        resource_version: field("resource_version"),
        shown: field("shown"),
    };
    let carried = version_to_carry(&stored, filled);
    let updated = match carried.and_then(|version| edited_instance(&stored, &form, &version)) {
        Ok(body) => {
            let req = UpdateInstanceRequest {
                instance: instance.clone(),
                body,
            };
            console.api.update_instance(&signed.caller, req).await
        }
        Err(err) => Err(err),
    };
    match updated {
        Ok(_) => see_other(&headers, &overview_path(&instance)),
        Err(err) => html(
            status_of(&err),
            edit_page(
                &signed.viewer(),
                &instance,
                Some((&form, filled)),
                Some(&err),
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::instance::KarmadaComponent;

    fn provisioned() -> Value {
        json!({"apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
            "metadata": {"name": "edge", "resourceVersion": "7",
                "annotations": {"team": "platform"}, "labels": {"tier": "gold"},
                "managedFields": [{"manager": "kubectl"}]},
            "spec": {"mode": "Provision", "alias": "Edge", "deletionPolicy": "Delete",
                "provision": {"karmadaVersion": "v1.14.0", "hostNamespace": "karmada-edge",
                    "imageRegistry": "registry.local",
                    "components": ["karmadaSearch", "karmadaAPIServer"],
                    "imageTags": {"etcd": "3.5.16-0"},
                    "featureGates": {"Failover": true}}},
            "status": {"state": "RUNNING"}})
    }

    fn adopted() -> Value {
        json!({"apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
            "metadata": {"name": "prod", "resourceVersion": "3",
                "annotations": {"kairship.io/karmada-namespace": "karmada-prod"}},
            "spec": {"mode": "Adopt", "deletionPolicy": "Retain",
                "kubeconfigSecretRef": {"namespace": "kairship-system", "name": "prod-karmada",
                    "key": "kubeconfig"}}})
    }

    /// The fields a browser posts from the form as `edit_page` shows `stored`, with
    /// `changes` applied (`None`: the field is not sent, as an unticked box).
    fn posted(stored: &Value, changes: &[(&str, Option<&str>)]) -> HashMap<String, String> {
        let form = InstanceEdit::of_instance(stored).unwrap();
        let mut fields: HashMap<String, String> = HashMap::new();
        match &form {
            InstanceEdit::Provision(p) => {
                fields.insert("alias".into(), p.alias.clone());
                fields.insert("deletionPolicy".into(), p.deletion_policy.clone());
                fields.insert("karmadaVersion".into(), p.karmada_version.clone());
                fields.insert("imageRegistry".into(), p.image_registry.clone());
                fields.insert("imageTags".into(), p.image_tags.clone());
                fields.insert("featureGates".into(), p.feature_gates.clone());
                for c in &p.components {
                    fields.insert(format!("component-{}", c.field_name()), "on".into());
                }
            }
            InstanceEdit::Adopt {
                secret,
                deletion_policy,
            } => {
                fields.insert("alias".into(), secret.alias.clone());
                fields.insert("deletionPolicy".into(), deletion_policy.clone());
                fields.insert("secretNamespace".into(), secret.secret_namespace.clone());
                fields.insert("secretName".into(), secret.secret_name.clone());
                fields.insert("secretKey".into(), secret.secret_key.clone());
            }
        }
        for (k, v) in changes {
            match v {
                Some(v) => fields.insert((*k).into(), (*v).into()),
                None => fields.remove(*k),
            };
        }
        fields
    }

    fn save(stored: &Value, changes: &[(&str, Option<&str>)], version: &str) -> Value {
        let form = InstanceEdit::posted(stored, &posted(stored, changes)).unwrap();
        edited_instance(stored, &form, version).unwrap()
    }

    #[test]
    fn the_form_shows_what_the_instance_holds() {
        let InstanceEdit::Provision(p) = InstanceEdit::of_instance(&provisioned()).unwrap() else {
            panic!("a Provision instance");
        };
        assert_eq!(
            (
                p.alias.as_str(),
                p.deletion_policy.as_str(),
                p.karmada_version.as_str()
            ),
            ("Edge", "Delete", "v1.14.0")
        );
        // Only the optional components are offered.
        assert_eq!(p.components, vec![KarmadaComponent::KarmadaSearch]);
        assert_eq!(
            (p.image_tags.as_str(), p.feature_gates.as_str()),
            ("etcd=3.5.16-0", "Failover=true")
        );
        let InstanceEdit::Adopt {
            secret,
            deletion_policy,
        } = InstanceEdit::of_instance(&adopted()).unwrap()
        else {
            panic!("an Adopt instance");
        };
        assert_eq!(deletion_policy, "Retain");
        assert_eq!(
            (
                secret.secret_namespace.as_str(),
                secret.secret_name.as_str(),
                secret.secret_key.as_str()
            ),
            ("kairship-system", "prod-karmada", "kubeconfig")
        );
        let err = InstanceEdit::of_instance(&json!({"spec": {"mode": "Other"}})).unwrap_err();
        assert!(
            err.message.contains("neither Provision nor Adopt"),
            "{}",
            err.message
        );
    }

    #[test]
    fn only_what_the_form_changed_changes() {
        let p = provisioned();
        let a = adopted();
        let changed = |stored: &Value, edit: &dyn Fn(&mut Value)| {
            let mut want = stored.clone();
            want["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
            edit(&mut want);
            want
        };
        for (case, stored, changes, want) in [
            (
                "nothing changed: everything kept, the non-optional component too",
                &p,
                vec![],
                changed(&p, &|_| {}),
            ),
            (
                "display name and deletion policy",
                &p,
                vec![
                    ("alias", Some("Edge EU")),
                    ("deletionPolicy", Some("Retain")),
                ],
                changed(&p, &|w| {
                    w["spec"]["alias"] = json!("Edge EU");
                    w["spec"]["deletionPolicy"] = json!("Retain");
                }),
            ),
            (
                "display name cleared",
                &p,
                vec![("alias", Some(""))],
                changed(&p, &|w| {
                    w["spec"].as_object_mut().unwrap().remove("alias");
                }),
            ),
            (
                "a component ticked, a gate and a tag added, the registry cleared",
                &p,
                vec![
                    ("component-karmadaDescheduler", Some("on")),
                    (
                        "featureGates",
                        Some("Failover=true\nGracefulEviction=false"),
                    ),
                    ("imageTags", Some("etcd=3.5.16-0\nkarmadaScheduler=v1.14.1")),
                    ("imageRegistry", Some("")),
                ],
                changed(&p, &|w| {
                    let provision = &mut w["spec"]["provision"];
                    // The form's list, then what it could not show.
                    provision["components"] =
                        json!(["karmadaDescheduler", "karmadaSearch", "karmadaAPIServer"]);
                    provision["featureGates"]["GracefulEviction"] = json!(false);
                    provision["imageTags"]["karmadaScheduler"] = json!("v1.14.1");
                    provision.as_object_mut().unwrap().remove("imageRegistry");
                }),
            ),
            (
                "every component unticked: the list goes (a core component listed means nothing)",
                &p,
                vec![("component-karmadaSearch", None)],
                changed(&p, &|w| {
                    w["spec"]["provision"]
                        .as_object_mut()
                        .unwrap()
                        .remove("components");
                }),
            ),
            (
                "a posted host namespace is not the form's to change",
                &p,
                vec![
                    ("hostNamespace", Some("elsewhere")),
                    ("karmadaVersion", Some("v1.15.0")),
                ],
                changed(&p, &|w| {
                    w["spec"]["provision"]["karmadaVersion"] = json!("v1.15.0");
                }),
            ),
            (
                "adopted: another Secret, its key left to the default",
                &a,
                vec![
                    ("secretName", Some("prod-rotated")),
                    ("secretKey", Some("")),
                ],
                changed(&a, &|w| {
                    w["spec"]["kubeconfigSecretRef"] =
                        json!({"namespace": "kairship-system", "name": "prod-rotated"});
                }),
            ),
            (
                "adopted: display name and deletion policy, the annotation kept",
                &a,
                vec![
                    ("alias", Some("Production")),
                    ("deletionPolicy", Some("Delete")),
                ],
                changed(&a, &|w| {
                    w["spec"]["alias"] = json!("Production");
                    w["spec"]["deletionPolicy"] = json!("Delete");
                }),
            ),
        ] {
            let version = stored["metadata"]["resourceVersion"].as_str().unwrap();
            assert_eq!(save(stored, &changes, version), want, "{case}");
        }
    }

    #[test]
    fn the_update_carries_the_version_the_form_was_filled_from() {
        // Stored is at 8 now; the form was filled at 7: the API refuses the update.
        let mut stored = provisioned();
        stored["metadata"]["resourceVersion"] = json!("8");
        let saved = save(&stored, &[("alias", Some("x"))], "7");
        assert_eq!(saved["metadata"]["resourceVersion"], "7");
        assert!(saved["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn a_form_is_stale_only_when_what_it_shows_changed() {
        let opened = provisioned();
        let shown = shown_digest(&opened).unwrap();
        let edit = |f: &dyn Fn(&mut Value)| {
            let mut v = opened.clone();
            f(&mut v);
            v["metadata"]["resourceVersion"] = json!("9");
            v
        };
        for (case, stored, carried) in [
            ("nothing changed", opened.clone(), "7"),
            (
                "the status, a label and an annotation changed",
                edit(&|v| {
                    v["status"]["state"] = json!("UPGRADING");
                    v["metadata"]["labels"]["tier"] = json!("silver");
                    v["metadata"]["annotations"]["new"] = json!("x");
                }),
                "9",
            ),
            (
                "the display name changed",
                edit(&|v| v["spec"]["alias"] = json!("Edge 2")),
                "7",
            ),
            (
                "a feature gate changed",
                edit(&|v| v["spec"]["provision"]["featureGates"]["Failover"] = json!(false)),
                "7",
            ),
            (
                "the deletion policy changed",
                edit(&|v| v["spec"]["deletionPolicy"] = json!("Retain")),
                "7",
            ),
        ] {
            let filled = FilledFrom {
                resource_version: "7",
                shown: &shown,
            };
            assert_eq!(
                version_to_carry(&stored, filled).unwrap(),
                carried,
                "{case}"
            );
        }
        // A form without the digest (sent by an older page) carries its own version.
        let moved_on = edit(&|v| v["status"]["state"] = json!("UPGRADING"));
        let filled = FilledFrom {
            resource_version: "7",
            shown: "",
        };
        assert_eq!(version_to_carry(&moved_on, filled).unwrap(), "7");
    }

    #[test]
    fn what_the_form_cannot_parse_is_refused_before_the_api() {
        for (field, value, says) in [
            ("featureGates", "Failover=yes", "not true or false"),
            ("imageTags", "etcd", "not key=value"),
        ] {
            let stored = provisioned();
            let form =
                InstanceEdit::posted(&stored, &posted(&stored, &[(field, Some(value))])).unwrap();
            let err = edited_instance(&stored, &form, "7").unwrap_err();
            assert!(err.message.contains(says), "{field}: {}", err.message);
        }
        // An emptied version is sent as it is, for the API to refuse (no default slips in).
        let stored = provisioned();
        let saved = save(&stored, &[("karmadaVersion", Some(""))], "7");
        assert_eq!(saved["spec"]["provision"]["karmadaVersion"], "");
    }

    #[test]
    fn the_page_escapes_everything_and_keeps_the_form_as_sent() {
        let evil = "<script>alert(1)</script>";
        let viewer = Viewer {
            user: evil,
            csrf: "c0ffee",
        };
        let mut stored = provisioned();
        stored["spec"]["alias"] = json!(evil);
        stored["spec"]["provision"]["imageTags"] = json!({"etcd": evil});
        let form = InstanceEdit::posted(
            &stored,
            &posted(&stored, &[("karmadaVersion", Some("1.14"))]),
        )
        .unwrap();
        let err = ApiError::invalid(format!("spec: {evil}"));
        let filled = FilledFrom {
            resource_version: "7",
            shown: "d1",
        };
        let out = edit_page(&viewer, evil, Some((&form, filled)), Some(&err));
        assert!(!out.contains("<script>alert"), "{out}");
        assert!(out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert_eq!(out.matches("role=\"alert\"").count(), 1);
        assert!(out.contains("name=\"_csrf\" value=\"c0ffee\""), "{out}");
        assert!(
            out.contains("name=\"resource_version\" value=\"7\""),
            "{out}"
        );
        assert!(out.contains("name=\"shown\" value=\"d1\""), "{out}");
        assert!(
            out.contains("id=\"karmadaVersion\" value=\"1.14\""),
            "{out}"
        );
        assert!(out.contains("checked=\"checked\""), "{out}");
        assert!(out.contains("id=\"host-namespace\">karmada-edge<"), "{out}");
        // No field to move the control plane to another namespace.
        assert!(!out.contains("name=\"hostNamespace\""), "{out}");
        assert!(out.contains("id=\"save\""));
        let adopted_page = edit_page(
            &viewer,
            "prod",
            Some((
                &InstanceEdit::of_instance(&adopted()).unwrap(),
                FilledFrom {
                    resource_version: "3",
                    shown: "d2",
                },
            )),
            None,
        );
        assert!(
            adopted_page.contains("id=\"secretName\" value=\"prod-karmada\""),
            "{adopted_page}"
        );
        assert!(
            adopted_page.contains("selected=\"selected\">Retain"),
            "{adopted_page}"
        );
        assert!(!adopted_page.contains("role=\"alert\""));
    }

    #[test]
    fn the_overview_offers_edit_and_delete_to_who_may() {
        let viewer = Viewer {
            user: "u",
            csrf: "c0ffee",
        };
        for (can_update, can_delete) in [(false, false), (true, false), (false, true), (true, true)]
        {
            let o = super::super::view::Overview {
                instance: provisioned(),
                can_update,
                can_delete,
                ..Default::default()
            };
            let out = super::super::view::overview_page(&viewer, "edge", &o, false);
            assert_eq!(
                out.contains("href=\"/ui/instances/edge/edit\""),
                can_update,
                "{can_update} {can_delete}: {out}"
            );
            assert_eq!(
                out.contains("href=\"/ui/instances/edge/delete\""),
                can_delete,
                "{can_update} {can_delete}: {out}"
            );
            assert!(out.contains("id=\"alias\">Edge<"), "{out}");
            assert!(out.contains("id=\"deletion-policy\">Delete<"), "{out}");
        }
    }

    #[test]
    fn who_may_not_update_gets_a_notice_and_no_form() {
        let viewer = Viewer {
            user: "viewer",
            csrf: "c0ffee",
        };
        let err = ApiError::forbidden("user \"viewer\" may not update instance \"edge\"");
        for err in [None, Some(&err)] {
            let out = edit_page(&viewer, "edge", None, err);
            assert!(out.contains("You may not change this instance"), "{out}");
            assert!(!out.contains("id=\"save\""), "{out}");
            assert!(!out.contains("action=\"/ui/instances/edge/edit\""), "{out}");
            assert_eq!(out.contains("PermissionDenied"), err.is_some(), "{out}");
        }
    }
}
