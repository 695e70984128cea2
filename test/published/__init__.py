"""
The published sequence-ai 0.51.5 client, unmodified, against the local gateway's direct protocol.

Rule: these files run in a venv of their own (test/published/requirements.txt, built by
scripts/published_client.py; `make test-published`), where `sequence_ai` is the published
client and this package is only on the path for its GatewayProcess. The gateway runs on the
Kilted venv's interpreter ($SEQUENCE_AI_ROS_GATEWAY_PYTHON), as a server a robot reaches. In any
other venv (the Kilted run of `make test`) the folder is not collected: conftest.py says so.
"""
