"""Spark 4.3 executor settings that must reach the pod: grace period, privilege escalation, hostPath
type, subPathExpr, claim labels and annotations, and excluded feature steps."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import yaml
from pod_builder_fixtures import APP_ID, FACTS, build, env_names, make_conf, spark_container

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import Obj
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.step import BaseFeatureStep, SparkPod, StepContext
from k8s_backend.pods.steps import LocalDirsStep

BASE = {
    "spark.app.name": "app",
    "spark.kubernetes.container.image": "spark:4.3.0",
    "spark.kubernetes.executor.podNamePrefix": "app",
}
PVC = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data"
EXCLUDED = "spark.kubernetes.executor.pod.excludedFeatureSteps"
FEATURE_STEPS = "spark.kubernetes.executor.pod.featureSteps"


def from_spark(extra: Mapping[str, str]) -> KubernetesConf:
    return KubernetesConf.from_spark_conf({**BASE, **extra})


def pod_for(extra: Mapping[str, str]) -> Obj:
    return build(from_spark(extra)).pod


def with_template(tmp_path, template: Obj, extra: Mapping[str, str] | None = None) -> Obj:
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump(template))
    return pod_for({"spark.kubernetes.executor.podTemplateFile": str(path), **(extra or {})})


# --- terminationGracePeriodSeconds and allowPrivilegeEscalation -----------------------------------


def test_the_grace_period_defaults_to_30_seconds() -> None:
    assert pod_for({})["spec"]["terminationGracePeriodSeconds"] == 30


def test_the_grace_period_comes_from_its_key() -> None:
    pod = pod_for({"spark.kubernetes.executor.terminationGracePeriodSeconds": "7"})
    assert pod["spec"]["terminationGracePeriodSeconds"] == 7


def test_privilege_escalation_is_denied_by_default() -> None:
    container = spark_container(pod_for({}))
    assert container["securityContext"] == {"allowPrivilegeEscalation": False}


def test_privilege_escalation_can_be_allowed_for_executors() -> None:
    pod = pod_for({"spark.kubernetes.executor.securityContext.allowPrivilegeEscalation": "true"})
    assert spark_container(pod)["securityContext"]["allowPrivilegeEscalation"] is True


def test_privilege_escalation_falls_back_to_the_shared_key() -> None:
    pod = pod_for({"spark.kubernetes.securityContext.allowPrivilegeEscalation": "true"})
    assert spark_container(pod)["securityContext"]["allowPrivilegeEscalation"] is True


def test_spark_settings_override_the_template_values_as_in_spark(tmp_path) -> None:
    # Spark 4.3 sets both unconditionally (withTerminationGracePeriodSeconds,
    # editOrNewSecurityContext().withAllowPrivilegeEscalation): the template's values do not survive.
    template = {
        "spec": {
            "terminationGracePeriodSeconds": 600,
            "containers": [
                {
                    "name": "spark",
                    "securityContext": {"allowPrivilegeEscalation": True, "runAsUser": 185},
                }
            ],
        }
    }
    pod = with_template(tmp_path, template)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert spark_container(pod, "spark")["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "runAsUser": 185,
    }


def test_sidecars_keep_their_own_security_context(tmp_path) -> None:
    template = {
        "spec": {
            "containers": [
                {"name": "spark"},
                {"name": "sidecar", "securityContext": {"allowPrivilegeEscalation": True}},
            ]
        }
    }
    pod = with_template(tmp_path, template, {"spark.kubernetes.executor.podTemplateContainerName": "spark"})
    assert spark_container(pod, "sidecar")["securityContext"] == {"allowPrivilegeEscalation": True}


# --- volumes ----------------------------------------------------------------------------------------


def test_the_host_path_type_reaches_the_volume() -> None:
    pod = pod_for(
        {
            "spark.kubernetes.executor.volumes.hostPath.data.mount.path": "/data",
            "spark.kubernetes.executor.volumes.hostPath.data.options.path": "/mnt/data",
            "spark.kubernetes.executor.volumes.hostPath.data.options.type": "Directory",
        }
    )
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "data"]
    assert volume["hostPath"] == {"path": "/mnt/data", "type": "Directory"}


def test_a_host_path_without_a_type_has_no_type() -> None:
    pod = pod_for(
        {
            "spark.kubernetes.executor.volumes.hostPath.data.mount.path": "/data",
            "spark.kubernetes.executor.volumes.hostPath.data.options.path": "/mnt/data",
        }
    )
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "data"]
    assert volume["hostPath"] == {"path": "/mnt/data"}


def test_sub_path_expr_reaches_the_mount() -> None:
    pod = pod_for(
        {
            "spark.kubernetes.executor.volumes.emptyDir.data.mount.path": "/data",
            "spark.kubernetes.executor.volumes.emptyDir.data.mount.subPathExpr": "$(SPARK_EXECUTOR_ID)",
        }
    )
    (mount,) = [m for m in spark_container(pod)["volumeMounts"] if m["name"] == "data"]
    assert mount == {
        "name": "data",
        "mountPath": "/data",
        "readOnly": False,
        "subPathExpr": "$(SPARK_EXECUTOR_ID)",
    }


def test_claim_labels_and_annotations_go_on_the_created_claim() -> None:
    conf = from_spark(
        {
            f"{PVC}.mount.path": "/data",
            f"{PVC}.options.claimName": "OnDemand",
            f"{PVC}.options.storageClass": "gp3",
            f"{PVC}.options.sizeLimit": "10Gi",
            f"{PVC}.label.team": "etl",
            f"{PVC}.label.spark-app-selector": "not-this",
            f"{PVC}.annotation.backup.example.com/policy": "daily",
        }
    )
    (claim,) = build(conf).pvcs
    # As in Spark: the volume's labels first, then the application label, which wins.
    assert claim["metadata"]["labels"] == {"team": "etl", "spark-app-selector": APP_ID}
    assert claim["metadata"]["annotations"] == {"backup.example.com/policy": "daily"}


def test_a_claim_without_annotations_has_none() -> None:
    conf = from_spark(
        {
            f"{PVC}.mount.path": "/data",
            f"{PVC}.options.claimName": "OnDemand",
            f"{PVC}.options.storageClass": "gp3",
            f"{PVC}.options.sizeLimit": "10Gi",
        }
    )
    (claim,) = build(conf).pvcs
    assert "annotations" not in claim["metadata"]
    assert claim["metadata"]["labels"] == {"spark-app-selector": APP_ID}


# --- excludedFeatureSteps ---------------------------------------------------------------------------


class MarkStep(BaseFeatureStep):
    """A user step that leaves a label behind."""

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        pod = pod.copy()
        pod.pod["metadata"]["labels"]["marked"] = "yes"
        return pod


MARK = f"{__name__}.MarkStep"


def test_an_excluded_user_step_does_not_run() -> None:
    pod = pod_for({FEATURE_STEPS: MARK, EXCLUDED: MARK})
    assert "marked" not in pod["metadata"]["labels"]


def test_a_user_step_that_is_not_excluded_still_runs() -> None:
    pod = pod_for({FEATURE_STEPS: MARK, EXCLUDED: f"{__name__}.OtherStep"})
    assert pod["metadata"]["labels"]["marked"] == "yes"


def test_the_colon_form_excludes_the_same_class() -> None:
    pod = pod_for({FEATURE_STEPS: MARK, EXCLUDED: f"{__name__}:MarkStep"})
    assert "marked" not in pod["metadata"]["labels"]


def test_an_excluded_entry_is_not_even_imported() -> None:
    steps = "no_such_module_for_k8s_backend.Step"
    pod = pod_for({FEATURE_STEPS: f"{steps},{MARK}", EXCLUDED: steps})
    assert pod["metadata"]["labels"]["marked"] == "yes"


def test_a_step_passed_in_code_is_excluded_by_its_class_path() -> None:
    conf = from_spark({EXCLUDED: MARK})
    pod = build(conf, steps=[MarkStep()]).pod
    assert "marked" not in pod["metadata"]["labels"]


def test_built_in_steps_can_be_excluded_as_in_spark() -> None:
    # Spark filters all its steps by class name; here the Python class path names a built-in step.
    path = f"{LocalDirsStep.__module__}.{LocalDirsStep.__qualname__}"
    pod = pod_for({EXCLUDED: path})
    assert "SPARK_LOCAL_DIRS" not in env_names(spark_container(pod))
    assert not [v for v in pod["spec"]["volumes"] if v["name"].startswith("spark-local-dir-")]


def test_spark_names_of_built_in_steps_exclude_the_matching_step() -> None:
    pod = pod_for({EXCLUDED: "org.apache.spark.deploy.k8s.features.LocalDirsFeatureStep"})
    assert "SPARK_LOCAL_DIRS" not in env_names(spark_container(pod))


def test_without_exclusions_every_built_in_step_runs() -> None:
    pod = pod_for({})
    assert "SPARK_LOCAL_DIRS" in env_names(spark_container(pod))


def test_an_exclusion_that_matches_no_step_is_warned_about(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="k8s_backend.pods.builder"):
        ExecutorPodBuilder(from_spark({EXCLUDED: "my.steps.Typo"}), facts=FACTS)
    assert f"{EXCLUDED} lists my.steps.Typo, but no executor feature step has that class" in caplog.text


def test_the_builder_reports_only_the_steps_it_runs() -> None:
    builder = ExecutorPodBuilder(make_conf(excluded_feature_steps=(MARK,)), [MarkStep()], facts=FACTS)
    assert not any(isinstance(step, MarkStep) for step in builder.steps)
