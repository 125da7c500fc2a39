//! The csrsigning controller of kube-controller-manager for the
//! `kubernetes.io/kube-apiserver-client` signer (kubernetes
//! `pkg/controller/certificates/signer/signer.go`, with `--cluster-signing-cert-file` set to the
//! cluster CA): an approved, not denied, not failed CSR without a certificate gets one signed
//! by the cluster CA, so that it authenticates to this API server as CN = user, O = groups. A
//! request whose usages the signer does not allow gets a `Failed` condition
//! (`SignerValidationFailure`), as upstream. Other signers are left to their own controllers.
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

/// What `csr` needs.
pub fn decide(csr: &Value) -> Action {
    if signer_name(csr) != KUBE_APISERVER_CLIENT
        || !has_condition(csr, "Approved")
        || has_condition(csr, "Denied")
        || has_condition(csr, "Failed")
        || !str_at(csr, &["status", "certificate"]).is_empty()
    {
        return Action::Nothing;
    }
    if let Err(message) = client_usages_ok(&usages(csr)) {
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
}
