"""docs/fleet/rayjob.yaml, the KubeRay RayJob that runs a loadgen fleet, is a valid manifest.

kubernetes-validate knows the Kubernetes API, not KubeRay's RayJob (a custom resource), so:
- the plain Kubernetes objects of the file (PersistentVolumeClaims) are validated as they are, and the pod
  templates inside the RayJob (head and every worker group) as a ``v1 PodTemplate``, against the
  Kubernetes 1.37 schema in strict mode (an unknown field fails);
- the RayJob's own fields are checked against a JSON Schema written here from KubeRay's Go types
  (ray-project/kuberay, ray-operator/apis/ray/v1/rayjob_types.go: RayJobSpec; raycluster_types.go:
  RayClusterSpec, HeadGroupSpec, WorkerGroupSpec; unknown fields refused), plus what a fleet needs: a
  worker group with ``nvidia.com/gpu: 1`` per pod, an entrypoint that runs ``loadgen fleet run ...
  --ray-address auto`` and survives the submitter pod's shell, and its ``--out`` or ``--runs-dir`` on a mounted volume.
Each check is shown to fail on a broken copy of the manifest.
"""

from __future__ import annotations

import copy
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

MANIFEST = Path(__file__).resolve().parents[2] / "docs" / "fleet" / "rayjob.yaml"
K8S_VERSION = "1.37"
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_INT32 = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
_HEAD = {
    "type": "object",
    "required": ["rayStartParams", "template"],
    "additionalProperties": False,
    "properties": {
        "serviceType": {"type": "string"},
        "headService": {"type": "object"},
        "enableIngress": {"type": "boolean"},
        "rayStartParams": _STRINGS,
        "template": {"type": "object"},
        "labels": _STRINGS,
        "resources": _STRINGS,
    },
}
_WORKER = {
    "type": "object",
    "required": ["groupName", "rayStartParams", "template"],
    "additionalProperties": False,
    "properties": {
        "groupName": {"type": "string", "minLength": 1},
        "replicas": _INT32,
        "minReplicas": _INT32,
        "maxReplicas": _INT32,
        "numOfHosts": _INT32,
        "rayStartParams": _STRINGS,
        "template": {"type": "object"},
        "scaleStrategy": {"type": "object"},
        "labels": _STRINGS,
        "resources": _STRINGS,
    },
}
#: RayJob (ray.io/v1) as KubeRay's types declare it, the fields a fleet uses made required.
RAYJOB_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayJob"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}},
        },
        "spec": {
            "type": "object",
            "required": ["entrypoint", "rayClusterSpec"],
            "additionalProperties": False,
            "properties": {
                "activeDeadlineSeconds": {**_INT32, "minimum": 1},
                "backoffLimit": _INT32,
                "submitterPodTemplate": {"type": "object"},
                "metadata": _STRINGS,
                "clusterSelector": _STRINGS,
                "submitterConfig": {"type": "object"},
                "managedBy": {"type": "string"},
                "deletionStrategy": {"type": "object"},
                "entrypoint": {"type": "string", "minLength": 1},
                "runtimeEnvYAML": {"type": "string"},
                "jobId": {"type": "string"},
                "submissionMode": {"enum": ["K8sJobMode", "HTTPMode", "InteractiveMode"]},
                "entrypointResources": {"type": "string"},
                "entrypointNumCpus": {"type": "number"},
                "entrypointNumGpus": {"type": "number"},
                "ttlSecondsAfterFinished": _INT32,
                "shutdownAfterJobFinishes": {"type": "boolean"},
                "suspend": {"type": "boolean"},
                "schedule": {"type": "string"},
                "rayClusterSpec": {
                    "type": "object",
                    "required": ["headGroupSpec", "workerGroupSpecs"],
                    "additionalProperties": False,
                    "properties": {
                        "headGroupSpec": _HEAD,
                        "workerGroupSpecs": {"type": "array", "minItems": 1, "items": _WORKER},
                        "rayVersion": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
                        "enableInTreeAutoscaling": {"type": "boolean"},
                        "autoscalerOptions": {"type": "object"},
                        "headServiceAnnotations": _STRINGS,
                        "suspend": {"type": "boolean"},
                    },
                },
            },
        },
    },
}
_SHELL_OPERATORS = {"&&", "||", ";", "|", "&", ";;", "(", ")", "<", ">", ">>"}


def _docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def _pod_template(template: dict[str, Any], name: str) -> dict[str, Any]:
    """A RayJob group's ``template`` (a PodTemplateSpec) as a ``v1 PodTemplate`` object."""
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}, "template": template}


