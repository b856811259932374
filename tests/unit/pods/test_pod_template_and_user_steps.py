"""Pod templates and user feature steps (a port of Spark's PodBuilderSuite and builder suites)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import attrs
import pytest
import yaml
from pod_builder_fixtures import FACTS, build, env_values, make_conf, make_request, spark_container

from k8s_backend.conf.model import KubernetesConf, ResourceProfile
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.step import BaseFeatureStep, SparkPod, StepContext

TEMPLATE: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "labels": {"test-label-key": "test-label-value"},
        "annotations": {"test-annotation-key": "test-annotation-value"},
        "namespace": "namespace",
        "ownerReferences": [{"controller": True, "name": "owner-reference", "uid": "owner-uid"}],
    },
    "spec": {
        "dnsPolicy": "dns-policy",
        "hostAliases": [{"hostnames": ["hostname"]}],
        "imagePullSecrets": [{"name": "local-reference"}],
        "initContainers": [{"name": "init-container"}],
        "nodeName": "node-name",
        "nodeSelector": {"node-selector-key": "node-selector-value"},
        "schedulerName": "scheduler",
        "securityContext": {"runAsUser": 1000},
        "serviceAccount": "service-account",
        "subdomain": "subdomain",
        "tolerations": [{"key": "toleration-key", "operator": "Equal", "effect": "NoSchedule"}],
        "volumes": [{"name": "test-volume", "hostPath": {"path": "/test"}}],
        "containers": [
            {
                "args": ["arg"],
                "command": ["command"],
                "env": [{"name": "env-key", "value": "env-value"}],
                "imagePullPolicy": "Always",
                "name": "executor-container",
                "resources": {"limits": {"gpu": "1"}},
                "securityContext": {"runAsNonRoot": True},
                "stdin": True,
                "terminationMessagePath": "termination-message-path",
                "terminationMessagePolicy": "termination-message-policy",
                "volumeMounts": [{"name": "test-volume", "mountPath": "/test"}],
            }
        ],
    },
}


def template_conf(
    tmp_path, template: object, name: str = "template.yaml", namespace: str = "namespace", **executor
) -> KubernetesConf:
    """A configuration with the template written to a file, in ``namespace`` (TEMPLATE's by default: a
    template may only repeat the application's namespace)."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(template) if name.endswith(".yaml") else json.dumps(template))
    return attrs.evolve(make_conf(pod_template_file=str(path), **executor), namespace=namespace)


@pytest.mark.parametrize("namespace", ["namespace", None, ""])
def test_a_template_may_name_the_applications_namespace_or_none(tmp_path, namespace: str | None) -> None:
    template = {"metadata": {"namespace": namespace}, "spec": {"containers": [{"name": "spark"}]}}
    pod = build(template_conf(tmp_path, template)).pod
    assert pod["metadata"].get("namespace") == namespace


def test_a_template_in_another_namespace_is_refused_before_any_pod(tmp_path) -> None:
    # A real API server answers 400 to a pod whose metadata.namespace is not the request's.
    template = {"metadata": {"namespace": "other"}, "spec": {"containers": [{"name": "spark"}]}}
    refused = "metadata.namespace is 'other' but executor pods are created in 'spark-jobs'"
    with pytest.raises(ConfigError, match=refused) as e:
        ExecutorPodBuilder(template_conf(tmp_path, template, namespace="spark-jobs"), facts=FACTS)
    assert e.value.key == "spark.kubernetes.executor.podTemplateFile"


def test_empty_initial_pod_without_a_template() -> None:
    pod = build(make_conf()).pod
    assert [c["name"] for c in pod["spec"]["containers"]] == ["spark-kubernetes-executor"]
    assert set(pod["spec"]) == {
        "hostname",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "volumes",
        "containers",
    }


@pytest.mark.parametrize("file_name", ["template.yaml", "template.json"])
def test_load_pod_template(tmp_path, file_name: str) -> None:
    pod = build(template_conf(tmp_path, TEMPLATE, file_name)).pod
    metadata = pod["metadata"]
    assert metadata["labels"]["test-label-key"] == "test-label-value"
    assert metadata["annotations"] == {"test-annotation-key": "test-annotation-value"}
    assert metadata["namespace"] == "namespace"
    assert [r["name"] for r in metadata["ownerReferences"]] == ["owner-reference", "driver-pod"]
    spec = pod["spec"]
    for key in ("dnsPolicy", "hostAliases", "initContainers", "nodeName", "securityContext", "subdomain"):
        assert spec[key] == TEMPLATE["spec"][key]
    assert spec["tolerations"] == TEMPLATE["spec"]["tolerations"]
    assert spec["imagePullSecrets"] == [{"name": "local-reference"}]
    assert spec["nodeSelector"] == {"node-selector-key": "node-selector-value"}
    assert spec["schedulerName"] == "scheduler"
    assert spec["serviceAccount"] == "service-account"
    assert "test-volume" in [v["name"] for v in spec["volumes"]]
    assert [c["name"] for c in spec["containers"]] == ["executor-container"]
    container = spark_container(pod, "executor-container")
    assert container["args"] == ["arg", "executor"]
    assert container["command"] == ["command"]
    assert env_values(container)["env-key"] == "env-value"
    assert container["resources"]["limits"]["gpu"] == "1"
    assert container["resources"]["limits"]["memory"] == "1408Mi"
    # The template's security context is kept; Spark adds its allowPrivilegeEscalation setting.
    assert container["securityContext"] == {"runAsNonRoot": True, "allowPrivilegeEscalation": False}
    assert container["stdin"] is True
    assert container["terminationMessagePath"] == "termination-message-path"
    assert container["terminationMessagePolicy"] == "termination-message-policy"
    assert "test-volume" in [m["name"] for m in container["volumeMounts"]]
    # Spark's settings win over the template's.
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["image"] == "executor-image"


def test_template_with_a_sidecar(tmp_path) -> None:
    sidecar = {"name": "log-shipper", "image": "fluent-bit", "env": [{"name": "A", "value": "1"}]}
    template = {"spec": {"containers": [sidecar, {"name": "spark", "image": "ignored"}]}}
    pod = build(template_conf(tmp_path, template, pod_template_container_name="spark")).pod
    assert [c["name"] for c in pod["spec"]["containers"]] == ["log-shipper", "spark"]
    assert pod["spec"]["containers"][0] == sidecar
    assert spark_container(pod, "spark")["image"] == "executor-image"


def test_missing_named_container_falls_back_to_the_first(tmp_path, caplog) -> None:
    template = {"spec": {"containers": [{"name": "first"}, {"name": "second"}]}}
    with caplog.at_level(logging.WARNING, logger="k8s_backend.pods.template"):
        builder = ExecutorPodBuilder(
            template_conf(tmp_path, template, pod_template_container_name="x"), facts=FACTS
        )
    assert "Container 'x' not found" in caplog.text
    pod = builder.build(make_request(builder.conf)).pod
    assert pod["spec"]["containers"][0]["image"] == "executor-image"
    assert pod["spec"]["containers"][0]["name"] == "first"
    assert "image" not in pod["spec"]["containers"][1]


def test_template_settings_that_spark_overrides_and_those_it_keeps(tmp_path) -> None:
    template = {
        "spec": {
            "hostname": "template-host",
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "spark",
                    "env": [{"name": "SPARK_EXECUTOR_CORES", "value": "99"}, {"name": "KEEP", "value": "1"}],
                    "ports": [
                        {"name": "blockmanager", "containerPort": 1},
                        {"name": "ui", "containerPort": 4040},
                    ],
                    "resources": {"requests": {"cpu": "7", "ephemeral-storage": "1Gi"}},
                }
            ],
        }
    }
    pod = build(template_conf(tmp_path, template)).pod
    container = spark_container(pod, "spark")
    env = env_values(container)
    assert env["SPARK_EXECUTOR_CORES"] == "1"
    assert env["KEEP"] == "1"
    assert container["ports"] == [
        {"name": "ui", "containerPort": 4040},
        {"name": "blockmanager", "containerPort": 7079},
    ]
    assert container["resources"]["requests"] == {"cpu": "1", "ephemeral-storage": "1Gi", "memory": "1408Mi"}
    assert pod["spec"]["hostname"] == "base-exec-1"
    assert pod["spec"]["restartPolicy"] == "Never"


