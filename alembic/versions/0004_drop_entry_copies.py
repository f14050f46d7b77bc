"""drop the entry and fix tables: ingest wrote a copy of the content there that nothing ever read

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

import sqlalchemy as sa
import sqlmodel

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

String = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.drop_table("fix")
    with op.batch_alter_table("entry", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_entry_category"))
    op.drop_table("entry")


def downgrade() -> None:
    # the tables come back empty: the next `kb index` of a release that used them filled them again
    op.create_table(
        "entry",
        sa.Column("code", String(length=16), nullable=False),
        sa.Column("title", String(), nullable=False),
        sa.Column("category", String(length=8), nullable=False),
        sa.Column("content_hash", String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("code"),
    )
    with op.batch_alter_table("entry", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_entry_category"), ["category"], unique=False)
    op.create_table(
        "fix",
        sa.Column("entry_code", String(length=16), nullable=False),
        sa.Column("fix_id", String(length=80), nullable=False),
        sa.Column("title", String(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("content_hash", String(length=16), nullable=False),
        sa.Column("dead_end", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("entry_code", "fix_id"),
    )
