"""The driver pod, built from ordered feature steps (Spark's KubernetesDriverBuilder), in the executor
pod's idiom: one step per Spark driver feature step, one file per notion.

:class:`DriverPodBuilder` starts from the driver pod template (:mod:`~k8s_backend.pods.driver.template`)
and runs, in Spark's order: the basic step (:mod:`~k8s_backend.pods.driver.basic`), the credentials
(:mod:`~k8s_backend.pods.driver.credentials`, whose files are
:mod:`~k8s_backend.pods.driver.credential_files`' table), the Service
(:mod:`~k8s_backend.pods.driver.service`), mounted secrets, env secrets, volumes
(:mod:`~k8s_backend.pods.driver.steps`), Hadoop conf (:mod:`~k8s_backend.pods.driver.hadoop`), Kerberos
(:mod:`~k8s_backend.pods.driver.kerberos`), local dirs, the executors' NetworkPolicy
(:mod:`~k8s_backend.pods.driver.network_policy`), then the user's steps. Cluster mode
(``k8s-backend submit``) calls it.
"""

from k8s_backend.pods.driver.builder import BuiltDriver, DriverPodBuilder, driver_steps
from k8s_backend.pods.driver.step import DriverContext, DriverFeatureStep

__all__ = ["BuiltDriver", "DriverContext", "DriverFeatureStep", "DriverPodBuilder", "driver_steps"]
