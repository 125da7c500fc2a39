//! Authentication and authorization against a sandbox host cluster: real TokenReviews and
//! SubjectAccessReviews judged by RBAC objects for `kairship.io/instances`.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb,
};
use kairship_core::auth::{
    ChainAuthenticator, ReviewCacheConfig, StaticTokenAuthenticator, SubjectAccessReviewAuthorizer,
    TokenReviewAuthenticator,
};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kube_sandbox::{FaultAction, FaultRule, UserInfo};
use serde_json::json;

const ALICE: &str = "alice-token";
const VIC: &str = "vic-token";
const NOBODY: &str = "nobody-token";

/// A host cluster where alice administers instance `prod`, group `viewers` (vic) may read
/// `prod`, and nobody may do nothing.
async fn host() -> kube_sandbox::Cluster {
    let host = kube_sandbox::Cluster::new("host");
    let auth = host.auth();
    auth.add_token(ALICE, UserInfo::new("alice", &["dev"]));
    auth.add_token(VIC, UserInfo::new("vic", &["viewers"]));
    auth.add_token(NOBODY, UserInfo::new("nobody", &[]));
    let client = host.client();
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(client);
    for (role, verbs, subject) in [
        (
            "kairship:instance:prod:admin",
            json!(["*"]),
            json!({"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}),
        ),
        (
            "kairship:instance:prod:view",
            json!(["get", "list", "watch"]),
            json!({"kind": "Group", "name": "viewers", "apiGroup": "rbac.authorization.k8s.io"}),
        ),
    ] {
        let cr = serde_json::from_value(json!({
            "metadata": {"name": role},
            "rules": [{"apiGroups": ["kairship.io"], "resources": ["instances", "instances/proxy"],
                       "resourceNames": ["prod"], "verbs": verbs}],
        }))
        .unwrap();
        roles.create(&PostParams::default(), &cr).await.unwrap();
        let crb = serde_json::from_value(json!({
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [subject],
        }))
        .unwrap();
        bindings.create(&PostParams::default(), &crb).await.unwrap();
    }
    host
}

/// A client of a host that does not answer (nothing listens on the port).
async fn unreachable_host() -> kube::Client {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let yaml =
        kube_sandbox::serve::kubeconfig_yaml("gone", &format!("http://{addr}"), None, "token");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.connect_timeout = Some(Duration::from_millis(500));
    kube::Client::try_from(config).unwrap()
}

fn short_cache(ttl: Duration) -> ReviewCacheConfig {
    ReviewCacheConfig {
        positive_ttl: ttl,
        negative_ttl: ttl,
        capacity: 16,
    }
}

#[tokio::test]
async fn token_review_identifies_users_and_refuses_unknown_tokens() {
    let host = host().await;
    let authn = TokenReviewAuthenticator::with_config(host.client(), ReviewCacheConfig::disabled());
    let alice = authn.authenticate(ALICE).await.unwrap();
    assert_eq!(alice.user, "alice");
    assert!(alice.groups.contains(&"dev".to_string()));
    assert!(alice.groups.contains(&"system:authenticated".to_string()));
    assert_eq!(alice.uid.as_deref(), Some("uid-alice"));
    for token in ["wrong", ""] {
        let err = authn.authenticate(token).await.unwrap_err();
        assert!(matches!(err, AccessError::Unauthenticated(_)), "{err}");
        assert!(token.is_empty() || !err.to_string().contains(token));
    }
}

#[tokio::test]
async fn token_review_answers_are_cached_briefly_both_ways() {
    let host = host().await;
    let ttl = Duration::from_millis(300);
    let authn = TokenReviewAuthenticator::with_config(host.client(), short_cache(ttl));
    assert_eq!(authn.authenticate(ALICE).await.unwrap().user, "alice");
    assert!(authn.authenticate("late-token").await.is_err());

    // The host stops answering reviews and a new token appears: within the ttl the cached
    // answers stand, both the positive and the negative one.
    let fault = host.faults().add(FaultRule {
        resource: Some("tokenreviews".into()),
        verbs: vec![],
        action: FaultAction::Status(503),
    });
    host.auth()
        .add_token("late-token", UserInfo::new("late", &[]));
    assert_eq!(authn.authenticate(ALICE).await.unwrap().user, "alice");
    assert!(matches!(
        authn.authenticate("late-token").await,
        Err(AccessError::Unauthenticated(_))
    ));

    // After the ttl the host is asked again: failing, then answering.
    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    assert!(matches!(
        authn.authenticate(ALICE).await,
        Err(AccessError::Unavailable(_))
    ));
    host.faults().remove(fault);
    assert_eq!(authn.authenticate("late-token").await.unwrap().user, "late");
}

#[tokio::test]
async fn an_unreachable_host_makes_reviews_unavailable() {
    let client = unreachable_host().await;
    let authn = TokenReviewAuthenticator::new(client.clone());
    assert!(matches!(
        authn.authenticate(ALICE).await,
        Err(AccessError::Unavailable(_))
    ));
    let authz = SubjectAccessReviewAuthorizer::new(client);
    assert!(matches!(
        authz
            .allowed(
                &Caller::new("alice", vec![]),
                Verb::Get,
                InstanceResource::Instances,
                Some("prod")
            )
            .await,
        Err(AccessError::Unavailable(_))
    ));
}

#[tokio::test]
async fn the_static_file_comes_first_then_token_review() {
    let host = host().await;
    let file = StaticTokenAuthenticator::parse("dev-token,developer,d1,\"admins,dev\"").unwrap();
    let chain = ChainAuthenticator::new(vec![
        Arc::new(file),
        Arc::new(TokenReviewAuthenticator::new(host.client())),
    ]);
    let dev = chain.authenticate("dev-token").await.unwrap();
    assert_eq!(dev.user, "developer");
    assert!(dev.groups.contains(&"admins".to_string()));
    assert_eq!(chain.authenticate(VIC).await.unwrap().user, "vic");
    assert!(matches!(
        chain.authenticate("nope").await,
        Err(AccessError::Unauthenticated(_))
    ));
}

#[tokio::test]
async fn subject_access_reviews_follow_rbac_for_instances() {
    let host = host().await;
    let authn = TokenReviewAuthenticator::new(host.client());
    let authz =
        SubjectAccessReviewAuthorizer::with_config(host.client(), ReviewCacheConfig::disabled());
    let alice = authn.authenticate(ALICE).await.unwrap();
    let vic = authn.authenticate(VIC).await.unwrap();
    let nobody = authn.authenticate(NOBODY).await.unwrap();
    use InstanceResource::{Instances as I, Proxy as X};
    let cases = [
        (&alice, Verb::Get, I, Some("prod"), true),
        (&alice, Verb::Delete, I, Some("prod"), true),
        (&alice, Verb::Create, X, Some("prod"), true),
        (&alice, Verb::Delete, X, Some("prod"), true),
        (&alice, Verb::Get, I, Some("staging"), false),
        (&alice, Verb::Create, X, Some("staging"), false),
        // A role naming one instance does not cover "all instances".
        (&alice, Verb::List, I, None, false),
        (&vic, Verb::Get, I, Some("prod"), true),
        (&vic, Verb::Get, X, Some("prod"), true),
        (&vic, Verb::Watch, X, Some("prod"), true),
        (&vic, Verb::List, I, Some("prod"), true),
        (&vic, Verb::Patch, I, Some("prod"), false),
        (&vic, Verb::Create, X, Some("prod"), false),
        (&vic, Verb::Delete, X, Some("prod"), false),
        (&nobody, Verb::Get, I, Some("prod"), false),
        (&nobody, Verb::Get, X, Some("prod"), false),
        (&nobody, Verb::List, I, None, false),
    ];
    for (caller, verb, resource, instance, want) in cases {
        assert_eq!(
            authz
                .allowed(caller, verb, resource, instance)
                .await
                .unwrap(),
            want,
            "{} {verb:?} {resource} {instance:?}",
            caller.user
        );
    }
}

#[tokio::test]
async fn access_answers_are_cached_briefly_per_user_groups_verb_resource_and_instance() {
    let host = host().await;
    let ttl = Duration::from_millis(300);
    let authz = SubjectAccessReviewAuthorizer::with_config(host.client(), short_cache(ttl));
    let vic = Caller::new("vic", vec!["viewers".into(), "team".into()]);
    assert!(
        authz
            .allowed(&vic, Verb::Get, InstanceResource::Instances, Some("prod"))
            .await
            .unwrap()
    );
    assert!(
        !authz
            .allowed(
                &vic,
                Verb::Delete,
                InstanceResource::Instances,
                Some("prod")
            )
            .await
            .unwrap()
    );

    // Revoke the viewers' binding: the cached answer stands for the ttl...
    let bindings: Api<ClusterRoleBinding> = Api::all(host.client());
    bindings
        .delete("kairship:instance:prod:view", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        authz
            .allowed(&vic, Verb::Get, InstanceResource::Instances, Some("prod"))
            .await
            .unwrap()
    );
    // ...but a different verb, resource, instance or group set is a different question.
    assert!(
        !authz
            .allowed(&vic, Verb::List, InstanceResource::Instances, Some("prod"))
            .await
            .unwrap()
    );
    assert!(
        !authz
            .allowed(&vic, Verb::Get, InstanceResource::Proxy, Some("prod"))
            .await
            .unwrap()
    );
    let fewer_groups = Caller::new("vic", vec!["viewers".into()]);
    assert!(
        !authz
            .allowed(
                &fewer_groups,
                Verb::Get,
                InstanceResource::Instances,
                Some("prod")
            )
            .await
            .unwrap()
    );
    // The same groups in another order are the same question.
    let reordered = Caller::new("vic", vec!["team".into(), "viewers".into()]);
    assert!(
        authz
            .allowed(
                &reordered,
                Verb::Get,
                InstanceResource::Instances,
                Some("prod")
            )
            .await
            .unwrap()
    );

    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    assert!(
        !authz
            .allowed(&vic, Verb::Get, InstanceResource::Instances, Some("prod"))
            .await
            .unwrap()
    );
}
