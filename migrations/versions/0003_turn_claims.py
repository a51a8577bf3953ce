"""turn claims shared by replicas

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from orchestrator.store.types import UTCDateTime

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "turn_claims",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("issue_id", sa.Integer(), nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(length=40), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("owner", sa.String(length=100), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("queued_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("cancel_reason", sa.String(length=100), nullable=True),
        sa.ForeignKeyConstraint(
            ["issue_id"],
            ["tracked_issues.id"],
            name=op.f("fk_turn_claims_issue_id_tracked_issues"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turn_claims")),
    )
    with op.batch_alter_table("turn_claims", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_turn_claims_issue_id"), ["issue_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_turn_claims_finished_at"), ["finished_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("turn_claims", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_turn_claims_finished_at"))
        batch_op.drop_index(batch_op.f("ix_turn_claims_issue_id"))
    op.drop_table("turn_claims")
