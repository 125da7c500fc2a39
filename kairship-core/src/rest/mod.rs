//! The REST transport: axum handlers described with utoipa, the OpenAPI 3.1 document, and
//! bearer-token authentication.

pub mod applications;
pub mod audit;
pub mod auth;
pub mod drift;
pub mod extract;
pub mod handler;
pub mod instances;
pub mod members;
pub mod objects;
pub mod openapi;
pub mod placement;
pub mod resources;
pub mod search;
pub mod workloads;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::post;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Components, OpenApi, Required};
use utoipa::{Modify, PartialSchema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use self::extract::MAX_BODY_BYTES;
use self::handler::{RestState, verb_doc};
use crate::access::Authenticator;
use crate::api::KairshipApi;
use crate::api::ResourceKind;
use crate::api::{ApiError, Code};
use crate::api::{
    ClusterWorkloadStatus, CreateInstanceRequest, CreateKubeconfigRequest, CreateObjectRequest,
    CreateResourceRequest, DeleteInstanceRequest, DeleteObjectRequest, DeleteResourceRequest,
    DeploymentAction, DeploymentActionRequest, GetClusterRequest, GetInstanceRequest,
    GetObjectRequest, GetResourceRequest, GetWorkloadRequest, JoinClusterRequest, KubeObject,
    KubeconfigOptions, KubeconfigResponse, ListClustersRequest, ListEventsRequest,
    ListInstancesRequest, ListObjectsRequest, ListOptions, ListResourcesRequest,
    ListWorkloadsRequest, ObjectList, Pagination, PatchObjectRequest, PatchType,
    RemoveClusterRequest, SortBy, SortDir, UpdateClusterRequest, UpdateInstanceRequest,
    UpdateObjectRequest, UpdateResourceRequest, Workload, WorkloadList,
};

pub use extract::ApiJson;

pub use self::handler::RestRoute;

/// A Kubernetes `Status` (`kind: Status`, `apiVersion: v1`), as the native proxy answers
/// errors: documented only, the proxy passes the instance's own bodies through.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Status)]
#[allow(dead_code)]
pub struct KubeStatus {
    /// `Status`.
    kind: Option<String>,
    /// `v1`.
    api_version: Option<String>,
    /// List metadata (usually empty).
    metadata: Option<serde_json::Value>,
    /// `Failure` or `Success`.
    status: Option<String>,
    /// What went wrong, for people.
    message: Option<String>,
    /// Why, for programs (`NotFound`, `Forbidden`, `AlreadyExists`, `Invalid`, ...).
    reason: Option<String>,
    /// More about the object concerned.
    details: Option<serde_json::Value>,
    /// The HTTP status code.
    code: Option<i32>,
}

/// Path of the native proxy, served by [`crate::proxy`] and documented here.
pub const PROXY_PATH: &str = "/apis/kairship.io/v1alpha1/instances/{instance}/proxy/{path}";
/// Tag of the operations the native proxy serves (not the REST router).
pub const PROXY_TAG: &str = "proxy";

/// The document's fixed parts: info, tags, every message schema (the gRPC messages too) and
/// bearer authentication.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Kairship API",
        version = "v1alpha1",
        description = "Management plane of many Karmada instances. Errors are {code, message, details} with the gRPC status code number in `code`.",
    ),
    tags(
        (name = "instances", description = "Karmada instances (kairship.io/v1alpha1 Instance on the host cluster)"),
        (name = "clusters", description = "Member clusters of an instance (cluster.karmada.io/v1alpha1 Cluster)"),
        (name = "resources", description = "Workloads, configuration and Karmada policies inside an instance"),
        (name = "workloads", description = "Deployments joined with their per-cluster propagation status"),
        (name = "applications", description = "Multicloud applications: a workload, its Service, PropagationPolicy and OverridePolicies created in one call"),
        (name = "proxy", description = "Native Kubernetes API of an instance, for kubectl and client libraries"),
        (name = "members", description = "What the member clusters hold, through Karmada's cluster proxy, and promoting a member's workload"),
        (name = "placements", description = "Where Karmada's scheduling rules would place a workload, and why other clusters are left out"),
        (name = "drift", description = "Member copies that no longer match what Karmada applies to them"),
        (name = "audit", description = "The trail of writes made through Kairship, kept in the host cluster"),
        (name = "search", description = "Objects of one kind across every instance the caller may read, from the caches"),
    ),
    components(schemas(
        ApiError, Code, KubeObject, ObjectList, Pagination, ListOptions, SortBy, SortDir,
        ResourceKind, DeploymentAction, KubeconfigOptions, KubeconfigResponse, Workload,
        WorkloadList, ClusterWorkloadStatus, ListInstancesRequest, GetInstanceRequest,
        CreateInstanceRequest, UpdateInstanceRequest, DeleteInstanceRequest,
        CreateKubeconfigRequest, ListClustersRequest, GetClusterRequest, JoinClusterRequest,
        UpdateClusterRequest, RemoveClusterRequest, ListResourcesRequest, GetResourceRequest,
        CreateResourceRequest, UpdateResourceRequest, DeleteResourceRequest,
        DeploymentActionRequest, ListWorkloadsRequest, GetWorkloadRequest, ListObjectsRequest,
        GetObjectRequest, CreateObjectRequest, UpdateObjectRequest, PatchObjectRequest,
        DeleteObjectRequest, PatchType, ListEventsRequest, KubeStatus,
        crate::api::ListApiResourcesRequest, crate::api::ApiResourceList,
        crate::api::ApiResourceInfo,
        crate::api::applications::ApplicationSpec, crate::api::applications::ApplicationService,
        crate::api::applications::ApplicationPort, crate::api::applications::Placement,
        crate::api::applications::ClusterOverride, crate::api::applications::EnvVar,
        crate::api::applications::CreateApplicationRequest,
        crate::api::applications::ApplicationResult, crate::api::workloads::jobs::RestartJobRequest,
        crate::api::workloads::jobs::CronJobActionRequest, crate::api::workloads::jobs::CronJobAction,
        crate::api::JoinMemberRequest, crate::api::RegisterMemberRequest,
        crate::api::RegisterMemberResponse, crate::api::UpdateMemberRequest,
        crate::api::MemberTaint,
        crate::api::WorkloadKind, crate::api::PromoteWorkloadResponse,
        crate::api::PreviewPlacementRequest, crate::api::placement::WorkloadReference,
        crate::api::GetInstanceDriftRequest, crate::api::GetObjectDriftRequest,
        crate::drift::FieldDrift,
        crate::api::AuditRecordList, crate::audit::AuditRecordSpec, crate::audit::AuditObject,
        crate::api::SearchRequest, crate::api::SearchResult, crate::api::SearchHit,
        crate::api::InstanceTotal, crate::api::UnavailableInstance,
    )),
    modifiers(&BearerAuth),
)]
struct BaseDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Components::new);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
        openapi.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
    }
}

