"""The driver pod's feature steps (Spark's KubernetesDriverBuilder), beside the executor's.

Cluster mode builds the basic driver pod (:mod:`k8s_backend.cli.submit.driver_pod`), then runs these
steps in Spark's order on it: mounted secrets, env secrets, volumes, Hadoop conf, Kerberos, local dirs,
the executors' NetworkPolicy, then user steps. The driver Service's IP family settings are
:mod:`~k8s_backend.pods.driver.service`'s.
"""

from k8s_backend.pods.driver.builder import DriverPodBuilder, driver_steps
from k8s_backend.pods.driver.step import DriverContext, DriverFeatureStep

__all__ = ["DriverContext", "DriverFeatureStep", "DriverPodBuilder", "driver_steps"]
