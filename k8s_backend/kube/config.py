"""Build the official client's ``Configuration`` from :class:`ApiClientConf`.

Where the API server and credentials come from, first match wins:

1. an explicit API URL (``spark.master=k8s://https://host:6443``, or ``http://127.0.0.1:PORT``) with
   the explicit credentials (token or token file, CA file, client certificate and key). Without explicit
   credentials, those of the kubeconfig context whose server is that same URL are used, or the pod's
   service account when running in a pod (as Spark's fabric8 client does);
2. a kubeconfig (``KUBECONFIG``, else ``~/.kube/config``), optionally a named context;
3. the in-cluster service account of the pod.

TLS verification stays on unless ``spark.kubernetes.trust.certificates=true``. The adapter retries by
itself, so urllib3's own retries are switched off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import yaml
from kubernetes import client as _client
from kubernetes import config as _config
from kubernetes.config import incluster_config as _incluster

from k8s_backend.errors import ConfigError
from k8s_backend.kube import masters
from k8s_backend.kube.incluster import IN_CLUSTER_HOSTS, SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR_ENV
from k8s_backend.kube.settings import ApiClientConf

log = logging.getLogger(__name__)

# The client's annotations are partial; treat it as untyped rather than sprinkle ignores.
k8s_client: Any = _client
k8s_config: Any = _config
k8s_incluster: Any = _incluster


# The Spark properties behind each ApiClientConf field (client mode names), for error messages.
KEYS = {
    "master": "spark.master",
    "context": "spark.kubernetes.context",
    "kubeconfig": "spark.kubernetes.kubeconfig",
    "oauth_token_file": "spark.kubernetes.authenticate.oauthTokenFile",
    "ca_cert_file": "spark.kubernetes.authenticate.caCertFile",
    "client_key_file": "spark.kubernetes.authenticate.clientKeyFile",
    "client_cert_file": "spark.kubernetes.authenticate.clientCertFile",
}


@attrs.frozen
class ClientSettings:
    """A ready client ``Configuration`` and a sentence saying where it came from (for error messages)."""

    configuration: Any  # kubernetes.client.Configuration (the package ships no type hints)
    source: str

    @property
    def host(self) -> str:
        return str(self.configuration.host)


def normalize_master(master: str) -> str:
    """The API server URL of a master (``k8s://`` stripped; a bare ``host:port`` means https)."""
    parsed = masters.parse_master(master, key=KEYS["master"], schemes=("k8s://",), scheme_required=False)
    if parsed.kind is not masters.MasterKind.API_SERVER:  # "k8s://" alone names no API server
        raise ConfigError(
            f"{KEYS['master']}={master!r} is not a Kubernetes API server URL; "
            "use k8s://https://HOST:PORT (or http://HOST:PORT for a local test server)",
            key=KEYS["master"],
            value=master,
        )
    return parsed.api_server


def build_client_settings(
    api: ApiClientConf,
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: str | None = None,
    connections: int = 0,
) -> ClientSettings:
    """Resolve ``api`` into a client configuration; :class:`ConfigError` if nothing usable is found.

    ``connections``: the most requests the client's user has in flight at once. The connection pool keeps at
    least that many open: the official client's default is 5 per CPU, and urllib3 closes a connection
    returned to a full pool, so a 1-CPU driver with 8 creates in flight paid a TLS handshake for 3 of
    them every round.

    ``environ`` and ``service_account_dir`` default to the process environment and the pod's mount
    (``$K8S_BACKEND_SERVICE_ACCOUNT_DIR``, else :data:`SERVICE_ACCOUNT_DIR`); tests pass their own so the
    machine's kubeconfig never leaks in.
    """
    env = os.environ if environ is None else environ
    if service_account_dir is None:
        service_account_dir = env.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR
    cfg = k8s_client.Configuration()
    if api.master:
        source = _explicit(cfg, api, env, service_account_dir)
    else:
        kubeconfig = _kubeconfig_path(env, api.kubeconfig)
        if kubeconfig is not None:
            _load_kubeconfig(cfg, kubeconfig, api.context)
            context = f" context {api.context!r}" if api.context else " (current context)"
            source = f"kubeconfig {kubeconfig}{context}"
        elif api.context:
            raise ConfigError(
                f"{KEYS['context']}={api.context!r} is set but no kubeconfig was found "
                f"(KUBECONFIG is unset and {_default_kubeconfig(env)} does not exist)",
                key=KEYS["context"],
                value=api.context,
            )
        elif _in_cluster_available(env, service_account_dir):
            _load_in_cluster(cfg, env, service_account_dir)
            source = f"the pod's service account ({service_account_dir})"
        else:
            raise ConfigError(
                "No Kubernetes API server configured: spark.master is not k8s://..., no kubeconfig "
                f"(KUBECONFIG is unset and {_default_kubeconfig(env)} does not exist), and not running in "
                "a pod (KUBERNETES_SERVICE_HOST is unset). Set the master to the API server "
                "(pyk8s://https://HOST:PORT, or k8s://... for Spark's own backend; k8s-backend --master), or "
                "give a kubeconfig (KUBECONFIG, spark.kubernetes.kubeconfig, k8s-backend --kubeconfig).",
                key=KEYS["master"],
                value="",
            )
        _apply_explicit_credentials(cfg, api)
    if api.trust_certificates:
        cfg.verify_ssl = False
        source += ", TLS verification off (spark.kubernetes.trust.certificates)"
    cfg.connection_pool_maxsize = max(int(cfg.connection_pool_maxsize), connections)
    cfg.retries = False  # retries are the adapter's (tenacity), not urllib3's
    log.info("Kubernetes API server %s from %s", cfg.host, source)
    return ClientSettings(configuration=cfg, source=source)


def _explicit(cfg: Any, api: ApiClientConf, env: Mapping[str, str], sa_dir: str) -> str:
    url = normalize_master(api.master)
    source = f"{KEYS['master']} {url}"
    has_credentials = bool(api.oauth_token or api.oauth_token_file or api.client_cert_file)
    host = url
    if not has_credentials:
        # Borrow credentials only where they belong: never send a cluster's token to another URL.
        kubeconfig = _kubeconfig_path(env, api.kubeconfig)
        if kubeconfig is not None and _kubeconfig_server(kubeconfig, api.context) == url:
            _load_kubeconfig(cfg, kubeconfig, api.context)
            source += f" with the credentials of kubeconfig {kubeconfig}"
        elif _in_cluster_available(env, sa_dir):
            _load_in_cluster(cfg, env, sa_dir)
            source += f" with the pod's service account ({sa_dir})"
            if env.get(SERVICE_ACCOUNT_DIR_ENV) and urlsplit(url).hostname in IN_CLUSTER_HOSTS:
                # A process kubelet's "pod" runs on the host, without cluster DNS: the service name is
                # the API server at KUBERNETES_SERVICE_HOST:PORT, as client-go's in-cluster config has it.
                host = str(cfg.host)
                source += f" at {host}"
    cfg.host = host
    _apply_explicit_credentials(cfg, api)
    if api.oauth_token:
        source += " with a bearer token (oauthToken)"
    elif api.oauth_token_file:
        source += f" with a bearer token from {api.oauth_token_file}"
    return source


def _apply_explicit_credentials(cfg: Any, api: ApiClientConf) -> None:
    if api.oauth_token:
        _set_token(cfg, api.oauth_token)
    elif api.oauth_token_file:
        _set_token_file(cfg, api.oauth_token_file)
    if api.ca_cert_file:
        cfg.ssl_ca_cert = _existing_file("ca_cert_file", api.ca_cert_file)
    if api.client_cert_file or api.client_key_file:
        if not (api.client_cert_file and api.client_key_file):
            missing = "client_key_file" if api.client_cert_file else "client_cert_file"
            raise ConfigError(
                f"{KEYS[missing]} is required with {KEYS['client_cert_file']} / {KEYS['client_key_file']}: "
                "a client certificate needs both the certificate and its key",
                key=KEYS[missing],
                value="",
            )
        cfg.cert_file = _existing_file("client_cert_file", api.client_cert_file)
        cfg.key_file = _existing_file("client_key_file", api.client_key_file)


def _set_token(cfg: Any, token: str) -> None:
    cfg.refresh_api_key_hook = None
    cfg.api_key = {"BearerToken": token.strip()}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}


