//! The csrsigning controller of kube-controller-manager for the
//! `kubernetes.io/kube-apiserver-client` and `kubernetes.io/kubelet-serving` signers
//! (kubernetes `pkg/controller/certificates/signer/signer.go`, with
//! `--cluster-signing-cert-file` set to the cluster CA): an approved, not denied, not failed
//! CSR without a certificate gets one signed by the cluster CA. A client certificate
//! authenticates to this API server as CN = user, O = groups; a kubelet serving certificate
//! carries the request's DNS and IP names, so clients that verify kubelets against the
//! cluster CA (kube-apiserver, metrics-server without `--kubelet-insecure-tls`) accept it. A
//! request the signer does not accept gets a `Failed` condition (`SignerValidationFailure`)
//! with upstream's message. Other signers are left to their own controllers.
//!
//! It runs in every sandbox cluster, whatever `workload_controllers` says: the clusters the
//! sandbox stands for run it (kube-controller-manager's default controllers; Karmada's control
//! plane runs it for the karmada-agent's certificates), and it acts only on CSRs someone
//! approved, so a test sees nothing it did not ask for.

use super::Pass;
use super::objects::{Writer, str_at};
use crate::apiserver::certificates::{
    KUBE_APISERVER_CLIENT, MIN_EXPIRATION_SECONDS, has_condition, request_pem, signer_name, usages,
};
use crate::apiserver::resources::GroupResource;
use crate::sim::Simulator;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{ExtendedKeyUsagePurpose, KeyUsagePurpose};
use serde_json::{Value, json};
use std::sync::Arc;

const MANAGER: &str = "kube-controller-manager";
/// The signer of kubelet serving certificates.
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
/// `--cluster-signing-duration`'s default: one year.
pub const CLUSTER_SIGNING_SECONDS: i64 = 365 * 24 * 3600;

/// What the signer does with one CSR.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Not approved yet, denied, failed, signed already, or another signer's.
    Nothing,
    /// Sign for this many seconds with these usages.
    Sign {
        /// Validity.
        seconds: i64,
    },
    /// Mark it failed with this message.
    Fail(String),
}

/// The usages `kubernetes.io/kube-apiserver-client` certificates may carry
/// (`validAPIServerClientUsages`): client auth, with digital signature and key encipherment.
fn client_usages_ok(usages: &[String]) -> Result<(), String> {
    let allowed = ["digital signature", "key encipherment", "client auth"];
    if let Some(bad) = usages.iter().find(|u| !allowed.contains(&u.as_str())) {
        return Err(format!("invalid usage for client certificate: {bad}"));
    }
    if !usages.iter().any(|u| u == "client auth") {
        return Err("missing required usages: client auth".into());
    }
    Ok(())
}

/// What a kubelet-serving request says of itself (parsed from `spec.request`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RequestNames {
    /// Subject organizations.
    pub organizations: Vec<String>,
    /// Subject common name.
    pub common_name: String,
    /// DNS subject alternative names.
    pub dns_names: Vec<String>,
    /// IP subject alternative names.
    pub ip_addresses: Vec<String>,
    /// Email subject alternative names.
    pub emails: Vec<String>,
    /// URI subject alternative names.
    pub uris: Vec<String>,
}

/// The names of a PEM certificate request; `None` when it cannot be read.
pub fn request_names(pem: &str) -> Option<RequestNames> {
    use rcgen::{DnType, DnValue, SanType};
    let request = rcgen::CertificateSigningRequestParams::from_pem(pem).ok()?;
    let text = |v: &DnValue| match v {
        DnValue::Utf8String(s) => s.clone(),
        DnValue::PrintableString(s) => s.as_str().to_owned(),
        other => format!("{other:?}"),
    };
    let mut names = RequestNames::default();
    for (kind, value) in request.params.distinguished_name.iter() {
        match kind {
            DnType::OrganizationName => names.organizations.push(text(value)),
            DnType::CommonName => names.common_name = text(value),
            _ => {}
        }
    }
    for san in &request.params.subject_alt_names {
        match san {
            SanType::DnsName(n) => names.dns_names.push(n.to_string()),
            SanType::IpAddress(ip) => names.ip_addresses.push(ip.to_string()),
            SanType::Rfc822Name(e) => names.emails.push(e.to_string()),
            SanType::URI(u) => names.uris.push(u.to_string()),
            _ => {}
        }
    }
    Some(names)
}