def _groups(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    spec = job["spec"]["rayClusterSpec"]
    return [("head", spec["headGroupSpec"]), *((f"worker-{g['groupName']}", g) for g in spec["workerGroupSpecs"])]


def _fleet_problems(job: dict[str, Any]) -> list[str]:
    """What a fleet needs beyond the schemas: GPU workers of one GPU each, the entrypoint, its output mounted."""
    problems = []
    for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
        for c in g["template"]["spec"]["containers"]:
            limit = ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
            if str(limit) != "1":
                problems.append(f"worker group {g['groupName']} container {c['name']}: nvidia.com/gpu limit {limit}")
    tokens = list(shlex.shlex(job["spec"]["entrypoint"], posix=True, punctuation_chars=True))
    if bad := [t for t in tokens if t in _SHELL_OPERATORS]:
        problems.append(f"the entrypoint has bare shell operators {bad}: the submitter's shell would run them")
    inner = shlex.split(tokens[2]) if tokens[:2] == ["bash", "-c"] and len(tokens) == 3 else tokens
    command = inner[inner.index("loadgen") :] if "loadgen" in inner else []
    if command[:3] != ["loadgen", "fleet", "run"] or "--ray-address" not in command:
        problems.append(f"the entrypoint does not run `loadgen fleet run FLEET --ray-address ...`: {inner}")
    flag = next((f for f in ("--out", "--runs-dir") if f in command[:-1]), None)
    out = command[command.index(flag) + 1] if flag else ""
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    if not any(
        (out.rstrip("/") + "/").startswith(m["mountPath"].rstrip("/") + "/") for m in head.get("volumeMounts") or []
    ):
        problems.append(f"the fleet folder {out!r} is not on a volume mounted in the head pod")
    return problems


def _validate(docs: list[dict[str, Any]]) -> list[str]:
    """Every check on a manifest's objects; [] when valid. kubernetes-validate raises on a Kubernetes object."""
    [job] = [d for d in docs if d.get("kind") == "RayJob"]
    problems = [
        f"RayJob: {e.message} at {'.'.join(map(str, e.path))}"
        for e in jsonschema.Draft202012Validator(RAYJOB_SCHEMA).iter_errors(job)
    ]
    if problems:
        return problems
    for d in docs:
        if d is not job:
            kubernetes_validate.validate(d, K8S_VERSION, strict=True)
    for name, group in _groups(job):
        kubernetes_validate.validate(_pod_template(group["template"], name), K8S_VERSION, strict=True)
    claims = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    for name, group in _groups(job):
        for v in group["template"]["spec"].get("volumes") or []:
            if "persistentVolumeClaim" in v and v["persistentVolumeClaim"]["claimName"] not in claims:
                problems.append(
                    f"{name}: volume {v['name']} claims {v['persistentVolumeClaim']['claimName']}, "
                    "which the file does not define"
                )
    return problems + _fleet_problems(job)


def test_the_manifest_is_valid() -> None:
    docs = _docs()
    assert sorted(d["kind"] for d in docs) == ["PersistentVolumeClaim", "PersistentVolumeClaim", "RayJob"]
    assert _validate(docs) == []


def test_the_rayjob_runs_the_fleet_on_one_gpu_per_worker() -> None:
    [job] = [d for d in _docs() if d["kind"] == "RayJob"]
    [workers] = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    [container] = workers["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1" and workers["replicas"] >= 1
    assert shlex.split(job["spec"]["entrypoint"]) == [
        "bash",
        "-c",
        "cd /opt/loadgen && exec loadgen fleet run profiles/fleets/h200.toml --ray-address auto --runs-dir /results",
    ]
    assert job["spec"]["shutdownAfterJobFinishes"] is True


def _broken(edit: Any) -> list[dict[str, Any]]:
    docs = copy.deepcopy(_docs())
    edit({d["kind"] + ":" + d["metadata"]["name"]: d for d in docs})
    return docs


def _worker(docs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = docs["RayJob:loadgen-fleet"]["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    return spec


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(
            lambda d: _worker(d)["template"]["spec"]["containers"][0].update(ports=[{"containerPort": "http"}]),
            id="pod template: containerPort a string",
        ),
        pytest.param(lambda d: _worker(d)["template"]["spec"].update(volume=[]), id="pod template: unknown field"),
        pytest.param(
            lambda d: d["PersistentVolumeClaim:loadgen-fleet-results"]["spec"].update(accessModes="ReadWriteOnce"),
            id="claim: accessModes not a list",
        ),
    ],
)
def test_kubernetes_validate_refuses_a_broken_kubernetes_object(edit: Any) -> None:
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(_broken(edit))


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: _worker(d).update(replicas="4"), "'4' is not of type 'integer'"),
        (lambda d: _worker(d).update(rayStartParams={"num-gpus": 1}), "1 is not of type 'string'"),
        (
            lambda d: d["RayJob:loadgen-fleet"]["spec"].update(shutdownAfterJobFinish=True),
            "Additional properties are not allowed ('shutdownAfterJobFinish' was unexpected)",
        ),
        (
            lambda d: d["RayJob:loadgen-fleet"]["spec"]["rayClusterSpec"].pop("headGroupSpec"),
            "'headGroupSpec' is a required property",
        ),
        (lambda d: d["RayJob:loadgen-fleet"]["spec"].pop("entrypoint"), "'entrypoint' is a required property"),
        (lambda d: d["RayJob:loadgen-fleet"].update(apiVersion="ray.io/v1alpha1"), "'ray.io/v1' was expected"),
        (
            lambda d: _worker(d)["template"]["spec"]["containers"][0]["resources"]["limits"].pop("nvidia.com/gpu"),
            "nvidia.com/gpu limit None",
        ),
        (
            lambda d: d["RayJob:loadgen-fleet"]["spec"].update(
                entrypoint="cd /opt/loadgen && loadgen fleet run f.toml --ray-address auto --out /results/fleet"
            ),
            "bare shell operators ['&&']",
        ),
        (
            lambda d: d["RayJob:loadgen-fleet"]["spec"].update(
                entrypoint="loadgen fleet run f.toml --ray-address auto --out /tmp/fleet"
            ),
            "'/tmp/fleet' is not on a volume mounted in the head pod",
        ),
        (
            lambda d: d["PersistentVolumeClaim:loadgen-models"]["metadata"].update(name="models"),
            "claims loadgen-models, which the file does not define",
        ),
    ],
)
def test_a_broken_rayjob_is_refused(edit: Any, problem: str) -> None:
    assert any(problem in p for p in _validate(_broken(edit))), _validate(_broken(edit))
