"""What the ``migrated`` marker says from the reason Spark gives for a decommissioning executor's removal
and the driver's ``spark.storage.decommission.*`` settings."""

from __future__ import annotations

import pytest

from k8s_backend.lifecycle.block_migration import BlockMigration, decommission_outcome

FINISHED = "Finished decommissioning"


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, BlockMigration(storage=False, rdd_blocks=True, shuffle_blocks=True)),
        ({"spark.storage.decommission.enabled": "true"}, BlockMigration(True, True, True)),
        (
            {
                "spark.storage.decommission.enabled": " TRUE ",
                "spark.storage.decommission.rddBlocks.enabled": "false",
            },
            BlockMigration(True, False, True),
        ),
        (
            {
                "spark.storage.decommission.enabled": "true",
                "spark.storage.decommission.shuffleBlocks.enabled": "False",
            },
            BlockMigration(True, True, False),
        ),
    ],
)
def test_settings_are_read_with_sparks_defaults(properties: dict[str, str], expected: BlockMigration) -> None:
    assert BlockMigration.from_properties(properties) == expected


def test_migration_is_on_only_with_storage_decommission_and_a_block_kind() -> None:
    assert BlockMigration(True, True, False).on and BlockMigration(True, False, True).on
    assert not BlockMigration(False, True, True).on
    assert not BlockMigration(True, False, False).on


def test_a_finished_decommission_with_migration_on_says_its_blocks_migrated() -> None:
    text = decommission_outcome("3", FINISHED, BlockMigration(True, True, True))
    assert text == (
        "executor 3 finished decommissioning: its blocks migrated (every cached RDD and shuffle block it "
        "held; spark.storage.decommission.enabled=true)"
    )
    only_rdd = decommission_outcome("3", FINISHED, BlockMigration(True, True, False))
    assert only_rdd is not None and "(every cached RDD block it held;" in only_rdd


def test_a_finished_decommission_without_a_block_kind_says_there_were_none_to_migrate() -> None:
    text = decommission_outcome("4", FINISHED, BlockMigration(True, False, False))
    assert text is not None
    assert text.startswith("executor 4 finished decommissioning: no blocks to migrate (")
    assert "spark.storage.decommission.rddBlocks.enabled and" in text


def test_a_finished_decommission_with_migration_off_says_so() -> None:
    text = decommission_outcome("5", FINISHED, BlockMigration())
    assert text == (
        "executor 5 finished decommissioning: block migration off "
        "(spark.storage.decommission.enabled=false), its blocks were not migrated"
    )


@pytest.mark.parametrize(
    "reason",
    [
        "Executor decommission: decommissioned by a test",  # the driver's own, not the executor's
        "Command exited with code 137",
        "Remote RPC client disassociated.",
        "",
    ],
)
def test_any_other_removal_reason_gives_no_marker(reason: str) -> None:
    assert decommission_outcome("1", reason, BlockMigration(True, True, True)) is None
