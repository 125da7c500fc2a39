//! Streams of a member pod, through Karmada's cluster proxy with the caller impersonated (so
//! the member's own RBAC decides and its audit names the caller): a container's log as it is
//! written (`pods/log?follow=true`, authorized as `get` on the instance's proxy) and a command
//! in a container over WebSocket (`pods/exec`, authorized as `create`, as kube-apiserver
//! authorizes exec).

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::{AttachParams, LogParams};

use crate::access::{Caller, InstanceResource, Verb, impersonation_headers};
use crate::api::body::check_name;
use crate::api::error::{ApiError, code_of_http_status};
use crate::api::kairship::KairshipService;
use crate::api::members::views::cluster_proxy_path;

/// A member pod's container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberPod {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// Namespace of the pod.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// Container (the pod's only one when `None`).
    pub container: Option<String>,
}

/// Which part of a container's log, as `kubectl logs` asks for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Keep the stream open and send lines as they are written.
    pub follow: bool,
    /// The previous (terminated) instance of the container.
    pub previous: bool,
    /// Only lines of the last that many seconds.
    pub since_seconds: Option<i64>,
    /// Only the last that many lines.
    pub tail_lines: Option<i64>,
    /// Each line prefixed with its RFC 3339 time.
    pub timestamps: bool,
}

/// What to run in a container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Send stdin.
    pub stdin: bool,
    /// A terminal (stdout and stderr as one stream).
    pub tty: bool,
}

/// A container log as it arrives.
pub type LogStream = BoxStream<'static, Result<Bytes, ApiError>>;

fn check(pod: &MemberPod) -> Result<(), ApiError> {
    check_name("instance", &pod.instance)?;
    check_name("cluster", &pod.cluster)?;
    check_name("namespace", &pod.namespace)?;
    check_name("pod", &pod.pod)?;
    if let Some(container) = &pod.container {
        check_name("container", container)?;
    }
    Ok(())
}

/// The pods collection of the member, through the cluster proxy.
fn pods_of(pod: &MemberPod) -> kube::core::Request {
    kube::core::Request::new(format!(
        "{}/api/v1/namespaces/{}/pods",
        cluster_proxy_path(&pod.cluster),
        pod.namespace
    ))
}

/// kube-rs's log parameters for `options`.
pub fn log_params(container: Option<&str>, options: &LogOptions) -> LogParams {
    LogParams {
        container: container.map(str::to_owned),
        follow: options.follow,
        previous: options.previous,
        since_seconds: options.since_seconds.filter(|s| *s > 0),
        tail_lines: options.tail_lines.filter(|t| *t >= 0),
        timestamps: options.timestamps,
        ..LogParams::default()
    }
}

impl KairshipService {
    async fn member_client(&self, instance: &str) -> Result<kube::Client, ApiError> {
        let Some(discovery) = &self.discovery else {
            return Err(ApiError::unavailable(
                "member clusters cannot be reached: this server has no instance clients",
            ));
        };
        Ok(discovery.clients.client(instance).await?)
    }

    /// The caller, as Karmada's proxy passes it on (name and groups, no uid).
    fn member_caller(caller: &Caller) -> Caller {
        Caller {
            uid: None,
            ..caller.clone()
        }
    }

    /// [`WorkloadsApi::member_pod_log`](crate::api::WorkloadsApi::member_pod_log).
    pub(in crate::api) async fn pod_log(
        &self,
        caller: &Caller,
        pod: MemberPod,
        options: LogOptions,
    ) -> Result<LogStream, ApiError> {
        check(&pod)?;
        let what = format!(
            "read the log of pod {} in member cluster {}",
            pod.pod, pod.cluster
        );
        self.authorize(
            caller,
            Verb::Get,
            InstanceResource::Proxy,
            Some(&pod.instance),
            &what,
        )
        .await?;
        let mut request = pods_of(&pod)
            .logs(&pod.pod, &log_params(pod.container.as_deref(), &options))
            .map_err(|e| ApiError::invalid(format!("{what}: {e}")))?;
        request
            .headers_mut()
            .extend(impersonation_headers(&Self::member_caller(caller)));
        let client = self.member_client(&pod.instance).await?;
        let answer = client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(|e| {
                ApiError::unavailable(format!(
                    "{what}: member cluster {} of instance {} did not answer: {}",
                    pod.cluster,
                    pod.instance,
                    kube_kit::client::describe_kube_error(&e)
                ))
            })?;
        let status = answer.status();
        let body = axum::body::Body::new(answer.into_body());
        if !status.is_success() {
            let bytes = axum::body::to_bytes(body, 64 * 1024)
                .await
                .unwrap_or_default();
            return Err(refusal(status.as_u16(), &bytes, &what));
        }
        let cluster = pod.cluster.clone();
        Ok(body
            .into_data_stream()
            .map(move |chunk| {
                chunk.map_err(|e| {
                    ApiError::unavailable(format!(
                        "the log from member cluster {cluster} ended: {e}"
                    ))
                })
            })
            .boxed())
    }

