"""runtime record, agent prompt and session

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 01:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tracked_issues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("record", sa.JSON(), nullable=True))
    with op.batch_alter_table("agent_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("prompt", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("session_id", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_runs", schema=None) as batch_op:
        batch_op.drop_column("session_id")
        batch_op.drop_column("prompt")
    with op.batch_alter_table("tracked_issues", schema=None) as batch_op:
        batch_op.drop_column("record")
