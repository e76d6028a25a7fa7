"""duplexeval aggregator: the scoring engine. It knows no benchmark by name: a stage's settings
name the benchmark, and the aggregator runs that benchmark's scorer (its `score` hook for the
aggregate stage, `score_tree` for a tree made elsewhere, `compare` for two scored folders) with the
packages scorers need installed (numpy, scipy, soundfile, Silero VAD on onnxruntime or torch)."""

__version__ = "0.1.0"
