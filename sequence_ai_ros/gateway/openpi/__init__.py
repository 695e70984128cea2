"""
Serving a self-hosted openpi policy server behind the sequence-ai contract.

`sequence-ai-ros gateway --openpi ws://gpu-box:8000` puts one catalogue model (pi05-droid by
default) in front of openpi's websocket policy server: `codec` speaks its msgpack + numpy
format, `connection` its websocket protocol (metadata first, one observation in, one answer
out; reconnecting), `mapping` turns the contract's observation into openpi's keys and its
`actions` back into rows, and `policy` is the `--policy` plug-in that joins them.
"""
