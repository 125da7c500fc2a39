"""Drives the Kairship API through the Python client openapi-generator made from /openapi.json.

Run by tests/generated_client.rs with the generated package on PYTHONPATH. Prints one JSON
object per step on stdout; any unexpected answer raises, so the exit status is non-zero.
"""

import json
import os

import kairship_client
from kairship_client.api.instances_api import InstancesApi
from kairship_client.api.resources_api import ResourcesApi
from kairship_client.exceptions import ForbiddenException, NotFoundException
from kairship_client.models.api_error import ApiError
from kairship_client.models.kube_object import KubeObject
from kairship_client.models.object_list import ObjectList
from kairship_client.models.resource_kind import ResourceKind

URL = os.environ["KAIRSHIP_URL"]
INSTANCE = os.environ["KAIRSHIP_INSTANCE"]
NAMESPACE = os.environ["KAIRSHIP_NAMESPACE"]


def client(token_env):
    config = kairship_client.Configuration(host=URL, access_token=os.environ[token_env])
    return kairship_client.ApiClient(config)


def report(step, **facts):
    print(json.dumps({"step": step, **facts}), flush=True)


def error_facts(err):
    """The status and our `{code, message}` body of an error the client raised."""
    assert isinstance(err.data, ApiError), f"error body not decoded as ApiError: {err.body!r}"
    body = json.loads(err.body)
    assert set(body) >= {"code", "message"}, body
    assert body["code"] == int(err.data.code) and body["message"] == err.data.message, body
    return {"status": err.status, "code": int(err.data.code), "message": err.data.message}


def names(page):
    return [item["metadata"]["name"] for item in page.items]


admin = client("KAIRSHIP_ADMIN_TOKEN")
instances = InstancesApi(admin)
resources = ResourcesApi(admin)

page = instances.list_instances(page_size=10)
assert isinstance(page, ObjectList), type(page)
report("list_instances", names=names(page), total=page.pagination.total)

instance = instances.get_instance(INSTANCE)
report("get_instance", name=instance["metadata"]["name"])

configmaps = ResourceKind.CONFIGMAPS
created = resources.create_namespaced_resource(
    INSTANCE,
    NAMESPACE,
    configmaps,
    KubeObject(metadata={"name": "from-python"}, data={"greeting": "hello"}),
)
report("create_configmap", name=created["metadata"]["name"])

listed = resources.list_namespaced_resources(INSTANCE, NAMESPACE, configmaps, name="python")
report("list_configmaps", names=names(listed))

got = resources.get_namespaced_resource(INSTANCE, NAMESPACE, configmaps, "from-python")
report("get_configmap", data=got["data"])

deployment = KubeObject(
    metadata={"name": "web", "labels": {"app": "web"}},
    spec={
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    },
)
created = resources.create_namespaced_resource(
    INSTANCE, NAMESPACE, ResourceKind.DEPLOYMENTS, deployment
)
report("create_deployment", name=created["metadata"]["name"])
got = resources.get_namespaced_resource(INSTANCE, NAMESPACE, ResourceKind.DEPLOYMENTS, "web")
report("get_deployment", replicas=got["spec"]["replicas"])
paused = resources.pause_deployment(INSTANCE, NAMESPACE, "web")
report("pause_deployment", paused=paused["spec"]["paused"])

try:
    resources.get_namespaced_resource(INSTANCE, NAMESPACE, configmaps, "nothing-here")
    raise AssertionError("reading a missing object succeeded")
except NotFoundException as err:
    report("get_missing", **error_facts(err))

viewer = ResourcesApi(client("KAIRSHIP_VIEWER_TOKEN"))
try:
    viewer.create_namespaced_resource(
        INSTANCE, NAMESPACE, configmaps, KubeObject(metadata={"name": "viewer-made"})
    )
    raise AssertionError("a viewer created an object")
except ForbiddenException as err:
    report("viewer_create", **error_facts(err))

