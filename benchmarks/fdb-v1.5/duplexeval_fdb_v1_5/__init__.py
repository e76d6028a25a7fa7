"""Full-Duplex-Bench v1.5 as a duplexeval benchmark package (placeholder).

The declaration (BENCHMARK) is written separately; until it lands, the entry point names
nothing. The scoring library is in score/.
"""
