//! The proxier's serving certificate from the computing cluster, as upstream Kubeocean gets
//! it (gocrane/kubeocean `pkg/proxier/cert_manager.go`, `generateCertificateDataOnce`,
//! `createCSR`, `submitCSR`, `approveCSR`): a `kubernetes.io/kubelet-serving`
//! CertificateSigningRequest with subject `system:node:<node>` / `system:nodes`, naming the
//! virtual nodes and the proxier's addresses, approved by the manager and signed by the
//! cluster's CA, so clients that verify kubelet certificates against that CA (kube-apiserver
//! with `--kubelet-certificate-authority`, metrics-server without `--kubelet-insecure-tls`)
//! accept the proxier. When the cluster does not issue one (the request is denied, fails, is
//! not signed in time, or the manager may not create or approve it), the proxier serves a
//! self-signed certificate and the binding says so ([`ServingCertSource::SelfSigned`]).
//!
//! Renewal follows the kubelet's certificate manager (kubernetes
//! `staging/src/k8s.io/client-go/util/certificate/certificate_manager.go`,
//! `nextRotationDeadline`): a new certificate once 80% of the current one's lifetime has
//! passed; a self-signed fallback is replaced by a cluster certificate after
//! [`SELF_SIGNED_RETRY`].

use std::net::IpAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jiff::Timestamp;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

/// The signer of kubelet serving certificates.
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The reason of the manager's approval (upstream's `approveCSR`).
pub const APPROVAL_REASON: &str = "KubeoceanProxierAutoApproval";
/// Label naming the binding a request is for.
pub const BINDING_LABEL: &str = "kubeocean.io/cluster-binding";
/// How long a self-signed fallback is served before the cluster is asked again.
pub const SELF_SIGNED_RETRY: Duration = Duration::from_secs(600);

/// Who approves the proxiers' requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    /// The manager approves them (upstream's behaviour; needs `approve` on the signer).
    Manager,
    /// Another approver does (a cluster admin, or a policy controller); the manager waits.
    External,
}

/// How the manager gets serving certificates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingCertConfig {
    /// Ask the cluster at all; `false` serves self-signed certificates (development).
    pub from_cluster: bool,
    /// Who approves.
    pub approval: Approval,
    /// How long to wait for the certificate before falling back.
    pub wait: Duration,
    /// `spec.expirationSeconds` asked for (the signer may cap it); `None`: the signer's
    /// default (`--cluster-signing-duration`, one year by default).
    pub expiration_seconds: Option<i32>,
}

impl Default for ServingCertConfig {
    fn default() -> Self {
        ServingCertConfig {
            from_cluster: true,
            approval: Approval::Manager,
            wait: Duration::from_secs(60),
            expiration_seconds: None,
        }
    }
}

/// The names a proxier's certificate is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingNames {
    /// The node named in the subject (`system:node:<node>`).
    pub node: String,
    /// DNS subject alternative names (virtual nodes first).
    pub dns: Vec<String>,
    /// IP subject alternative names.
    pub ips: Vec<IpAddr>,
}

/// The names for a proxier of `binding` serving `virtual_nodes` at `hosts` (addresses or DNS
/// names): the subject names the first virtual node (the binding when there is none yet, as
/// upstream names the binding), and every virtual node and DNS host is a DNS name.
pub fn serving_names(binding: &str, virtual_nodes: &[String], hosts: &[String]) -> ServingNames {
    let mut nodes = virtual_nodes.to_vec();
    nodes.sort();
    nodes.dedup();
    let node = nodes.first().cloned().unwrap_or_else(|| binding.to_owned());
    let mut dns = nodes;
    let mut ips = Vec::new();
    for host in hosts {
        match host.parse::<IpAddr>() {
            Ok(ip) if !ips.contains(&ip) => ips.push(ip),
            Ok(_) => {}
            Err(_) if !host.is_empty() && !dns.contains(host) => dns.push(host.clone()),
            Err(_) => {}
        }
    }
    if dns.is_empty() && ips.is_empty() {
        dns.push(node.clone());
    }
    ServingNames { node, dns, ips }
}