# The generic resource paths: any group, version and resource the instance serves.
generic = resources.create_namespaced_object(
    INSTANCE,
    NAMESPACE,
    "core",
    "v1",
    "configmaps",
    {"metadata": {"name": "generic-python", "labels": {"via": "generic"}}, "data": {"a": "b"}},
)
report("generic_create", name=generic["metadata"]["name"], kind=generic["kind"])
listed = resources.list_objects(
    INSTANCE, "core", "v1", "configmaps", namespaces=NAMESPACE, label_selector="via=generic"
)
report("generic_list", names=names(listed), total=listed.pagination.total)
patched = resources.patch_namespaced_object(
    INSTANCE,
    NAMESPACE,
    "core",
    "v1",
    "configmaps",
    "generic-python",
    {"metadata": {"labels": {"patched": "yes"}}},
    _content_type="application/merge-patch+json",
)
report("generic_patch", labels=patched["metadata"]["labels"])
event = resources.create_namespaced_object(
    INSTANCE,
    NAMESPACE,
    "core",
    "v1",
    "events",
    {
        "metadata": {"name": "generic-python.1"},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "generic-python",
                           "namespace": NAMESPACE},
        "type": "Normal",
        "reason": "Created",
        "message": "made from python",
    },
)
report("generic_event", involved=event["involvedObject"]["name"])
events = resources.list_namespaced_object_events(
    INSTANCE, NAMESPACE, "core", "v1", "configmaps", "generic-python"
)
report("generic_events", names=names(events))
try:
    resources.list_objects(INSTANCE, "example.com", "v1", "gizmos")
    raise AssertionError("listing an unknown resource succeeded")
except NotFoundException as err:
    report("generic_unknown", **error_facts(err))
deleted = resources.delete_namespaced_object(
    INSTANCE, NAMESPACE, "core", "v1", "configmaps", "generic-python"
)
report("generic_delete", name=deleted["metadata"]["name"])

# Applications: a dry run, then the real thing, through the typed request models.
from kairship_client.api.applications_api import ApplicationsApi  # noqa: E402
from kairship_client.models.application_port import ApplicationPort  # noqa: E402
from kairship_client.models.application_service import ApplicationService  # noqa: E402
from kairship_client.models.application_spec import ApplicationSpec  # noqa: E402
from kairship_client.models.cluster_override import ClusterOverride  # noqa: E402
from kairship_client.models.placement import Placement  # noqa: E402


def shop(dry_run):
    return ApplicationSpec(
        workload={
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "shop"},
            "spec": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "shop", "image": "nginx:1.27"}]}},
            },
        },
        service=ApplicationService(ports=[ApplicationPort(port=80)]),
        placement=Placement(cluster_names=["east", "west"], weights={"east": 1, "west": 1}),
        overrides=[ClusterOverride(cluster="east", image="nginx:1.28", replicas=3)],
        dry_run=dry_run,
    )


applications = ApplicationsApi(admin)
preview = applications.create_application(INSTANCE, NAMESPACE, shop(True))
report(
    "application_dry_run",
    dry_run=preview.dry_run,
    kinds=[o["kind"] for o in preview.objects],
)
made = applications.create_application(INSTANCE, NAMESPACE, shop(False))
report("application_create", names=[o["metadata"]["name"] for o in made.objects])
try:
    applications.create_application(
        INSTANCE, NAMESPACE, ApplicationSpec(workload={"kind": "Pod"}, placement=Placement())
    )
    raise AssertionError("an application of a Pod was created")
except kairship_client.exceptions.BadRequestException as err:
    report("application_invalid", **error_facts(err))