/// Operation keys of a path item, as upper-case methods.
fn methods_of(item: &utoipa::openapi::PathItem) -> Vec<String> {
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(item) else {
        return Vec::new();
    };
    let methods = [
        "get", "put", "post", "delete", "patch", "head", "options", "trace",
    ];
    methods
        .iter()
        .filter(|m| fields.contains_key(**m))
        .map(|m| m.to_ascii_uppercase())
        .collect()
}

/// Collects the router, the document and the route table together, so that what is served
/// and what is documented come from the same registrations.
struct Builder {
    router: OpenApiRouter<RestState>,
    routes: Vec<RestRoute>,
}

impl Builder {
    fn add(mut self, registered: UtoipaMethodRouter<RestState>) -> Self {
        for (path, item) in &registered.1.paths {
            for method in methods_of(item) {
                self.routes.push(RestRoute {
                    method,
                    path: path.clone(),
                    documented_as: vec![path.clone()],
                });
            }
        }
        self.router = self.router.routes(registered);
        self
    }
}

const VERB_ROUTE: &str =
    "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}";

fn build() -> Builder {
    let builder = Builder {
        router: OpenApiRouter::with_openapi(<BaseDoc as utoipa::OpenApi>::openapi()),
        routes: Vec::new(),
    }
    .add(routes!(
        instances::list_instances,
        instances::create_instance
    ))
    .add(routes!(
        instances::get_instance,
        instances::update_instance,
        instances::delete_instance
    ))
    .add(routes!(instances::create_kubeconfig))
    .add(routes!(members::list_clusters, members::create_cluster))
    .add(routes!(
        members::get_cluster,
        members::update_cluster,
        members::remove_cluster
    ))
    .add(routes!(members::join_member))
    .add(routes!(members::register_member))
    .add(routes!(members::update_member))
    .add(routes!(workloads::list_workloads))
    .add(routes!(workloads::get_workload))
    .add(routes!(
        resources::list_namespaced,
        resources::create_namespaced
    ))
    .add(routes!(
        resources::get_namespaced,
        resources::update_namespaced,
        resources::patch_namespaced,
        resources::delete_namespaced
    ))
    .add(routes!(
        objects::list_cluster_objects,
        objects::create_cluster_object
    ))
    .add(routes!(
        objects::get_cluster_object,
        objects::update_cluster_object,
        objects::patch_cluster_object,
        objects::delete_cluster_object
    ))
    .add(routes!(
        objects::list_namespaced_objects,
        objects::create_namespaced_object
    ))
    .add(routes!(
        objects::get_namespaced_object,
        objects::update_namespaced_object,
        objects::patch_namespaced_object,
        objects::delete_namespaced_object
    ))
    .add(routes!(objects::list_events))
    .add(routes!(objects::list_namespaced_events))
    .add(routes!(objects::list_cluster_object_events))
    .add(routes!(objects::list_namespaced_object_events))
    .add(routes!(resources::list_api_resources))
    .add(routes!(
        resources::list_in_instance,
        resources::create_cluster_scoped
    ))
    .add(routes!(
        resources::get_cluster_scoped,
        resources::update_cluster_scoped,
        resources::patch_cluster_scoped,
        resources::delete_cluster_scoped
    ))
    .add(routes!(workloads::list_workload_pods))
    .add(routes!(members::list_member_nodes))
    .add(routes!(members::list_member_cluster_objects))
    .add(routes!(members::get_member_cluster_object))
    .add(routes!(members::list_member_namespaced_objects))
    .add(routes!(members::get_member_namespaced_object));
    let builder = builder.add(routes!(applications::create_application));
    let builder = builder.add(routes!(instances::adopt_instance));
    let builder = builder
        .add(routes!(placement::preview_placement))
        .add(routes!(drift::instance_drift))
        .add(routes!(drift::object_drift));
    let builder = builder.add(routes!(audit::list_audit));
    let builder = builder.add(routes!(search::search));
    // The deployment verbs: documented as `{name}:verb` paths, served by one route.
    let mut router = builder
        .router
        .route(VERB_ROUTE, post(workloads::object_verb));
    let mut routes = builder.routes;
    let mut documented = Vec::new();
    for (path, method, operation) in [
        verb_doc::<workloads::__path_pause_deployment>(),
        verb_doc::<workloads::__path_resume_deployment>(),
        verb_doc::<workloads::__path_restart_deployment>(),
        verb_doc::<workloads::__path_restart_statefulset>(),
        verb_doc::<workloads::__path_restart_daemonset>(),
        verb_doc::<workloads::__path_restart_job>(),
        verb_doc::<workloads::__path_pause_cronjob>(),
        verb_doc::<workloads::__path_resume_cronjob>(),
    ] {
        router
            .get_openapi_mut()
            .paths
            .add_path_operation(&path, vec![method], operation);
        documented.push(path);
    }
    routes.push(RestRoute {
        method: "POST".into(),
        path: VERB_ROUTE.into(),
        documented_as: documented,
    });
    let router = applications::add_promote(router, &mut routes);
    routes.sort();
    Builder { router, routes }
}

