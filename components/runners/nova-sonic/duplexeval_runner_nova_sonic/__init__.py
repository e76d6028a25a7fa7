"""duplexeval runner package: Amazon Nova Sonic through Bedrock's bidirectional stream (aws-sdk-bedrock-runtime)."""

__version__ = "0.1.0"
