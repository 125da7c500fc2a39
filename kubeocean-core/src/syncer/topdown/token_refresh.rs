//! The TokenRefresh reconciler: the service-account tokens a virtual pod projects are
//! requested from the computing cluster (TokenRequest bound to the virtual pod) and kept in
//! a Secret of the mount namespace that the physical pod projects instead; they are
//! requested again at their refresh time (80% of their lifetime, at most a day), and the
//! Secret is removed with the pod.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::authentication::v1::{
    BoundObjectReference, TokenRequest, TokenRequestSpec as K8sTokenRequestSpec,
};
use k8s_openapi::api::core::v1::{Pod, Secret, ServiceAccount};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams, Preconditions};
use tokio::time::Instant;

use super::error::{Created, Side, TopDownError, create_or_read, describe_owner, request};
use super::mapping::{
    MappingContext, Ownership, TOKEN_REFRESH_AT, TokenRequestSpec, back_reference, dependencies,
    ownership, physical_pod_name, token_refresh_at, token_refresh_due, token_secret,
    token_secret_name,
};
use super::state::TopDown;
use super::store::{object_key, pod_finished, split_key};
use crate::syncer::context::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "token-refresh";

/// When the token Secret says it must be refreshed.
pub fn refresh_time(secret: &Secret) -> Option<Timestamp> {
    secret
        .metadata
        .annotations
        .as_ref()?
        .get(TOKEN_REFRESH_AT)?
        .parse()
        .ok()
}

/// Whether `secret` holds a token for every projection of `spec`.
pub fn holds_all(secret: &Secret, spec: &TokenRequestSpec) -> bool {
    let data = secret.data.as_ref();
    spec.tokens
        .iter()
        .all(|t| data.is_some_and(|d| d.contains_key(&t.key)))
}

/// Makes the token Secret of `pod` exist with fresh tokens, and schedules its refresh.
pub(crate) async fn ensure(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    spec: &TokenRequestSpec,
) -> Result<(), TopDownError> {
    let key = kube_kit::controller::object_key(pod);
    let map_err = |source| TopDownError::Map {
        kind: "Pod",
        name: key.clone(),
        source,
    };
    let name = token_secret_name(pod).map_err(map_err)?;
    let physical_key = td.physical_key(&name);
    let existing = td.stores().physical_secrets.get(&physical_key);
    let now = ctx.config.clock.now();
    if let Some(existing) = &existing {
        match ownership(&existing.metadata, &pod.metadata) {
            Ownership::Ours => {}
            // The Secret of an earlier pod of that name: replaced below.
            Ownership::Foreign(owner)
                if owner.namespace == pod.metadata.namespace && owner.name == pod.metadata.name => {
            }
            other => {
                return Err(TopDownError::Conflict {
                    kind: "Secret",
                    physical: physical_key,
                    owner: describe_owner(&other),
                    wanted: format!("the service-account tokens of Pod {key}"),
                });
            }
        }
        if ownership(&existing.metadata, &pod.metadata) == Ownership::Ours
            && !token_refresh_due(existing, now)
            && holds_all(existing, spec)
        {
            if let Some(at) = refresh_time(existing) {
                td.tokens.add_at(&key, ctx.config.clock.instant_at(at));
            }
            return Ok(());
        }
    }

    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.computing.clone(), &namespace);
    let account_key = object_key(&namespace, &spec.service_account_name);
    let mut tokens = BTreeMap::new();
    let mut refresh_at: Option<Timestamp> = None;
    for projection in &spec.tokens {
        let token_request = TokenRequest {
            metadata: ObjectMeta::default(),
            spec: K8sTokenRequestSpec {
                audiences: projection.audience.iter().cloned().collect(),
                expiration_seconds: projection.expiration_seconds,
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".to_owned()),
                    kind: Some("Pod".to_owned()),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }),
            },
            status: None,
        };
        let answer = request(
            ctx.config.request_timeout,
            Side::Computing,
            "request a token for",
            "ServiceAccount",
            &account_key,
            accounts.create_token_request(
                &spec.service_account_name,
                &PostParams::default(),
                &token_request,
            ),
        )
        .await?;
        let Some(status) = answer.status else {
            return Err(TopDownError::TokenExpiry {
                service_account: account_key,
                pod: key,
            });
        };
        let at = token_refresh_at(now, status.expiration_timestamp.0);
        refresh_at = Some(refresh_at.map_or(at, |r| r.min(at)));
        tokens.insert(projection.key.clone(), status.token);
    }
    let Some(refresh_at) = refresh_at else {
        return Ok(());
    };
    let mut desired = token_secret(pod, &tokens, refresh_at, &MappingContext::new(&td.settings))
        .map_err(|source| TopDownError::Map {
            kind: "Pod",
            name: key.clone(),
            source,
        })?;
    let api: Api<Secret> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let written = match existing {
        Some(existing) => {
            desired.metadata.resource_version = existing.metadata.resource_version.clone();
            request(
                ctx.config.request_timeout,
                Side::Worker,
                "update",
                "Secret",
                &physical_key,
                api.replace(&name, &PostParams::default(), &desired),
            )
            .await?
        }
        None => {
            let created = create_or_read(
                ctx.config.request_timeout,
                "Secret",
                &physical_key,
                api.create(&PostParams::default(), &desired),
                || api.get(&name),
            )
            .await?;
            match created {
                Created::New(created) => created,
                Created::Existing(found, conflict) => {
                    // Written by an earlier attempt: the next pass checks and replaces it.
                    td.stores_mut().physical_secrets.remember(found);
                    return Err(conflict);
                }
            }
        }
    };
    td.stores_mut().physical_secrets.remember(written);
    td.tokens
        .add_at(&key, ctx.config.clock.instant_at(refresh_at));
    tracing::debug!(pod = %key, "service-account tokens written");
    Ok(())
}

