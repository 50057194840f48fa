"""What deploy/kubernetes/ promises (docs/deploy.md, "Kubernetes"), read from the rendered overlays: every
modelport pod non-root on a read-only root filesystem with no service-account token, probes on the health
endpoints, requests and limits, a termination grace longer than the drain; secrets only by reference; real
settings and real commands; a budget and an autoscaler for every scaled Deployment; the migration first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click
import pytest
import yaml

from modelport.process.cli import main
from tests.support.deploy_tools import OVERLAYS, render
from tests.support.setting_names import is_setting

Object = dict[str, Any]


@pytest.fixture(scope="module", params=OVERLAYS)
def objects(request: pytest.FixtureRequest) -> list[Object]:
    return [o for o in yaml.safe_load_all(render(request.param)) if o]


def _named(objects: list[Object], kind: str) -> dict[str, Object]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def _modelport_pods(objects: list[Object]) -> Iterator[tuple[str, Object]]:
    """(name, pod spec) of every Deployment and Job running the modelport image."""
    for o in objects:
        if o["kind"] in ("Deployment", "Job"):
            spec = o["spec"]["template"]["spec"]
            if any("modelport" in c["image"].rsplit("/", 1)[-1] for c in spec["containers"]):
                yield o["metadata"]["name"], spec


def _settings(objects: list[Object]) -> dict[str, str]:
    (config,) = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("modelport-settings")
    ]
    data: dict[str, str] = config["data"]
    return data


def test_every_pod_runs_locked_down(objects: list[Object]) -> None:
    for o in objects:
        if o["kind"] not in ("Deployment", "Job"):
            continue
        spec = o["spec"]["template"]["spec"]
        name = o["metadata"]["name"]
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] >= 10000, name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False and security["capabilities"]["drop"] == ["ALL"], name
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), name
            assert {"cpu", "memory"} <= set(container["resources"]["limits"]), name
            # A read-only root: every place the process writes is a volume.
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            if "modelport" in container["image"]:
                assert {"/var/lib/modelport", "/tmp"} <= mounts, name


def test_the_modelport_pods_probe_the_health_endpoints(objects: list[Object]) -> None:
    for name, spec in _modelport_pods(objects):
        if name == "modelport-migrate":
            continue
        (container,) = spec["containers"]
        paths = {container[p]["httpGet"]["path"] for p in ("livenessProbe", "readinessProbe", "startupProbe")}
        if "worker" in name:
            assert paths == {"/metrics"}  # a worker's only HTTP
        else:
            assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_termination_grace_outlasts_the_drain(objects: list[Object]) -> None:
    settings = _settings(objects)
    drain = float(settings["MODELPORT_SERVER__DRAIN_SECONDS"])
    graceful = float(settings["MODELPORT_SERVER__GRACEFUL_SHUTDOWN_SECONDS"])
    for name, spec in _modelport_pods(objects):
        if name == "modelport-migrate":
            continue
        assert spec["terminationGracePeriodSeconds"] > drain + graceful, name
        if "serve" not in name:
            continue  # a worker is behind no Service
        # The readiness probe sees the drain's 503 before the drain ends: the Service drops the pod first.
        probe = spec["containers"][0]["readinessProbe"]
        assert probe["periodSeconds"] * probe["failureThreshold"] < drain, name


def test_secrets_are_only_referenced(objects: list[Object]) -> None:
    assert not [o for o in objects if o["kind"] == "Secret"]
    secret_names = {"MODELPORT_SECRET_KEY", "MODELPORT_ADMIN_TOKEN", "MODELPORT_FILES__S3_SECRET_ACCESS_KEY"}
    assert not secret_names & set(_settings(objects))
    for name, spec in _modelport_pods(objects):
        env = {e["name"]: e for e in spec["containers"][0].get("env", [])}
        assert "secretKeyRef" in env["MODELPORT_SECRET_KEY"]["valueFrom"], name


def test_only_real_settings_and_real_commands(objects: list[Object]) -> None:
    names = set(_settings(objects))
    for _, spec in _modelport_pods(objects):
        container = spec["containers"][0]
        names |= {e["name"] for e in container.get("env", [])}
        command = container["args"]
        sub = main.get_command(click.Context(main), command[0])
        assert sub is not None, command
        sub.make_context(command[0], list(command[1:]))  # unknown options raise
    unknown = sorted(n for n in names if n.startswith("MODELPORT_") and not is_setting(n))
    assert not unknown, f"settings the code does not read: {unknown}"


def test_every_scaled_deployment_has_a_budget_and_an_autoscaler(objects: list[Object]) -> None:
    deployments = _named(objects, "Deployment")
    budgets = _named(objects, "PodDisruptionBudget")
    scalers = {o["spec"]["scaleTargetRef"]["name"]: o for o in objects if o["kind"] == "HorizontalPodAutoscaler"}
    for name, deployment in deployments.items():
        if not name.startswith("modelport-serve") and not name.startswith("modelport-worker"):
            continue
        assert name in budgets
        selector = budgets[name]["spec"]["selector"]["matchLabels"]
        assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
        if deployment["spec"]["replicas"] > 1:
            assert name in scalers and scalers[name]["spec"]["minReplicas"] >= 2


def test_the_migration_applies_first_with_its_settings(objects: list[Object]) -> None:
    """`kubectl apply -k ... -l modelport.dev/rollout-phase=migrate` applies the Job and what it needs."""
    first = {
        o["kind"] for o in objects if o["metadata"].get("labels", {}).get("modelport.dev/rollout-phase") == "migrate"
    }
    assert first == {"Job", "ConfigMap", "NetworkPolicy"}
    (job,) = _named(objects, "Job").values()
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]


def test_the_overlays_topologies() -> None:
    production = [o for o in yaml.safe_load_all(render("production")) if o]
    demo = [o for o in yaml.safe_load_all(render("demo")) if o]
    serve = _named(production, "Deployment")["modelport-serve"]["spec"]["template"]["spec"]["containers"][0]
    assert "--no-workers" in serve["args"] and "modelport-worker" in _named(production, "Deployment")
    assert _settings(production)["MODELPORT_FILES__BACKEND"] == "s3"
    assert set(_named(demo, "Deployment")) == {"modelport-serve", "modelport-postgres", "modelport-redis"}
    assert _named(demo, "Deployment")["modelport-serve"]["spec"]["replicas"] == 1
    assert (
        "--no-workers"
        not in _named(demo, "Deployment")["modelport-serve"]["spec"]["template"]["spec"]["containers"][0]["args"]
    )