/// Adds the native proxy's operations (served by [`crate::proxy`]) to the document.
fn document_proxy(openapi: &mut OpenApi) {
    let param = |name: &str, description: &str| {
        ParameterBuilder::new()
            .name(name)
            .parameter_in(ParameterIn::Path)
            .required(Required::True)
            .description(Some(description))
            .schema(Some(String::schema()))
            .build()
    };
    for (method, id) in [
        (HttpMethod::Get, "ProxyGet"),
        (HttpMethod::Post, "ProxyPost"),
        (HttpMethod::Put, "ProxyPut"),
        (HttpMethod::Patch, "ProxyPatch"),
        (HttpMethod::Delete, "ProxyDelete"),
    ] {
        let operation = OperationBuilder::new()
            .tag(PROXY_TAG)
            .operation_id(Some(id))
            .summary(Some("Kubernetes API of the instance"))
            .description(Some(
                "Any Kubernetes API path of the instance (`api/v1/...`, `apis/{group}/{version}/...`), \
                 with Kubernetes request and response bodies. Reads are served from the cache, \
                 writes go to the instance; `?watch=true` streams events. This is the server of \
                 the kubeconfig that `POST instances/{instance}/kubeconfig` returns.",
            ))
            .parameter(param("instance", "Instance name"))
            .parameter(param("path", "Kubernetes API path, e.g. api/v1/namespaces/default/configmaps"))
            .response(
                "200",
                utoipa::openapi::ResponseBuilder::new()
                    .description("The instance apiserver's answer (Kubernetes JSON, or text for logs and health endpoints)")
                    .build(),
            )
            .response(
                "201",
                utoipa::openapi::ResponseBuilder::new()
                    .description("Created: the object the instance apiserver created")
                    .build(),
            )
            .response(
                "default",
                utoipa::openapi::ResponseBuilder::new()
                    .description(
                        "Any other status, with a Kubernetes Status body: from the instance \
                         apiserver (404 NotFound, 409 AlreadyExists, 422 Invalid, ...) or from \
                         Kairship before forwarding (401 without a valid token, 403 when the \
                         caller may not use the instance's proxy, 404 for an unknown instance, \
                         503 when the instance cannot be reached)",
                    )
                    .content(
                        "application/json",
                        utoipa::openapi::ContentBuilder::new()
                            .schema(Some(utoipa::openapi::Ref::from_schema_name("Status")))
                            .build(),
                    )
                    .build(),
            )
            .build();
        openapi
            .paths
            .add_path_operation(PROXY_PATH, vec![method], operation);
    }
}