def _set_token_file(cfg: Any, path: str) -> None:
    """Use the token in ``path``, re-read whenever the file changes (projected tokens rotate)."""
    seen: dict[str, float] = {}

    def read(config: Any) -> None:
        try:
            mtime = os.stat(path).st_mtime
            if seen.get("mtime") == mtime:
                return
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            if seen:  # keep the last good token; the server will say 401 if it expired
                log.warning("Cannot re-read the API token file %s: %s", path, e)
                return
            raise ConfigError(
                f"{KEYS['oauth_token_file']}={path!r} cannot be read ({e.strerror}); "
                "point it to a file holding a bearer token",
                key=KEYS["oauth_token_file"],
                value=path,
            ) from e
        if not token:
            raise ConfigError(
                f"{KEYS['oauth_token_file']}={path!r} is empty; it must hold a bearer token",
                key=KEYS["oauth_token_file"],
                value=path,
            )
        seen["mtime"] = mtime
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}

    read(cfg)  # fail now, at configuration time, if the file is unusable
    cfg.refresh_api_key_hook = read


def _existing_file(field: str, path: str) -> str:
    if not os.path.isfile(path):
        raise ConfigError(
            f"{KEYS[field]}={path!r} does not exist or is not a file", key=KEYS[field], value=path
        )
    return path


