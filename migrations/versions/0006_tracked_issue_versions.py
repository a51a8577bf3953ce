"""an index covering the read of every tracked issue's version

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_tracked_issues_versions", "tracked_issues", ["repo", "number", "version"])


def downgrade() -> None:
    op.drop_index("ix_tracked_issues_versions", table_name="tracked_issues")
