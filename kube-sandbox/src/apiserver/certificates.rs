//! `certificates.k8s.io/v1` CertificateSigningRequests as kube-apiserver serves them
//! (kubernetes `pkg/registry/certificates/certificates/strategy.go`, the validation in
//! `pkg/apis/certificates/validation/validation.go`, and the admission plugins
//! `certificates/approval`, `certificates/signing` and `certificates/subjectrestriction`):
//! the requester's identity is written into the spec on create, the spec never changes
//! afterwards, `/approval` changes only the Approved and Denied conditions (for users allowed
//! to `approve` the signer), `/status` everything but those (a new certificate only for users
//! allowed to `sign`). Signing itself is kube-controller-manager's work
//! (`sim/controllers/csr_signing.rs`).

use crate::apiserver::auth::{self, Attributes, UserInfo};
use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::store::Store;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The API group.
pub const GROUP: &str = "certificates.k8s.io";
/// The resource.
pub const RESOURCE: &str = "certificatesigningrequests";
/// The signer of client certificates kube-apiserver trusts.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// The shortest validity a request may ask for (validation: `spec.expirationSeconds`).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;

const APPROVAL_TYPES: [&str; 2] = ["Approved", "Denied"];

/// Key usages a CSR may name (`certificates.KeyUsage`).
const KNOWN_USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

fn invalid(name: &str, field: &str, reason: &str, message: String) -> ApiError {
    ApiError::invalid(
        GROUP,
        "CertificateSigningRequest",
        name,
        vec![Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        }],
    )
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The PEM text of `spec.request` (base64 of the PEM, as `[]byte` fields travel in JSON).
pub fn request_pem(csr: &Value) -> Option<String> {
    csr.pointer("/spec/request")
        .and_then(Value::as_str)
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
}

/// Whether `name` is a qualified signer name (`domain/path`), as validation requires.
fn valid_signer_name(name: &str) -> bool {
    match name.split_once('/') {
        Some((domain, path)) => {
            !domain.is_empty()
                && domain.contains('.')
                && domain
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
                && !path.is_empty()
                && !path.contains('/')
        }
        None => false,
    }
}

/// Validates a new CSR and fills in who asked for it, as the registry strategy's
/// `PrepareForCreate` and `Validate` and the subject-restriction admission plugin do.
pub fn prepare_create(obj: &mut Value, user: &UserInfo) -> Result<(), ApiError> {
    let name = name_of(obj).to_owned();
    let Some(pem) = request_pem(obj) else {
        return Err(invalid(
            &name,
            "spec.request",
            "FieldValueRequired",
            "spec.request: Required value".into(),
        ));
    };
    let subject = crate::apiserver::pki::request_subject(&pem).map_err(|e| {
        invalid(
            &name,
            "spec.request",
            "FieldValueInvalid",
            format!("spec.request: Invalid value: \"<PEM>\": {e}"),
        )
    })?;
    let signer = obj
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if signer.is_empty() {
        return Err(invalid(
            &name,
            "spec.signerName",
            "FieldValueRequired",
            "spec.signerName: Required value".into(),
        ));
    }
    if !valid_signer_name(&signer) {
        return Err(invalid(
            &name,
            "spec.signerName",
            "FieldValueInvalid",
            format!(
                "spec.signerName: Invalid value: \"{signer}\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ),
        ));
    }
    let usages = usages(obj);
    if usages.is_empty() {
        return Err(invalid(
            &name,
            "spec.usages",
            "FieldValueRequired",
            "spec.usages: Required value".into(),
        ));
    }
    if let Some(unknown) = usages.iter().find(|u| !KNOWN_USAGES.contains(&u.as_str())) {
        return Err(invalid(
            &name,
            "spec.usages",
            "FieldValueNotSupported",
            format!("spec.usages: Unsupported value: \"{unknown}\""),
        ));
    }
    if let Some(seconds) = obj
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        && seconds < MIN_EXPIRATION_SECONDS
    {
        return Err(invalid(
            &name,
            "spec.expirationSeconds",
            "FieldValueInvalid",
            format!(
                "spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration less than 600 seconds (10 minutes)"
            ),
        ));
    }
    // plugin/pkg/admission/certificates/subjectrestriction: no system:masters certificates.
    if signer == KUBE_APISERVER_CLIENT
        && subject.organizations.iter().any(|o| o == "system:masters")
    {
        return Err(ApiError::forbidden(
            "certificates.k8s.io",
            "certificatesigningrequests",
            &name,
            format!(
                "use of {KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed"
            ),
        ));
    }
    if let Some(map) = obj.as_object_mut() {
        map.remove("status");
        if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("username".into(), json!(user.username));
            spec.insert("groups".into(), json!(user.groups));
            spec.remove("extra");
            if user.uid.is_empty() {
                spec.remove("uid");
            } else {
                spec.insert("uid".into(), json!(user.uid));
            }
        }
    }
    Ok(())
}

