"""the polling leader saves the issue feed, so a restart resumes it

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 03:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from orchestrator.store.types import UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "feed_snapshots",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
        sa.Column("saved_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("repo", name=op.f("pk_feed_snapshots")),
    )


def downgrade() -> None:
    op.drop_table("feed_snapshots")
