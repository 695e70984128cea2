"""
The service's current ("direct") protocol in the local gateway, beside /v1/act.

A robot connects at the gateway (the control plane) and sends its observations and acts to a
worker over pinned TLS (the data plane), a second listener of the same process. Both planes
call the same policy core as /v1/act (core.py).

  control   POST /v1/act/connect, GET /v1/act/ready, keepalive, release, episode labels
  worker    the HTTPS worker: /ping, /observe, /act, /act/episode_end
  seats     sessions, seats, the line for them, leases and direct secrets
  episodes  numbered observations per episode, frames_missing, episode_lost, labels
  preset    the robot-arm preset's Observation, checked and decoded for the policy core
  errors    the code-based error body (codes from sequence_ai_ros.contract.error_codes)
  wire      JSON and msgpack bodies, numpy arrays as msgpack-numpy maps
  tls       the worker's self-signed certificate and its fingerprint
  state     what the two planes share
"""