def test_non_default_profile_clears_template_resources(tmp_path) -> None:
    template = {
        "spec": {"containers": [{"name": "spark", "resources": {"limits": {"gpu": "1", "cpu": "8"}}}]}
    }
    conf = template_conf(tmp_path, template)
    pod = build(conf, profile=ResourceProfile(id=2, cores=3)).pod
    assert spark_container(pod, "spark")["resources"] == {
        "requests": {"memory": "1408Mi", "cpu": "3"},
        "limits": {"memory": "1408Mi"},
    }


def test_builds_do_not_share_template_state(tmp_path) -> None:
    builder = ExecutorPodBuilder(template_conf(tmp_path, TEMPLATE), facts=FACTS)
    first = builder.build(make_request(builder.conf, executor_id=1)).pod
    second = builder.build(make_request(builder.conf, executor_id=2)).pod
    assert spark_container(first, "executor-container")["args"] == ["arg", "executor"]
    assert spark_container(second, "executor-container")["args"] == ["arg", "executor"]
    assert first["metadata"]["name"] == "base-exec-1"
    assert len(second["metadata"]["ownerReferences"]) == 2


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("spec: [unclosed", "not valid YAML or JSON"),
        ("- a\n- b\n", "expected a Pod object, got list"),
        ("kind: Deployment\nspec: {}\n", "expected kind: Pod, got kind: Deployment"),
        ("spec:\n  containers: nope\n", "spec.containers must be a list"),
        ("metadata: 3\n", "metadata must be a mapping"),
    ],
)
def test_misconfigured_pod_template(tmp_path, content: str, problem: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=problem) as err:
        ExecutorPodBuilder(make_conf(pod_template_file=str(path)), facts=FACTS)
    assert err.value.key == "spark.kubernetes.executor.podTemplateFile"
    assert "spark.kubernetes.executor.podTemplateFile" in str(err.value)


