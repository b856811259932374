"""Which container images the local kubelet can "pull", and the waiting states of a failed pull."""

from __future__ import annotations

from collections.abc import Iterable

import attrs


def normalize_image(reference: str) -> tuple[str, str]:
    """Split an image reference into (repository, tag-or-digest) with Docker Hub defaults applied.

    ``spark`` and ``docker.io/library/spark:latest`` name the same image.
    """
    ref = reference.strip()
    digest = ""
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    repository, tag = ref, ""
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repository, tag = ref.rsplit(":", 1)
    for prefix in ("docker.io/", "index.docker.io/"):
        if repository.startswith(prefix):
            repository = repository[len(prefix) :]
    if "/" not in repository:
        repository = f"library/{repository}"
    if digest:
        return repository, f"@{digest}"
    return repository, tag or "latest"


def _frozen_or_none(images: Iterable[str] | None) -> frozenset[str] | None:
    if isinstance(images, str):
        raise TypeError(f"known_images: got the string {images!r}; pass a collection such as [{images!r}]")
    return None if images is None else frozenset(images)


@attrs.frozen
class ImagePolicy:
    """The images the kubelet accepts. ``known_images=None`` accepts every image.

    A known image given without a tag (``"apache/spark"``) accepts every tag of that repository;
    with a tag it accepts exactly that tag. Failed pulls alternate between ``ErrImagePull`` and
    ``ImagePullBackOff``, the back-off doubling from ``backoff_initial`` up to ``backoff_max`` seconds
    (a real kubelet uses 10 s and 300 s; the defaults are shorter so tests see both states quickly).
    """

    known_images: frozenset[str] | None = attrs.field(default=None, converter=_frozen_or_none)
    backoff_initial: float = 0.5
    backoff_max: float = 10.0

    def is_known(self, image: str) -> bool:
        if self.known_images is None:
            return True
        if not image:
            return False
        repository, tag = normalize_image(image)
        for known in self.known_images:
            known_repo, known_tag = normalize_image(known)
            explicit_tag = ":" in known.rsplit("/", 1)[-1] or "@" in known
            if known_repo == repository and (not explicit_tag or known_tag == tag):
                return True
        return False

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after the ``attempt``-th failed pull (0-based)."""
        return float(min(self.backoff_max, self.backoff_initial * (2 ** min(attempt, 30))))

    def pull_error(self, image: str) -> tuple[str, str]:
        """(reason, message) of a container whose pull just failed."""
        known = ", ".join(sorted(self.known_images or ()))
        return (
            "ErrImagePull",
            f'Failed to pull image "{image}": rpc error: code = NotFound desc = image "{image}" is not '
            f"known to the local kubelet (known images: {known or 'none'})",
        )

    @staticmethod
    def back_off(image: str) -> tuple[str, str]:
        """(reason, message) of a container waiting before the next pull attempt."""
        return "ImagePullBackOff", f'Back-off pulling image "{image}"'