/// Deletes the token Secret of virtual pod `pod` when there is one of ours.
pub(crate) async fn remove(ctx: &Context, td: &TopDown, pod: &Pod) -> Result<(), TopDownError> {
    let Ok(name) = token_secret_name(pod) else {
        return Ok(());
    };
    let physical_key = td.physical_key(&name);
    let Some(existing) = td.stores().physical_secrets.get(&physical_key) else {
        return Ok(());
    };
    let back = back_reference(&existing.metadata);
    if back.namespace != pod.metadata.namespace || back.name != pod.metadata.name {
        return Ok(());
    }
    let api: Api<Secret> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: existing.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match request(
        ctx.config.request_timeout,
        Side::Worker,
        "delete",
        "Secret",
        &physical_key,
        api.delete(&name, &params),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(err) if matches!(err.code(), Some(404 | 409)) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Reconciles the token Secret of virtual pod `key`: refreshed while the pod runs, removed
/// once it is gone or finished (a pod being deleted keeps it until its physical pod is gone;
/// the VirtualPod reconciler removes it then).
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    key: &str,
) -> Result<Option<Instant>, TopDownError> {
    let pod = td.virtual_pod(key);
    let Some(pod) = pod else {
        let (namespace, name) = split_key(key);
        let gone = Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        remove(ctx, td, &gone).await?;
        return Ok(None);
    };
    if pod.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    if pod_finished(&pod) {
        remove(ctx, td, &pod).await?;
        return Ok(None);
    }
    let Some(spec) = dependencies(&pod).service_account_token else {
        remove(ctx, td, &pod).await?;
        return Ok(None);
    };
    // Only pods that are mapped keep a refreshed token; the VirtualPod reconciler writes
    // the first one before it creates the physical pod.
    let physical = physical_pod_name(&pod)
        .ok()
        .and_then(|name| td.physical_pod(&name));
    if physical.is_some() {
        ensure(ctx, td, &pod, &spec).await?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::TokenProjection;
    use super::*;
    use k8s_openapi::ByteString;

    #[test]
    fn secrets_hold_every_projected_token() {
        let spec = TokenRequestSpec {
            service_account_name: "default".into(),
            tokens: vec![
                TokenProjection {
                    key: "token".into(),
                    audience: None,
                    expiration_seconds: None,
                },
                TokenProjection {
                    key: "token-x".into(),
                    audience: Some("vault".into()),
                    expiration_seconds: Some(600),
                },
            ],
        };
        let mut secret = Secret {
            data: Some(BTreeMap::from([(
                "token".to_owned(),
                ByteString(b"a".to_vec()),
            )])),
            ..Secret::default()
        };
        assert!(!holds_all(&secret, &spec));
        secret
            .data
            .as_mut()
            .unwrap()
            .insert("token-x".to_owned(), ByteString(b"b".to_vec()));
        assert!(holds_all(&secret, &spec));
        assert_eq!(refresh_time(&secret), None);
        secret.metadata.annotations = Some(BTreeMap::from([(
            TOKEN_REFRESH_AT.to_owned(),
            "2030-01-01T00:00:00Z".to_owned(),
        )]));
        assert_eq!(
            refresh_time(&secret),
            Some("2030-01-01T00:00:00Z".parse().unwrap())
        );
    }
}