def test_missing_template_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read it") as err:
        ExecutorPodBuilder(make_conf(pod_template_file=str(tmp_path / "nope.yaml")), facts=FACTS)
    assert err.value.key == "spark.kubernetes.executor.podTemplateFile"


def test_file_uri_template(tmp_path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"metadata": {"labels": {"a": "b"}}}))
    pod = build(make_conf(pod_template_file=f"file://{path}")).pod
    assert pod["metadata"]["labels"]["a"] == "b"


def test_remote_template_is_rejected() -> None:
    with pytest.raises(ConfigError, match="only local files are supported"):
        ExecutorPodBuilder(make_conf(pod_template_file="s3a://bucket/t.yaml"), facts=FACTS)


# --- user feature steps --------------------------------------------------------------------------


class AddLabelStep(BaseFeatureStep):
    """A no-argument user step."""

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        pod = pod.copy()
        pod.pod["metadata"]["labels"]["user"] = f"exec-{ctx.executor_id}"
        # User steps run last: they see what the built-in steps did.
        pod.pod["metadata"]["labels"]["saw-local-dirs"] = str(
            any(e["name"] == "SPARK_LOCAL_DIRS" for e in pod.container["env"])
        ).lower()
        return pod


class ConfStep:
    """A user step that takes the configuration and also creates a claim and a ConfigMap."""

    def __init__(self, conf: KubernetesConf) -> None:
        self.app_name = conf.app_name

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        pod = pod.copy()
        pod.pod["metadata"].setdefault("annotations", {})["app"] = self.app_name
        return pod

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return [
            {"kind": "PersistentVolumeClaim", "metadata": {"name": f"{ctx.pod_name}-extra"}},
            {"kind": "ConfigMap", "metadata": {"name": "ignored"}},
        ]