/// What the server accepts as an instance, namespace, member cluster or object name (see
/// [`crate::api::body::check_name`]): a lower-case DNS subdomain.
pub const NAME_PATTERN: &str = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";

/// Path parameters that are names, checked by the server with [`NAME_PATTERN`].
const NAME_PARAMETERS: [&str; 4] = ["instance", "namespace", "cluster", "name"];

/// Gives every name parameter of every path its pattern and length limits, so that the
/// document says what the server refuses.
fn constrain_names(openapi: &mut OpenApi) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    for item in openapi.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            for parameter in operation.parameters.iter_mut().flatten() {
                let RefOr::T(parameter) = parameter else {
                    continue;
                };
                if parameter.parameter_in == ParameterIn::Path
                    && NAME_PARAMETERS.contains(&parameter.name.as_str())
                {
                    let schema = ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(crate::api::body::MAX_NAME_LEN))
                        .pattern(Some(NAME_PATTERN));
                    parameter.schema = Some(schema.into());
                }
            }
        }
    }
}

/// The OpenAPI 3.1 document of the whole API (REST operations and the native proxy).
pub fn openapi() -> OpenApi {
    let mut openapi = build().router.into_openapi();
    document_proxy(&mut openapi);
    constrain_names(&mut openapi);
    openapi
}

