"""insights: fingerprints of unanswered errors, searches, "this is not my error" reports

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
import sqlmodel

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

String = sqlmodel.sql.sqltypes.AutoString
When = sqlmodel.sql.sqltypes.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "fingerprint",
        sa.Column("id", String(length=16), nullable=False),
        sa.Column("exception", String(length=120), nullable=False),
        sa.Column("template", String(length=300), nullable=False),
        sa.Column("frame", String(length=200), nullable=True),
        sa.Column("seen", sa.Integer(), nullable=False),
        sa.Column("missed", sa.Integer(), nullable=False),
        sa.Column("first_seen", When(), nullable=False),
        sa.Column("last_seen", When(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fingerprint", schema=None) as batch_op:
        batch_op.create_index("ix_fingerprint_last_seen", ["last_seen"], unique=False)
    op.create_table(
        "fingerprint_version",
        sa.Column("fingerprint", String(length=16), nullable=False),
        sa.Column("verl_version", String(length=40), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("fingerprint", "verl_version"),
    )
    op.create_table(
        "search_record",
        sa.Column("query", String(length=200), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("empty", sa.Integer(), nullable=False),
        sa.Column("shown", sa.Integer(), nullable=False),
        sa.Column("opened", sa.Integer(), nullable=False),
        sa.Column("last_hits", sa.Integer(), nullable=False),
        sa.Column("first_seen", When(), nullable=False),
        sa.Column("last_seen", When(), nullable=False),
        sa.PrimaryKeyConstraint("query"),
    )
    with op.batch_alter_table("search_record", schema=None) as batch_op:
        batch_op.create_index("ix_search_record_last_seen", ["last_seen"], unique=False)
    op.create_table(
        "match_feedback",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code", String(length=16), nullable=False),
        sa.Column("fingerprint", String(length=16), nullable=False),
        sa.Column("right", sa.Boolean(), nullable=False),
        sa.Column("voter", String(length=64), nullable=False),
        sa.Column("ip_hash", String(length=32), nullable=True),
        sa.Column("created_at", When(), nullable=False),
        sa.Column("updated_at", When(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code", "fingerprint", "voter", name="uq_match_feedback_voter"),
    )
    with op.batch_alter_table("match_feedback", schema=None) as batch_op:
        batch_op.create_index("ix_match_feedback_code", ["code"], unique=False)
        batch_op.create_index("ix_match_feedback_voter_updated", ["voter", "updated_at"], unique=False)
        batch_op.create_index("ix_match_feedback_ip_updated", ["ip_hash", "updated_at"], unique=False)


def downgrade() -> None:
    op.drop_table("match_feedback")
    op.drop_table("search_record")
    op.drop_table("fingerprint_version")
    op.drop_table("fingerprint")