/// kube-controller-manager's check of a kubelet serving request (kubernetes
/// `pkg/apis/certificates/helpers.go`, `ValidateKubeletServingCSR`): organization exactly
/// `system:nodes`, at least one DNS or IP name, no email or URI names, usages exactly
/// {digital signature, key encipherment, server auth} or {digital signature, server auth},
/// common name `system:node:<name>`.
pub fn kubelet_serving_ok(names: &RequestNames, usages: &[String]) -> Result<(), String> {
    if names.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    if names.dns_names.is_empty() && names.ip_addresses.is_empty() {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if !names.emails.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !names.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    let mut set: Vec<&str> = usages.iter().map(String::as_str).collect();
    set.sort_unstable();
    set.dedup();
    let rsa = ["digital signature", "key encipherment", "server auth"];
    let no_rsa = ["digital signature", "server auth"];
    if set != rsa && set != no_rsa {
        return Err("usages did not match [digital signature key encipherment server auth]".into());
    }
    if !names.common_name.starts_with("system:node:") {
        return Err("subject CN must begin with \"system:node:\"".into());
    }
    Ok(())
}

/// What `csr` needs.
pub fn decide(csr: &Value) -> Action {
    let signer = signer_name(csr);
    if (signer != KUBE_APISERVER_CLIENT && signer != KUBELET_SERVING)
        || !has_condition(csr, "Approved")
        || has_condition(csr, "Denied")
        || has_condition(csr, "Failed")
        || !str_at(csr, &["status", "certificate"]).is_empty()
    {
        return Action::Nothing;
    }
    let checked = if signer == KUBELET_SERVING {
        match request_pem(csr).as_deref().and_then(request_names) {
            Some(names) => kubelet_serving_ok(&names, &usages(csr)),
            None => Err("unable to parse csr".into()),
        }
    } else {
        client_usages_ok(&usages(csr))
    };
    if let Err(message) = checked {
        return Action::Fail(message);
    }
    let asked = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .map_or(CLUSTER_SIGNING_SECONDS, |s| s.max(MIN_EXPIRATION_SECONDS));
    Action::Sign {
        seconds: asked.min(CLUSTER_SIGNING_SECONDS),
    }
}

fn key_usages(usages: &[String]) -> (Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>) {
    let mut key = Vec::new();
    let mut extended = Vec::new();
    for usage in usages {
        match usage.as_str() {
            "digital signature" => key.push(KeyUsagePurpose::DigitalSignature),
            "key encipherment" => key.push(KeyUsagePurpose::KeyEncipherment),
            "client auth" => extended.push(ExtendedKeyUsagePurpose::ClientAuth),
            "server auth" => extended.push(ExtendedKeyUsagePurpose::ServerAuth),
            _ => {}
        }
    }
    (key, extended)
}

fn failed(message: &str) -> Value {
    let now = crate::apiserver::meta::now_rfc3339();
    json!({"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
           "message": message, "lastUpdateTime": now, "lastTransitionTime": now})
}

/// Signs or fails every CSR that needs it.
pub fn sync_all(pass: &Pass) {
    let csrs = pass.list("certificates.k8s.io", "certificatesigningrequests");
    if csrs.is_empty() {
        return;
    }
    let writer = Writer {
        state: pass.state,
        manager: MANAGER,
    };
    for csr in &csrs {
        let outcome = match decide(csr) {
            Action::Nothing => continue,
            Action::Fail(message) => Err(message),
            Action::Sign { seconds } => {
                let (key, extended) = key_usages(&usages(csr));
                match (request_pem(csr), pass.state.pki()) {
                    (Some(pem), Ok(pki)) => pki
                        .sign_request(&pem, key, extended, seconds)
                        .map_err(|e| e.to_string()),
                    (None, _) => Err("the request is not PEM".into()),
                    (_, Err(e)) => Err(e.to_string()),
                }
            }
        };
        // Another pass retries a write that lost a race.
        let _ = writer.update(
            "certificates.k8s.io",
            "certificatesigningrequests",
            csr,
            Some("status"),
            move |c| {
                if !c.get("status").is_some_and(Value::is_object) {
                    c["status"] = json!({});
                }
                match outcome {
                    Ok(cert) => c["status"]["certificate"] = json!(STANDARD.encode(cert)),
                    Err(message) => {
                        let mut conditions = c["status"]["conditions"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default();
                        conditions.push(failed(&message));
                        c["status"]["conditions"] = Value::Array(conditions);
                    }
                }
            },
        );
    }
}

/// Signs CSRs whenever they change, until the cluster shuts down.
pub async fn run(sim: Arc<Simulator>) {
    let state = &sim.state;
    let mut changes = state.store.subscribe_resource(&GroupResource::new(
        "certificates.k8s.io",
        "certificatesigningrequests",
    ));
    loop {
        sync_all(&Pass {
            state,
            now: sim.controller_now(),
        });
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(conditions: Value, usages: Value, extra: Value) -> Value {
        let mut c = json!({"spec": {"signerName": KUBE_APISERVER_CLIENT, "usages": usages},
                           "status": {"conditions": conditions}});
        if let Some(map) = extra.as_object() {
            for (k, v) in map {
                c["spec"][k] = v.clone();
            }
        }
        c
    }

    #[test]
    fn signs_only_approved_client_requests() {
        let approved = json!([{"type": "Approved", "status": "True"}]);
        let client = json!(["digital signature", "key encipherment", "client auth"]);
        let cases = [
            (
                csr(approved.clone(), client.clone(), json!({})),
                Action::Sign {
                    seconds: CLUSTER_SIGNING_SECONDS,
                },
            ),
            (
                csr(
                    approved.clone(),
                    client.clone(),
                    json!({"expirationSeconds": 3600}),
                ),
                Action::Sign { seconds: 3600 },
            ),
            (
                csr(
                    approved.clone(),
                    client.clone(),
                    json!({"expirationSeconds": 999_999_999}),
                ),
                Action::Sign {
                    seconds: CLUSTER_SIGNING_SECONDS,
                },
            ),
            (csr(json!([]), client.clone(), json!({})), Action::Nothing),
            (
                csr(
                    json!([{"type": "Approved"}, {"type": "Failed", "status": "True"}]),
                    client.clone(),
                    json!({}),
                ),
                Action::Nothing,
            ),
            (
                csr(
                    approved.clone(),
                    client.clone(),
                    json!({"signerName": "example.com/other"}),
                ),
                Action::Nothing,
            ),
            (
                csr(approved.clone(), json!(["server auth"]), json!({})),
                Action::Fail("invalid usage for client certificate: server auth".into()),
            ),
            (
                csr(approved.clone(), json!(["digital signature"]), json!({})),
                Action::Fail("missing required usages: client auth".into()),
            ),
        ];
        for (c, want) in cases {
            assert_eq!(decide(&c), want, "{c}");
        }
        let mut signed = csr(approved, client, json!({}));
        signed["status"]["certificate"] = json!("Y2VydA==");
        assert_eq!(decide(&signed), Action::Nothing);
    }

    fn serving_request(cn: &str, orgs: &[&str], dns: &[&str], ips: &[&str]) -> String {
        use rcgen::{CertificateParams, DnType, KeyPair, SanType};
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, cn);
        for org in orgs {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *org);
        }
        for name in dns {
            params
                .subject_alt_names
                .push(SanType::DnsName((*name).try_into().unwrap()));
        }
        for ip in ips {
            params
                .subject_alt_names
                .push(SanType::IpAddress(ip.parse().unwrap()));
        }
        let key = KeyPair::generate().unwrap();
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    fn serving_csr(pem: &str, usages: Value) -> Value {
        json!({"spec": {"signerName": KUBELET_SERVING, "usages": usages,
                        "request": STANDARD.encode(pem)},
               "status": {"conditions": [{"type": "Approved", "status": "True"}]}})
    }

    #[test]
    fn kubelet_serving_requests_are_checked_as_kube_controller_manager_does() {
        let serving = json!(["digital signature", "key encipherment", "server auth"]);
        let good = serving_request(
            "system:node:vnode-w1-n1",
            &["system:nodes"],
            &["vnode-w1-n1"],
            &["10.0.0.7"],
        );
        assert_eq!(
            decide(&serving_csr(&good, serving.clone())),
            Action::Sign {
                seconds: CLUSTER_SIGNING_SECONDS
            }
        );
        assert_eq!(
            decide(&serving_csr(
                &good,
                json!(["digital signature", "server auth"])
            )),
            Action::Sign {
                seconds: CLUSTER_SIGNING_SECONDS
            }
        );
        let names = request_names(&good).unwrap();
        assert_eq!(names.ip_addresses, ["10.0.0.7"]);
        assert_eq!(names.dns_names, ["vnode-w1-n1"]);
        for (pem, usages, message) in [
            (
                serving_request("system:node:n", &["example"], &["n"], &[]),
                serving.clone(),
                "subject organization is not system:nodes",
            ),
            (
                serving_request("system:node:n", &["system:nodes"], &[], &[]),
                serving.clone(),
                "DNS or IP subjectAltName is required",
            ),
            (
                serving_request("n", &["system:nodes"], &["n"], &[]),
                serving.clone(),
                "subject CN must begin with \"system:node:\"",
            ),
            (
                good.clone(),
                json!(["digital signature", "key encipherment", "client auth"]),
                "usages did not match [digital signature key encipherment server auth]",
            ),
            (
                "not a request".to_owned(),
                serving.clone(),
                "unable to parse csr",
            ),
        ] {
            assert_eq!(
                decide(&serving_csr(&pem, usages)),
                Action::Fail(message.into()),
                "{message}"
            );
        }
    }
}