/// A PEM certificate request for `names` and its private key (PEM), as kube-controller-manager
/// accepts for the kubelet-serving signer (CN `system:node:<node>`, O `system:nodes`).
pub fn serving_request(names: &ServingNames) -> Result<(String, String), String> {
    use rcgen::{CertificateParams, DnType, KeyPair, SanType};
    let fail = |e: rcgen::Error| format!("cannot make the certificate request: {e}");
    let key = KeyPair::generate().map_err(fail)?;
    let mut params = CertificateParams::new(names.dns.clone()).map_err(fail)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, format!("system:node:{}", names.node));
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:nodes");
    params
        .subject_alt_names
        .extend(names.ips.iter().map(|ip| SanType::IpAddress(*ip)));
    let request = params.serialize_request(&key).map_err(fail)?;
    Ok((request.pem().map_err(fail)?, key.serialize_pem()))
}

/// The request object named `name` for `binding` (upstream's `submitCSR`: signer,
/// usages of a kubelet serving certificate, labels that say whose it is).
pub fn csr_object(
    name: &str,
    binding: &str,
    request_pem: &str,
    expiration_seconds: Option<i32>,
) -> Result<CertificateSigningRequest, String> {
    let mut spec = json!({
        "request": STANDARD.encode(request_pem),
        "signerName": KUBELET_SERVING_SIGNER,
        "usages": ["digital signature", "key encipherment", "server auth"],
    });
    if let Some(seconds) = expiration_seconds {
        spec["expirationSeconds"] = json!(seconds);
    }
    serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name, "labels": {BINDING_LABEL: binding}},
        "spec": spec,
    }))
    .map_err(|e| format!("cannot build the CertificateSigningRequest: {e}"))
}

/// Where a request stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CsrState {
    /// Approved and not signed yet.
    Pending,
    /// Not yet approved by anyone.
    Unapproved,
    /// Signed: the certificate (PEM).
    Issued(String),
    /// Denied, with the denial's reason and message.
    Denied(String),
    /// Failed (the signer refused it), with the reason and message.
    Failed(String),
}

fn condition_text(c: &CertificateSigningRequestCondition) -> String {
    let reason = c.reason.as_deref().unwrap_or("");
    let message = c.message.as_deref().unwrap_or("");
    match (reason.is_empty(), message.is_empty()) {
        (true, true) => c.type_.clone(),
        (false, true) => reason.to_owned(),
        (true, false) => message.to_owned(),
        (false, false) => format!("{reason}: {message}"),
    }
}

/// Where `csr` stands (`Denied` and `Failed` win over a certificate, as the signer leaves
/// such requests unsigned).
pub fn csr_state(csr: &CertificateSigningRequest) -> CsrState {
    let status = csr.status.as_ref();
    let conditions = status
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let find = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t && c.status == "True")
    };
    if let Some(c) = find("Denied") {
        return CsrState::Denied(condition_text(c));
    }
    if let Some(c) = find("Failed") {
        return CsrState::Failed(condition_text(c));
    }
    if let Some(cert) = status.and_then(|s| s.certificate.as_ref())
        && !cert.0.is_empty()
    {
        return CsrState::Issued(String::from_utf8_lossy(&cert.0).into_owned());
    }
    if find("Approved").is_none() {
        return CsrState::Unapproved;
    }
    CsrState::Pending
}

/// When a certificate valid from `not_before` to `not_after` is renewed: once 80% of its
/// lifetime has passed (the kubelet's certificate manager renews between 70% and 90%).
pub fn renew_at(not_before: Timestamp, not_after: Timestamp) -> Timestamp {
    let lifetime = not_after.as_millisecond() - not_before.as_millisecond();
    let at = not_before.as_millisecond() + lifetime.max(0) / 10 * 8;
    Timestamp::from_millisecond(at).unwrap_or(not_after)
}

/// Where a serving certificate came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServingCertSource {
    /// Signed by the computing cluster's CA through the named request.
    Cluster(String),
    /// Self-signed; why the cluster's was not used.
    SelfSigned(String),
}

/// A serving certificate, its key and when to replace it.
#[derive(Clone, Debug)]
pub struct ServingCert {
    /// Certificate (PEM).
    pub cert_pem: String,
    /// Private key (PEM).
    pub key_pem: String,
    /// Where it came from.
    pub source: ServingCertSource,
    /// When to get a new one.
    pub renew_at: Timestamp,
}

