"""The one LLM stack of duplexeval: every LLM call (the judge's, the turn-segmenter's, a
benchmark's) goes through it.

    client   ChatClient: OpenAI-compatible chat completions, our retries, the key only from the
             environment, every message scrubbed
    local    SmolLMBackend: SmolLM2-135M offline, answers constrained to a prompt's format
    prompts  versioned prompt templates (a folder of `<name>.v<N>.txt` + `.json`) and their parsers
    engine   JudgeEngine: render, cache, bounded re-asking, the Judgement and its ledger row
    judges   OpenAIJudge / LocalLLMJudge: an engine for one prompt with its settings
    ledger   what a stage that judges writes: ledger rows, usage, summaries
"""
