"""fencing epochs on leases and claims, and the replicas table

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 12:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from orchestrator.store.types import UTCDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("leases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("epoch", sa.BigInteger(), server_default="1", nullable=False))
    with op.batch_alter_table("turn_claims", schema=None) as batch_op:
        batch_op.add_column(sa.Column("epoch", sa.BigInteger(), server_default="0", nullable=False))
    op.create_table(
        "replicas",
        sa.Column("replica_id", sa.String(length=100), nullable=False),
        sa.Column("version", sa.String(length=40), nullable=False),
        sa.Column("started_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("replica_id", name=op.f("pk_replicas")),
    )
    with op.batch_alter_table("replicas", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_replicas_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("replicas", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_replicas_expires_at"))
    op.drop_table("replicas")
    with op.batch_alter_table("turn_claims", schema=None) as batch_op:
        batch_op.drop_column("epoch")
    with op.batch_alter_table("leases", schema=None) as batch_op:
        batch_op.drop_column("epoch")