def _default_kubeconfig(env: Mapping[str, str]) -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".kube", "config")


def _kubeconfig_path(env: Mapping[str, str], explicit: str = "") -> str | None:
    """The kubeconfig to load (``explicit``, else KUBECONFIG, which may list several files), or None if
    there is none; an explicit file must exist."""
    if explicit:
        if not os.path.isfile(explicit):
            raise ConfigError(
                f"{KEYS['kubeconfig']}={explicit!r} does not exist or is not a file; "
                "point it to a kubeconfig",
                key=KEYS["kubeconfig"],
                value=explicit,
            )
        return explicit
    value = env.get("KUBECONFIG", "")
    paths = [p for p in value.split(os.pathsep) if p] if value else [_default_kubeconfig(env)]
    existing = [p for p in paths if os.path.isfile(p)]
    return os.pathsep.join(existing) if existing else None


def _load_kubeconfig(cfg: Any, path: str, context: str) -> None:
    try:
        k8s_config.load_kube_config(
            config_file=path, context=context or None, client_configuration=cfg, persist_config=False
        )
    except (k8s_config.ConfigException, KeyError, ValueError, OSError) as e:
        where = f" (context {context!r}, {KEYS['context']})" if context else ""
        raise ConfigError(
            f"Cannot use kubeconfig {path}{where}: {e}", key=KEYS["context"], value=context
        ) from e


def _kubeconfig_server(path: str, context: str) -> str | None:
    """The server URL of a kubeconfig context, read without running any credential plugin."""
    docs: list[dict[str, Any]] = []
    for file in path.split(os.pathsep):
        try:
            with open(file, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            log.debug("Not borrowing credentials from kubeconfig %s: %s", file, e)
            return None
        if isinstance(doc, dict):
            docs.append(doc)
    # Merged as kubectl does: the first file that sets a name wins.
    name = context or next((d["current-context"] for d in docs if d.get("current-context")), "")
    ctx = _first_named(docs, "contexts", name).get("context") or {}
    cluster = _first_named(docs, "clusters", str(ctx.get("cluster", ""))).get("cluster") or {}
    server = cluster.get("server")
    return str(server).rstrip("/") if server else None


def _first_named(docs: list[dict[str, Any]], section: str, name: str) -> dict[str, Any]:
    for doc in docs:
        for entry in doc.get(section) or ():
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry
    return {}


def _in_cluster_available(env: Mapping[str, str], sa_dir: str) -> bool:
    return bool(env.get("KUBERNETES_SERVICE_HOST")) and os.path.isfile(os.path.join(sa_dir, "token"))


def _load_in_cluster(cfg: Any, env: Mapping[str, str], sa_dir: str) -> None:
    loader = k8s_incluster.InClusterConfigLoader(
        token_filename=os.path.join(sa_dir, "token"),
        cert_filename=os.path.join(sa_dir, "ca.crt"),
        environ=env,
    )
    try:
        loader.load_and_set(cfg)
    except k8s_config.ConfigException as e:
        raise ConfigError(
            f"Cannot use the pod's service account in {sa_dir}: {e}", key=KEYS["master"], value=""
        ) from e
