"""The executor pod builder: one feature step per concern, pod templates, name rules."""

from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.config_map import build_executor_config_map, executor_config_map_name
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec
from k8s_backend.pods.step import BaseFeatureStep, FeatureStep, SparkPod, StepContext

__all__ = [
    "BaseFeatureStep",
    "DriverFacts",
    "ExecutorPodBuilder",
    "ExecutorPodRequest",
    "ExecutorPodSpec",
    "FeatureStep",
    "SparkPod",
    "StepContext",
    "build_executor_config_map",
    "executor_config_map_name",
]