# Job and CronJob verbs.
resources.create_namespaced_resource(
    INSTANCE,
    NAMESPACE,
    ResourceKind.JOBS,
    KubeObject(
        metadata={"name": "once"},
        spec={"template": {"spec": {"restartPolicy": "Never",
                                    "containers": [{"name": "c", "image": "busybox"}]}}},
    ),
)
old = resources.get_namespaced_resource(INSTANCE, NAMESPACE, ResourceKind.JOBS, "once")
new = resources.restart_job(INSTANCE, NAMESPACE, "once")
report("restart_job", renewed=new["metadata"]["uid"] != old["metadata"]["uid"])
resources.create_namespaced_resource(
    INSTANCE,
    NAMESPACE,
    ResourceKind.CRONJOBS,
    KubeObject(
        metadata={"name": "tick"},
        spec={"schedule": "*/5 * * * *",
              "jobTemplate": {"spec": {"template": {"spec": {
                  "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}},
    ),
)
paused = resources.pause_cron_job(INSTANCE, NAMESPACE, "tick")
report("pause_cronjob", suspend=paused["spec"]["suspend"])
resumed = resources.resume_cron_job(INSTANCE, NAMESPACE, "tick")
report("resume_cronjob", suspend=resumed["spec"]["suspend"])
# Member clusters: Push join from a kubeconfig, Pull registration, update, unjoin.
from kairship_client.api.clusters_api import ClustersApi
from kairship_client.models.join_member_request import JoinMemberRequest
from kairship_client.models.register_member_request import RegisterMemberRequest
from kairship_client.models.update_member_request import UpdateMemberRequest

clusters = ClustersApi(admin)
joined = clusters.join_member(
    INSTANCE,
    JoinMemberRequest(
        name="py-member",
        kubeconfig=os.environ["KAIRSHIP_MEMBER_KUBECONFIG"],
        labels={"env": "python"},
        region="eu",
    ),
)
report(
    "join_member",
    syncMode=joined["spec"]["syncMode"],
    secretRef=joined["spec"]["secretRef"]["name"],
)
registered = clusters.register_member(INSTANCE, RegisterMemberRequest(name="py-pull"))
report("register_member", kinds=[m["kind"] for m in registered.manifests])
updated = clusters.update_member(
    INSTANCE, "py-member", UpdateMemberRequest(labels={"tier": "gold"})
)
report("update_member", labels=updated["metadata"]["labels"])
removed = clusters.remove_cluster(INSTANCE, "py-member")
report("remove_member", name=removed["metadata"]["name"])
# What the member clusters hold, through Karmada's cluster proxy, and :promote.
from kairship_client.api.members_api import MembersApi  # noqa: E402
from kairship_client.models.workload_kind import WorkloadKind  # noqa: E402

MEMBER = os.environ["KAIRSHIP_MEMBER"]
CLUSTER_ANNOTATION = "resource.karmada.io/cached-from-cluster"
members = MembersApi(admin)

nodes = members.list_member_nodes(INSTANCE, MEMBER)
report("member_nodes", names=names(nodes))
deployments = members.list_member_namespaced_objects(
    INSTANCE, MEMBER, NAMESPACE, "apps", "v1", "deployments", name="leg"
)
report("member_deployments", names=names(deployments))
legacy = members.get_member_namespaced_object(
    INSTANCE, MEMBER, NAMESPACE, "apps", "v1", "deployments", "legacy"
)
report("member_deployment", cluster=legacy["metadata"]["annotations"][CLUSTER_ANNOTATION])
namespaces = members.list_member_objects(
    INSTANCE, MEMBER, "core", "v1", "namespaces", name=NAMESPACE
)
report("member_namespaces", total=namespaces.pagination.total)
node = members.get_member_object(INSTANCE, MEMBER, "core", "v1", "nodes", names(nodes)[0])
report("member_node", name=node["metadata"]["name"])
try:
    members.list_member_nodes(INSTANCE, "no-such-member")
    raise AssertionError("an unknown member answered")
except NotFoundException as err:
    report("member_unknown", **error_facts(err))

plan = members.promote_workload(
    INSTANCE, MEMBER, NAMESPACE, WorkloadKind.DEPLOYMENTS, "legacy", dry_run=True
)
report("promote_dry_run", kinds=[o["kind"] for o in plan.objects])
done = members.promote_workload(INSTANCE, MEMBER, NAMESPACE, WorkloadKind.DEPLOYMENTS, "legacy")
report("promote", dry_run=done.dry_run, kinds=[o["kind"] for o in done.objects])
# Karmada would now bind the promoted Deployment to the member: its binding, as it writes it.
resources.create_namespaced_object(
    INSTANCE,
    NAMESPACE,
    "work.karmada.io",
    "v1alpha2",
    "resourcebindings",
    {
        "metadata": {"name": "legacy-deployment"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "legacy",
                         "namespace": NAMESPACE},
            "clusters": [{"name": MEMBER, "replicas": 1}],
        },
    },
)
pods = members.list_workload_pods(INSTANCE, NAMESPACE, WorkloadKind.DEPLOYMENTS, "legacy")
report(
    "workload_pods",
    pods=[[p["metadata"]["annotations"][CLUSTER_ANNOTATION], p["metadata"]["name"]]
          for p in pods.items],
)


# Adopting an instance from a kubeconfig pasted into the call.
from kairship_client.exceptions import BadRequestException  # noqa: E402
from kairship_client.models.adopt_instance_options import AdoptInstanceOptions  # noqa: E402

with open(os.environ["KAIRSHIP_KUBECONFIG_FILE"]) as f:
    pasted = f.read()
try:
    instances.adopt_instance("py-bad", AdoptInstanceOptions(kubeconfig="clusters: [oops"))
    raise AssertionError("a bad kubeconfig was accepted")
except BadRequestException as err:
    report("adopt_invalid", **error_facts(err))
adopted = instances.adopt_instance(
    "py-adopted", AdoptInstanceOptions(kubeconfig=pasted, alias="From Python")
)
answer = json.dumps(adopted)
report(
    "adopt_instance",
    name=adopted["metadata"]["name"],
    mode=adopted["spec"]["mode"],
    alias=adopted["spec"]["alias"],
    secret=adopted["spec"]["kubeconfigSecretRef"],
    echoed=any(len(line.strip()) > 12 and line.strip() in answer for line in pasted.splitlines()),
)
