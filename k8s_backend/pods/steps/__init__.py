"""The built-in executor feature steps, one module per concern, in the order the builder runs them."""

from k8s_backend.pods.steps.basic import BasicExecutorStep
from k8s_backend.pods.steps.credentials import ExecutorCredentialsStep
from k8s_backend.pods.steps.env_secrets import EnvSecretsStep
from k8s_backend.pods.steps.hadoop_conf import HadoopConfStep
from k8s_backend.pods.steps.local_dirs import LocalDirsStep
from k8s_backend.pods.steps.mount_secrets import MountSecretsStep
from k8s_backend.pods.steps.volumes import MountVolumesStep

__all__ = [
    "BasicExecutorStep",
    "EnvSecretsStep",
    "ExecutorCredentialsStep",
    "HadoopConfStep",
    "LocalDirsStep",
    "MountSecretsStep",
    "MountVolumesStep",
]