/// The proxier's certificate for `names`: from the cluster when it issues one within
/// `config.wait`, else self-signed with the reason. The request is deleted once decided (as
/// upstream does): its key lives only in this process, so nobody else can use it. An error
/// only when not even a self-signed certificate can be made.
pub async fn obtain(
    client: &Client,
    binding: &str,
    names: &ServingNames,
    config: &ServingCertConfig,
) -> Result<ServingCert, String> {
    let why = if config.from_cluster {
        match request_from_cluster(client, binding, names, config).await {
            Ok(cert) => return Ok(cert),
            Err(why) => why,
        }
    } else {
        "the manager is configured to serve self-signed certificates".to_owned()
    };
    tracing::warn!(
        binding,
        "the proxier serves a self-signed certificate: {why}"
    );
    let hosts: Vec<String> = names
        .dns
        .iter()
        .cloned()
        .chain(names.ips.iter().map(IpAddr::to_string))
        .collect();
    let (cert_pem, key_pem) = crate::proxier::self_signed_serving_cert(&hosts)
        .map_err(|e| format!("cannot make the proxier's certificate: {e}"))?;
    let retry = jiff::SignedDuration::try_from(SELF_SIGNED_RETRY).unwrap_or_default();
    Ok(ServingCert {
        cert_pem,
        key_pem,
        source: ServingCertSource::SelfSigned(why),
        renew_at: Timestamp::now()
            .checked_add(retry)
            .unwrap_or(Timestamp::MAX),
    })
}

/// A certificate signed by the cluster's CA for `names`, or why there is none.
pub async fn request_from_cluster(
    client: &Client,
    binding: &str,
    names: &ServingNames,
    config: &ServingCertConfig,
) -> Result<ServingCert, String> {
    let (request_pem, key_pem) = serving_request(names)?;
    let name = format!(
        "kubeocean-proxier-{binding}-{}",
        Timestamp::now().as_nanosecond()
    );
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    let object = csr_object(&name, binding, &request_pem, config.expiration_seconds)?;
    api.create(&PostParams::default(), &object)
        .await
        .map_err(|e| format!("cannot create CertificateSigningRequest {name}: {e}"))?;
    let result = wait_for_certificate(&api, &name, binding, config).await;
    if let Err(e) = api.delete(&name, &DeleteParams::default()).await {
        tracing::debug!(
            binding,
            "cannot delete CertificateSigningRequest {name}: {e}"
        );
    }
    let cert_pem = result?;
    let (not_before, not_after) = crate::proxier::certificate_validity(&cert_pem)
        .ok_or_else(|| format!("the certificate of {name} cannot be read"))?;
    Ok(ServingCert {
        cert_pem,
        key_pem,
        source: ServingCertSource::Cluster(name),
        renew_at: renew_at(not_before, not_after),
    })
}

