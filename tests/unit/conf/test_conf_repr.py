"""repr(KubernetesConf) never shows a secret: Spark's redaction rule applies to its properties and token."""

from __future__ import annotations

from k8s_backend import KubernetesConf
from k8s_backend.conf.model import redacted

SECRETS = {
    "spark.kubernetes.authenticate.oauthToken": "tok-123456",
    "spark.authenticate.secret": "rpc-secret-1",
    "spark.hadoop.fs.s3a.secret.key": "s3-secret-1",
    "spark.hadoop.fs.s3a.access.key": "s3-access-1",
    "spark.ssl.keyStorePassword": "pw-123456",
}


def test_repr_of_the_conf_hides_every_secret_value() -> None:
    conf = KubernetesConf.from_spark_conf({**SECRETS, "spark.app.name": "visible-name"})
    text = repr(conf)
    assert not [value for value in SECRETS.values() if value in text], text
    assert "visible-name" in text and "redacted" in text
    assert conf.api.oauth_token == "tok-123456", "only the repr hides it"
    assert "tok-123456" not in repr(conf.api)


def test_redaction_follows_spark_redaction_regex_and_never_shows_a_credential() -> None:
    props = {
        "spark.redaction.regex": "(?i)mine",
        "spark.my.MINE": "x",
        "spark.authenticate.secret": "y",  # the pattern misses it, its name does not
        "spark.app.name": "z",
    }
    assert redacted(props) == {
        **props,
        "spark.my.MINE": "*********(redacted)",
        "spark.authenticate.secret": "*********(redacted)",
    }