/// Every route the REST router serves, with the documented paths each one serves.
pub fn routes() -> Vec<RestRoute> {
    build().routes
}

/// The REST router: every operation of [`openapi()`] except the proxy's, behind bearer
/// authentication with `authenticator`, bodies limited to [`MAX_BODY_BYTES`].
pub fn router(api: Arc<dyn KairshipApi>, authenticator: Arc<dyn Authenticator>) -> Router {
    let (router, _) = build().router.split_for_parts();
    router
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .route_layer(axum::middleware::from_fn_with_state(
            authenticator,
            auth::authenticate,
        ))
        .with_state(RestState { api })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::openapi::check_structure;

    #[test]
    fn the_document_is_structurally_valid_openapi_3_1() {
        let doc = serde_json::to_value(openapi()).unwrap();
        assert_eq!(check_structure(&doc), Vec::<String>::new());
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
    }

    #[test]
    fn every_route_is_documented_and_every_documented_rest_operation_is_routed() {
        let doc = serde_json::to_value(openapi()).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        let mut documented = std::collections::BTreeSet::new();
        for (path, item) in paths {
            for (method, operation) in item.as_object().unwrap() {
                let proxy = operation["tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t == PROXY_TAG));
                if !proxy {
                    documented.insert((method.to_ascii_uppercase(), path.clone()));
                }
            }
        }
        let mut routed = std::collections::BTreeSet::new();
        for route in routes() {
            assert!(!route.documented_as.is_empty(), "{route:?}");
            for path in &route.documented_as {
                routed.insert((route.method.clone(), path.clone()));
            }
        }
        assert_eq!(routed, documented);
        assert_eq!(documented.len(), 67, "{documented:#?}");
    }

    #[test]
    fn name_parameters_carry_the_server_rule_and_the_proxy_documents_status() {
        let doc = serde_json::to_value(openapi()).unwrap();
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for p in operation["parameters"].as_array().into_iter().flatten() {
                    let name = p["name"].as_str().unwrap();
                    if p["in"] == "path" && NAME_PARAMETERS.contains(&name) {
                        seen += 1;
                        assert_eq!(
                            p["schema"]["pattern"], NAME_PATTERN,
                            "{method} {path} {name}"
                        );
                        assert_eq!(p["schema"]["maxLength"], 253, "{method} {path} {name}");
                    }
                }
            }
        }
        assert!(seen >= 80, "{seen}");
        // Reads document no write-only answers.
        for (path, item) in doc["paths"].as_object().unwrap() {
            if let Some(get) = item.get("get")
                && path != PROXY_PATH
            {
                let responses = get["responses"].as_object().unwrap();
                assert!(
                    responses.contains_key("404") && responses.contains_key("403"),
                    "{path}"
                );
                assert!(
                    !responses.contains_key("409") && !responses.contains_key("412"),
                    "{path}"
                );
            }
        }
        let proxy = &doc["paths"][PROXY_PATH];
        for method in ["get", "post", "put", "patch", "delete"] {
            assert_eq!(
                proxy[method]["responses"]["default"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Status",
                "{method}"
            );
        }
        assert!(doc["components"]["schemas"]["Status"]["properties"]["apiVersion"].is_object());
    }

    #[test]
    fn every_operation_is_tagged() {
        // Generated clients group operations by tag: untagged ones land in a "default" API.
        let doc = serde_json::to_value(openapi()).unwrap();
        let declared: Vec<&serde_json::Value> = doc["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["name"])
            .collect();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let tags = operation["tags"].as_array();
                assert!(
                    tags.is_some_and(|t| t.len() == 1 && declared.contains(&&t[0])),
                    "{method} {path}: {:?}",
                    operation["tags"]
                );
            }
        }
    }
}