    /// [`WorkloadsApi::member_pod_exec`](crate::api::WorkloadsApi::member_pod_exec).
    pub(in crate::api) async fn pod_exec(
        &self,
        caller: &Caller,
        pod: MemberPod,
        options: ExecOptions,
    ) -> Result<kube::client::Connection, ApiError> {
        check(&pod)?;
        if options.command.is_empty() {
            return Err(ApiError::invalid_field("command", "a command is required"));
        }
        let what = format!(
            "run a command in pod {} of member cluster {}",
            pod.pod, pod.cluster
        );
        self.authorize(
            caller,
            Verb::Create,
            InstanceResource::Proxy,
            Some(&pod.instance),
            &what,
        )
        .await?;
        let mut params = AttachParams::default()
            .stdin(options.stdin)
            .stdout(true)
            .stderr(!options.tty)
            .tty(options.tty);
        if let Some(container) = &pod.container {
            params = params.container(container.clone());
        }
        let mut request = pods_of(&pod)
            .exec(&pod.pod, options.command.clone(), &params)
            .map_err(|e| ApiError::invalid(format!("{what}: {e}")))?;
        request
            .headers_mut()
            .extend(impersonation_headers(&Self::member_caller(caller)));
        let client = self.member_client(&pod.instance).await?;
        client.connect(request).await.map_err(|e| match &e {
            kube::Error::Api(status) => ApiError::from_kube_status(status, &what),
            kube::Error::UpgradeConnection(
                kube::client::UpgradeConnectionError::ProtocolSwitch(code),
            ) => ApiError::new(
                code_of_http_status(code.as_u16()),
                format!("{what}: member cluster {} answered {code}", pod.cluster),
            ),
            _ => ApiError::unavailable(format!(
                "{what}: member cluster {} of instance {} did not answer: {}",
                pod.cluster,
                pod.instance,
                kube_kit::client::describe_kube_error(&e)
            )),
        })
    }
}

/// The error of a refused member request: the member's Status (or text) as the API's error.
fn refusal(code: u16, body: &[u8], what: &str) -> ApiError {
    match serde_json::from_slice::<kube::core::Status>(body) {
        Ok(status) if !status.message.is_empty() => ApiError::from_kube_status(&status, what),
        _ => {
            let text = String::from_utf8_lossy(body);
            let text = if text.trim().is_empty() {
                format!("the member answered {code}")
            } else {
                text.trim().to_owned()
            };
            ApiError::new(code_of_http_status(code), format!("{what}: {text}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_params_drop_what_kubectl_would_not_send() {
        let options = LogOptions {
            follow: true,
            previous: true,
            since_seconds: Some(0),
            tail_lines: Some(-1),
            timestamps: false,
        };
        let p = log_params(Some("app"), &options);
        assert_eq!(
            (
                p.container.as_deref(),
                p.follow,
                p.previous,
                p.since_seconds,
                p.tail_lines
            ),
            (Some("app"), true, true, None, None)
        );
        let p = log_params(
            None,
            &LogOptions {
                since_seconds: Some(60),
                tail_lines: Some(0),
                ..LogOptions::default()
            },
        );
        assert_eq!((p.since_seconds, p.tail_lines), (Some(60), Some(0)));
    }

    #[test]
    fn names_are_checked_before_anything_is_asked() {
        let pod = |container: Option<&str>, name: &str| MemberPod {
            instance: "i".into(),
            cluster: "m1".into(),
            namespace: "demo".into(),
            pod: name.into(),
            container: container.map(Into::into),
        };
        assert!(check(&pod(None, "web-1")).is_ok());
        assert!(check(&pod(Some("app"), "web-1")).is_ok());
        assert!(check(&pod(None, "../x")).is_err());
        assert!(check(&pod(Some("a/b"), "web-1")).is_err());
    }

    #[test]
    fn refusals_carry_the_members_message() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" is forbidden","reason":"Forbidden","code":403}"#;
        let err = refusal(403, status, "read the log");
        assert!(err.message.contains("is forbidden"), "{}", err.message);
        let err = refusal(400, b"container not found", "read the log");
        assert!(
            err.message.contains("container not found"),
            "{}",
            err.message
        );
    }
}
