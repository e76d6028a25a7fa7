"""The runners this package registers (entry point `duplexeval.runners`; nothing heavy imported).

Install hints carry the versions of this package's requirements.txt (deps.pip_hint)."""

from duplexeval_runner.deps import pip_hint

_PIP = pip_hint(__file__, ["aws-sdk-bedrock-runtime", "smithy-aws-core", "smithy-http", "awscrt"])
HINTS = {"aws_sdk_bedrock_runtime": _PIP, "smithy_aws_core": _PIP, "smithy_http.aio.crt": _PIP, "awscrt": _PIP}

RUNNERS = [
    {"name": "nova-sonic", "target": "duplexeval_runner_nova_sonic.runner:NovaSonicRunner",
     "summary": "Amazon Nova Sonic over Bedrock's bidirectional stream (aws-sdk-bedrock-runtime, CRT HTTP/2, "
                "realtime; Python >= 3.12): one session per sample; credentials from AWS_ACCESS_KEY_ID / "
                "AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, region from AWS_REGION or AWS_DEFAULT_REGION, "
                "endpoint MODEL_URL (default Bedrock's); replies placed at arrival, `interrupted` drops unplayed audio",
     "requires": ["aws_sdk_bedrock_runtime", "smithy_aws_core", "smithy_http.aio.crt", "awscrt"], "hints": HINTS},
]
