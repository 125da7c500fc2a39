"""The Kairship API from Python, through the client openapi-generator makes of /openapi.json.

Run by the `generated_python_client` example against `kairship sandbox`, with the generated
package (`kairship_client`) on PYTHONPATH, or by hand:

    kairship sandbox --dir kairship-sandbox --api-port 8443 &
    openapi-generator-cli generate -i http://127.0.0.1:8443/openapi.json -g python \
        -o client --package-name kairship_client
    PYTHONPATH=client KAIRSHIP_URL=http://127.0.0.1:8443 \
        KAIRSHIP_ADMIN_TOKEN="$(cat kairship-sandbox/admin.token)" \
        KAIRSHIP_VIEWER_TOKEN="$(cat kairship-sandbox/viewer.token)" python sandbox_client.py

Prints a `proved:` line per step; an unexpected answer raises (non-zero exit status).
"""

import json
import os

import kairship_client
from kairship_client.api.instances_api import InstancesApi
from kairship_client.api.resources_api import ResourcesApi
from kairship_client.exceptions import ForbiddenException
from kairship_client.models.kube_object import KubeObject
from kairship_client.models.resource_kind import ResourceKind

URL = os.environ["KAIRSHIP_URL"]
INSTANCE = "karmada-a"  # the instance the sandbox's viewer may read
NAMESPACE = "default"


def api_client(token):
    return kairship_client.ApiClient(kairship_client.Configuration(host=URL, access_token=token))


def names(page):
    return sorted(item["metadata"]["name"] for item in page.items)


admin = api_client(os.environ["KAIRSHIP_ADMIN_TOKEN"])
viewer = api_client(os.environ["KAIRSHIP_VIEWER_TOKEN"])

admin_sees = names(InstancesApi(admin).list_instances())
viewer_sees = names(InstancesApi(viewer).list_instances())
assert INSTANCE in admin_sees and len(admin_sees) >= 2, admin_sees
assert viewer_sees == [INSTANCE], viewer_sees
print(f"proved: the admin lists instances {admin_sees}, the viewer only {viewer_sees}")

configmaps = ResourceKind.CONFIGMAPS
ResourcesApi(admin).create_namespaced_resource(
    INSTANCE,
    NAMESPACE,
    configmaps,
    KubeObject(metadata={"name": "from-python"}, data={"greeting": "hello from Python"}),
)
got = ResourcesApi(viewer).get_namespaced_resource(INSTANCE, NAMESPACE, configmaps, "from-python")
assert got["data"] == {"greeting": "hello from Python"}, got
print(f"proved: the admin created ConfigMap from-python in {INSTANCE}; the viewer reads {got['data']}")

try:
    ResourcesApi(viewer).create_namespaced_resource(
        INSTANCE, NAMESPACE, configmaps, KubeObject(metadata={"name": "viewer-made"})
    )
    raise AssertionError("the viewer created an object")
except ForbiddenException as err:
    body = json.loads(err.body)
    print(f"proved: the viewer's create is refused with 403 {{code: {body['code']}, message: {body['message']!r}}}")
