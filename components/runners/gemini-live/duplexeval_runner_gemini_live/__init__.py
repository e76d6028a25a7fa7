"""duplexeval runner package: a Gemini Live API client (the google-genai SDK's live session)."""

__version__ = "0.1.0"