async fn wait_for_certificate(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    binding: &str,
    config: &ServingCertConfig,
) -> Result<String, String> {
    let deadline = tokio::time::Instant::now() + config.wait;
    let mut approved = false;
    loop {
        let csr = api
            .get(name)
            .await
            .map_err(|e| format!("cannot read CertificateSigningRequest {name}: {e}"))?;
        match csr_state(&csr) {
            CsrState::Issued(pem) => return Ok(pem),
            CsrState::Denied(why) => {
                return Err(format!(
                    "CertificateSigningRequest {name} was denied ({why})"
                ));
            }
            CsrState::Failed(why) => {
                return Err(format!("CertificateSigningRequest {name} failed ({why})"));
            }
            CsrState::Unapproved if config.approval == Approval::Manager && !approved => {
                approve(api, csr, binding).await?;
                approved = true;
                continue;
            }
            CsrState::Unapproved | CsrState::Pending => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "CertificateSigningRequest {name} was not signed within {} s",
                config.wait.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn approve(
    api: &Api<CertificateSigningRequest>,
    mut csr: CertificateSigningRequest,
    binding: &str,
) -> Result<(), String> {
    let name = csr.metadata.name.clone().unwrap_or_default();
    let status = csr.status.get_or_insert_with(Default::default);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(CertificateSigningRequestCondition {
            type_: "Approved".to_owned(),
            status: "True".to_owned(),
            reason: Some(APPROVAL_REASON.to_owned()),
            message: Some(format!(
                "approved by the Kubeocean manager for the proxier of ClusterBinding {binding}"
            )),
            last_update_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                Timestamp::now(),
            )),
            ..Default::default()
        });
    api.replace_subresource("approval", &name, &PostParams::default(), &csr)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot approve CertificateSigningRequest {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_put_the_virtual_nodes_first_and_split_addresses() {
        let cases: [(&[&str], &[&str], ServingNames); 3] = [
            (
                &["vnode-w1-n2", "vnode-w1-n1"],
                &["10.0.0.5", "localhost", "10.0.0.5"],
                ServingNames {
                    node: "vnode-w1-n1".into(),
                    dns: vec![
                        "vnode-w1-n1".into(),
                        "vnode-w1-n2".into(),
                        "localhost".into(),
                    ],
                    ips: vec!["10.0.0.5".parse().unwrap()],
                },
            ),
            (
                &[],
                &["127.0.0.1"],
                ServingNames {
                    node: "worker-1".into(),
                    dns: vec![],
                    ips: vec!["127.0.0.1".parse().unwrap()],
                },
            ),
            (
                &[],
                &[""],
                ServingNames {
                    node: "worker-1".into(),
                    dns: vec!["worker-1".into()],
                    ips: vec![],
                },
            ),
        ];
        for (nodes, hosts, want) in cases {
            let nodes: Vec<String> = nodes.iter().map(|s| (*s).to_owned()).collect();
            let hosts: Vec<String> = hosts.iter().map(|s| (*s).to_owned()).collect();
            assert_eq!(serving_names("worker-1", &nodes, &hosts), want);
        }
    }

    #[test]
    fn the_request_is_a_kubelet_serving_request() {
        let names = serving_names("b", &["vnode-w1-n1".into()], &["10.0.0.5".into()]);
        let (pem, key) = serving_request(&names).unwrap();
        assert!(
            pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----"),
            "{pem}"
        );
        assert!(key.contains("PRIVATE KEY"));
        let csr = csr_object("r", "b", &pem, Some(3600)).unwrap();
        let spec = &csr.spec;
        assert_eq!(spec.signer_name, KUBELET_SERVING_SIGNER);
        assert_eq!(spec.expiration_seconds, Some(3600));
        assert_eq!(String::from_utf8(spec.request.0.clone()).unwrap(), pem);
        assert_eq!(
            csr.metadata
                .labels
                .unwrap()
                .get(BINDING_LABEL)
                .map(String::as_str),
            Some("b")
        );
    }

    #[test]
    fn csr_states() {
        let csr = |status: serde_json::Value| -> CertificateSigningRequest {
            serde_json::from_value(json!({
                "metadata": {"name": "r"},
                "spec": {"request": "", "signerName": KUBELET_SERVING_SIGNER},
                "status": status}))
            .unwrap()
        };
        let approved = json!({"type": "Approved", "status": "True"});
        let cases = [
            (json!({}), CsrState::Unapproved),
            (json!({"conditions": [approved]}), CsrState::Pending),
            (
                json!({"conditions": [approved], "certificate": STANDARD.encode("PEM")}),
                CsrState::Issued("PEM".into()),
            ),
            (
                json!({"conditions": [{"type": "Denied", "status": "True", "reason": "Policy",
                                       "message": "not a node"}]}),
                CsrState::Denied("Policy: not a node".into()),
            ),
            (
                json!({"conditions": [approved, {"type": "Failed", "status": "True",
                       "reason": "SignerValidationFailure"}]}),
                CsrState::Failed("SignerValidationFailure".into()),
            ),
        ];
        for (status, want) in cases {
            assert_eq!(csr_state(&csr(status.clone())), want, "{status}");
        }
    }

    #[test]
    fn renewal_after_four_fifths_of_the_lifetime() {
        let t = |s: i64| Timestamp::from_second(s).unwrap();
        let cases = [
            (t(0), t(1000), t(800)),
            (t(100), t(100 + 365 * 86400), t(100 + 292 * 86400)),
            (t(50), t(50), t(50)),
            (t(50), t(10), t(50)),
        ];
        for (from, to, want) in cases {
            assert_eq!(renew_at(from, to), want, "{from} {to}");
        }
    }
}
