"""The schemas of Full-Duplex-Bench v1.0's own files (this package's schemas/ folder):
the official annotations (pause.json, turn_taking.json, interrupt.json), the judge's records
(judgement.json, rating.json) and the scorer's outputs (metrics.json, unified.json,
unified-samples.jsonl rows)."""

from pathlib import Path

from duplexeval_common.schemas import SchemaSet

SCHEMAS = SchemaSet(Path(__file__).parent / "schemas")
