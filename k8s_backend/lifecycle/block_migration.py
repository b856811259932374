"""What a decommissioned executor's end says about its blocks: the timeline's ``migrated`` marker.

A decommissioning Spark executor exits on its own once no task runs on it and, when block migration is
configured, its block manager reports every block migrated; it tells the driver why with the reason
``"Finished decommissioning"`` (Spark's ``ExecutorLossMessage.decommissionFinished``). The reason is the
same whether blocks migrated or migration was off, and only the executor's log tells them apart; the
driver's configuration tells them apart as well, since the executors run with it. Spark migrates when
``spark.storage.decommission.enabled`` and at least one of ``.rddBlocks.enabled`` and
``.shuffleBlocks.enabled`` are true (``CoarseGrainedExecutorBackend.decommissionSelf``).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

FINISHED = "Finished decommissioning"  # Spark's ExecutorLossMessage.decommissionFinished
STORAGE_KEY = "spark.storage.decommission.enabled"
RDD_KEY = "spark.storage.decommission.rddBlocks.enabled"
SHUFFLE_KEY = "spark.storage.decommission.shuffleBlocks.enabled"


def _flag(properties: Mapping[str, str], key: str, default: bool) -> bool:
    # As Spark's booleanConf reads a value: trimmed, any case; anything else Spark itself refuses.
    value = properties.get(key)
    return default if value is None else str(value).strip().lower() == "true"


@attrs.frozen
class BlockMigration:
    """Spark's block migration settings for decommissioning executors (defaults as Spark's)."""

    storage: bool = False  # spark.storage.decommission.enabled
    rdd_blocks: bool = True  # spark.storage.decommission.rddBlocks.enabled
    shuffle_blocks: bool = True  # spark.storage.decommission.shuffleBlocks.enabled

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> BlockMigration:
        """Read from Spark properties; unset keys take Spark's defaults."""
        return cls(
            storage=_flag(properties, STORAGE_KEY, False),
            rdd_blocks=_flag(properties, RDD_KEY, True),
            shuffle_blocks=_flag(properties, SHUFFLE_KEY, True),
        )

    @property
    def on(self) -> bool:
        """Whether a decommissioning executor migrates blocks before it exits."""
        return self.storage and (self.rdd_blocks or self.shuffle_blocks)

    @property
    def kinds(self) -> str:
        """The kinds of blocks migrated, in words ("cached RDD and shuffle")."""
        kinds = (("cached RDD", self.rdd_blocks), ("shuffle", self.shuffle_blocks))
        return " and ".join(name for name, on in kinds if on)


def decommission_outcome(executor_id: str, spark_reason: str, migration: BlockMigration) -> str | None:
    """The ``migrated`` marker's text for a decommissioning executor that Spark removes for
    ``spark_reason``; None when the executor did not finish its decommission itself (it was lost or
    removed first: its row on the timeline shows how it ended)."""
    if not spark_reason.strip().startswith(FINISHED):
        return None
    finished = f"executor {executor_id} finished decommissioning"
    if migration.on:
        # Spark exits only once its block manager's last migration round found nothing left to move.
        return f"{finished}: its blocks migrated (every {migration.kinds} block it held; {STORAGE_KEY}=true)"
    if migration.storage:
        return (
            f"{finished}: no blocks to migrate ({RDD_KEY} and {SHUFFLE_KEY} are false, so Spark "
            "migrates none)"
        )
    return f"{finished}: block migration off ({STORAGE_KEY}=false), its blocks were not migrated"
