"""The schemas of MTR-DuplexBench's own files (this package's schemas/ folder): the round samples
(round.json, dialogue.json), the scoring tree (encoding.json, transcript.json, judgements), the
judge's per-round records and the scorer's outputs (metrics.json, rounds.jsonl rows)."""

from pathlib import Path

from duplexeval_common.schemas import SchemaSet

SCHEMAS = SchemaSet(Path(__file__).parent / "schemas")