class NotAStep:
    pass


class FailingStep(BaseFeatureStep):
    def __init__(self) -> None:
        raise RuntimeError("boom")


def _steps_conf(*entries: str) -> KubernetesConf:
    return make_conf(feature_steps=entries, app_name="my-app")


def test_user_steps_by_dotted_and_colon_paths(caplog) -> None:
    conf = _steps_conf(f"{__name__}.AddLabelStep", f"{__name__}:ConfStep")
    with caplog.at_level(logging.WARNING, logger="k8s_backend.pods.builder"):
        spec = build(conf, executor_id=4)
    assert spec.pod["metadata"]["labels"]["user"] == "exec-4"
    assert spec.pod["metadata"]["labels"]["saw-local-dirs"] == "true"
    assert spec.pod["metadata"]["annotations"] == {"app": "my-app"}
    assert spec.pvcs == ({"kind": "PersistentVolumeClaim", "metadata": {"name": "base-exec-4-extra"}},)
    assert "Ignoring additional executor resources of kind ConfigMap" in caplog.text


def test_steps_given_in_code_run_after_configured_steps() -> None:
    class Second(BaseFeatureStep):
        def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
            pod = pod.copy()
            pod.pod["metadata"]["labels"]["user"] += "-then-code"
            return pod

    spec = build(_steps_conf(f"{__name__}.AddLabelStep"), steps=[Second()])
    assert spec.pod["metadata"]["labels"]["user"] == "exec-1-then-code"


def test_a_class_that_is_not_a_step_is_rejected() -> None:
    with pytest.raises(ConfigError, match="NotAStep is not a feature step") as err:
        ExecutorPodBuilder(_steps_conf(f"{__name__}.NotAStep"), facts=FACTS)
    assert err.value.key == "spark.kubernetes.executor.pod.featureSteps"


def test_a_non_step_passed_in_code_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"steps\[0\] \(NotAStep\) is not a feature step"):
        ExecutorPodBuilder(make_conf(), [NotAStep()], facts=FACTS)  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("no_such_module_xyz.Step", "cannot import module 'no_such_module_xyz'"),
        (f"{__name__}.Missing", "has no attribute 'Missing'"),
        (f"{__name__}.TEMPLATE", "'TEMPLATE' is a dict, not a class"),
        ("NoModule", "not a class path"),
        (f"{__name__}.FailingStep", "constructing FailingStep failed"),
        (
            "org.apache.spark.deploy.k8s.features.VolcanoFeatureStep",
            "looks like a JVM class; k8s_backend builds executor pods in Python",
        ),
    ],
)
def test_bad_feature_step_entries(entry: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as err:
        ExecutorPodBuilder(_steps_conf(entry), facts=FACTS)
    assert err.value.key == "spark.kubernetes.executor.pod.featureSteps"
    assert "Python class path" in str(err.value)


def test_template_status_is_dropped(tmp_path) -> None:
    pod = build(template_conf(tmp_path, {"status": {"phase": "Running"}, "spec": {}})).pod
    assert "status" not in pod


def test_pull_secrets_and_owner_references_are_not_duplicated(tmp_path) -> None:
    template = {
        "metadata": {"ownerReferences": [{"name": "driver-pod", "uid": "driver-uid"}]},
        "spec": {"imagePullSecrets": [{"name": "regcred"}]},
    }
    pod = build(template_conf(tmp_path, template, pull_secrets=("regcred", "other"))).pod
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}, {"name": "other"}]
    assert [r["uid"] for r in pod["metadata"]["ownerReferences"]] == ["driver-uid"]
    assert pod["metadata"]["ownerReferences"][0]["controller"] is True


def test_a_step_module_that_fails_to_import(tmp_path, monkeypatch) -> None:
    (tmp_path / "broken_steps_mod.py").write_text("raise RuntimeError('bad module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="importing module 'broken_steps_mod' failed"):
        ExecutorPodBuilder(_steps_conf("broken_steps_mod.Step"), facts=FACTS)
