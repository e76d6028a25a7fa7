"""The schemas of Full-Duplex-Bench v1.5's own files (this package's schemas/ folder): sample.json
(our annotation of a sample: the context, the overlap window and event, the voices), the official
metadata.json ({context_text, current_turn_text, timestamps}), the scorer's metrics.json, the
judge's judgement.json and content_tag.json."""

from pathlib import Path

from duplexeval_common.schemas import SchemaSet

SCHEMAS = SchemaSet(Path(__file__).parent / "schemas")