/// `spec.usages`.
pub fn usages(csr: &Value) -> Vec<String> {
    crate::apiserver::meta::string_list(csr.pointer("/spec/usages"))
}

/// `spec.signerName`.
pub fn signer_name(csr: &Value) -> &str {
    csr.pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn conditions(csr: &Value) -> Vec<Value> {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Whether the CSR has a condition of `kind` with status True.
pub fn has_condition(csr: &Value, kind: &str) -> bool {
    conditions(csr).iter().any(|c| {
        condition_type(c) == kind && c.get("status").and_then(Value::as_str) != Some("False")
    })
}

fn with_conditions(mut csr: Value, conditions: Vec<Value>) -> Value {
    if !csr.get("status").is_some_and(Value::is_object) {
        csr["status"] = json!({});
    }
    if conditions.is_empty() {
        if let Some(status) = csr.get_mut("status").and_then(Value::as_object_mut) {
            status.remove("conditions");
        }
    } else {
        csr["status"]["conditions"] = Value::Array(conditions);
    }
    csr
}

fn check_conditions(name: &str, conditions: &[Value], old: &Value) -> Result<(), ApiError> {
    let approved = conditions.iter().any(|c| condition_type(c) == "Approved");
    let denied = conditions.iter().any(|c| condition_type(c) == "Denied");
    if approved && denied {
        return Err(invalid(
            name,
            "status.conditions",
            "FieldValueInvalid",
            "status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive".into(),
        ));
    }
    for kind in APPROVAL_TYPES {
        if has_condition(old, kind) && !conditions.iter().any(|c| condition_type(c) == kind) {
            return Err(invalid(
                name,
                "status.conditions",
                "FieldValueForbidden",
                format!(
                    "status.conditions: Forbidden: updates may not remove a condition of type \"{kind}\""
                ),
            ));
        }
    }
    for c in conditions {
        if condition_type(c).is_empty() {
            return Err(invalid(
                name,
                "status.conditions[].type",
                "FieldValueRequired",
                "status.conditions[].type: Required value".into(),
            ));
        }
    }
    Ok(())
}

fn stamp(mut conditions: Vec<Value>) -> Vec<Value> {
    let now = crate::apiserver::meta::now_rfc3339();
    for c in &mut conditions {
        if let Some(map) = c.as_object_mut() {
            map.entry("status").or_insert_with(|| json!("True"));
            map.entry("lastUpdateTime").or_insert_with(|| json!(now));
            map.entry("lastTransitionTime")
                .or_insert_with(|| json!(now));
        }
    }
    conditions
}

/// The object after a PUT of `/approval` (`csrApprovalStrategy.PrepareForUpdate`): the old
/// object with the Approved and Denied conditions of `body` and every other condition of `old`.
pub fn approval_update(old: &Value, body: &Value) -> Result<Value, ApiError> {
    let name = name_of(old);
    let mut next: Vec<Value> = conditions(body)
        .into_iter()
        .filter(|c| APPROVAL_TYPES.contains(&condition_type(c)))
        .collect();
    next = stamp(next);
    next.extend(
        conditions(old)
            .into_iter()
            .filter(|c| !APPROVAL_TYPES.contains(&condition_type(c))),
    );
    check_conditions(name, &next, old)?;
    Ok(with_conditions(old.clone(), next))
}

/// The object after a PUT of `/status` (`csrStatusStrategy.PrepareForUpdate`): `body`'s
/// status with the old Approved and Denied conditions, the old spec; a certificate, once
/// issued, never changes.
pub fn status_update(old: &Value, body: &Value) -> Result<Value, ApiError> {
    let name = name_of(old);
    let mut next: Vec<Value> = conditions(body)
        .into_iter()
        .filter(|c| !APPROVAL_TYPES.contains(&condition_type(c)))
        .collect();
    next = stamp(next);
    next.extend(
        conditions(old)
            .into_iter()
            .filter(|c| APPROVAL_TYPES.contains(&condition_type(c))),
    );
    check_conditions(name, &next, old)?;
    let old_cert = old.pointer("/status/certificate").cloned();
    let new_cert = body.pointer("/status/certificate").cloned();
    if let Some(old_cert) = &old_cert
        && new_cert.as_ref() != Some(old_cert)
    {
        return Err(invalid(
            name,
            "status.certificate",
            "FieldValueForbidden",
            "status.certificate: Forbidden: updates may not modify existing certificate content"
                .into(),
        ));
    }
    let mut new = with_conditions(old.clone(), next);
    if let Some(cert) = new_cert {
        new["status"]["certificate"] = cert;
    }
    Ok(new)
}

/// The object after a PUT of the CSR itself (`csrStrategy.PrepareForUpdate`): spec and
/// status stay; only metadata changes.
pub fn object_update(old: &Value, body: &Value) -> Value {
    let mut new = body.clone();
    for kept in ["spec", "status"] {
        match old.get(kept) {
            Some(v) => new[kept] = v.clone(),
            None => {
                if let Some(map) = new.as_object_mut() {
                    map.remove(kept);
                }
            }
        }
    }
    new
}

/// Whether the certificate of a status write differs from the stored one.
pub fn sets_certificate(old: &Value, body: &Value) -> bool {
    let cert = body.pointer("/status/certificate");
    cert.is_some_and(|c| !c.as_str().unwrap_or("").is_empty())
        && cert != old.pointer("/status/certificate")
}

/// Refuses `user` unless it may `verb` (`approve` or `sign`) the CSR's signer, as the
/// `certificates/approval` and `certificates/signing` admission plugins check it: on
/// `signers` named by the signer name or its `domain/*` wildcard.
pub fn check_signer_permission(
    store: &Store,
    user: &UserInfo,
    verb: &str,
    csr: &Value,
) -> Result<(), ApiError> {
    let signer = signer_name(csr);
    let wildcard = signer
        .split_once('/')
        .map(|(domain, _)| format!("{domain}/*"))
        .unwrap_or_default();
    let allowed = [signer.to_owned(), wildcard].iter().any(|name| {
        let attrs = Attributes {
            verb: verb.into(),
            group: GROUP.into(),
            resource: "signers".into(),
            name: name.clone(),
            ..Default::default()
        };
        auth::authorize(store, user, &attrs).0
    });
    if allowed {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "certificates.k8s.io",
            "certificatesigningrequests",
            name_of(csr),
            format!("user not permitted to {verb} requests with signerName \"{signer}\""),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(cn: &str, org: Option<&str>) -> Value {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        if let Some(o) = org {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, o);
        }
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        json!({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "c1"},
            "spec": {"request": STANDARD.encode(pem), "signerName": KUBE_APISERVER_CLIENT,
                     "usages": ["digital signature", "key encipherment", "client auth"]},
            "status": {"certificate": "Zm9v"},
        })
    }

    #[test]
    fn create_records_the_requester_and_checks_the_request() {
        let user = UserInfo::new("system:bootstrap:abcdef", &["system:bootstrappers"]);
        let mut ok = csr("system:karmada:agent:m1", Some("system:karmada:agents"));
        prepare_create(&mut ok, &user).unwrap();
        assert_eq!(ok["spec"]["username"], "system:bootstrap:abcdef");
        assert_eq!(
            ok["spec"]["groups"],
            json!(["system:bootstrappers", "system:authenticated"])
        );
        assert!(ok.get("status").is_none());
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Change, u16)> = vec![
            (
                "masters",
                Box::new(|c: &mut Value| *c = csr("x", Some("system:masters"))),
                403,
            ),
            (
                "no request",
                Box::new(|c: &mut Value| c["spec"]["request"] = json!(null)),
                422,
            ),
            (
                "garbage request",
                Box::new(|c: &mut Value| c["spec"]["request"] = json!(STANDARD.encode("nope"))),
                422,
            ),
            (
                "no signer",
                Box::new(|c: &mut Value| c["spec"]["signerName"] = json!("")),
                422,
            ),
            (
                "unqualified signer",
                Box::new(|c: &mut Value| c["spec"]["signerName"] = json!("signer")),
                422,
            ),
            (
                "no usages",
                Box::new(|c: &mut Value| c["spec"]["usages"] = json!([])),
                422,
            ),
            (
                "unknown usage",
                Box::new(|c: &mut Value| c["spec"]["usages"] = json!(["flying"])),
                422,
            ),
            (
                "too short",
                Box::new(|c: &mut Value| c["spec"]["expirationSeconds"] = json!(60)),
                422,
            ),
        ];
        for (name, change, code) in cases {
            let mut c = csr("u", None);
            change(&mut c);
            let err = prepare_create(&mut c, &user).unwrap_err();
            assert_eq!(err.code, code, "{name}: {}", err.message);
        }
    }

    #[test]
    fn approval_and_status_change_only_their_conditions() {
        let mut old = csr("u", None);
        old["status"] = json!({"conditions": [{"type": "Failed", "status": "True"}]});
        let approved = approval_update(
            &old,
            &json!({"status": {"certificate": "ZXZpbA==", "conditions": [
                {"type": "Approved", "status": "True", "reason": "R"},
                {"type": "Failed", "status": "False"}]}}),
        )
        .unwrap();
        assert!(has_condition(&approved, "Approved"));
        assert!(has_condition(&approved, "Failed"));
        assert!(approved.pointer("/status/certificate").is_none());
        // Approved and Denied exclude each other; an approval cannot be taken back.
        assert!(
            approval_update(
                &approved,
                &json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}]}})
            )
            .is_err()
        );
        assert!(approval_update(&approved, &json!({"status": {"conditions": []}})).is_err());
        // /status cannot approve, keeps the approval, and sets the certificate once.
        let signed = status_update(
            &approved,
            &json!({"status": {"certificate": "Y2VydA==", "conditions": [{"type": "Denied"}]}}),
        )
        .unwrap();
        assert!(has_condition(&signed, "Approved"));
        assert!(!has_condition(&signed, "Denied"));
        assert_eq!(signed["status"]["certificate"], "Y2VydA==");
        assert!(sets_certificate(
            &approved,
            &json!({"status": {"certificate": "Y2VydA=="}})
        ));
        assert!(!sets_certificate(
            &signed,
            &json!({"status": {"certificate": "Y2VydA=="}})
        ));
        assert!(status_update(&signed, &json!({"status": {"certificate": "b3RoZXI="}})).is_err());
        // The object itself: spec and status stay.
        let mut body = signed.clone();
        body["spec"]["username"] = json!("mallory");
        body["status"] = json!({});
        body["metadata"]["labels"] = json!({"a": "b"});
        let updated = object_update(&signed, &body);
        assert_eq!(updated["spec"], signed["spec"]);
        assert_eq!(updated["status"], signed["status"]);
        assert_eq!(updated["metadata"]["labels"]["a"], "b");
    }
}
