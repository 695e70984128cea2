"""
Real-time chunking on the wire: the request options that carry the prefix, and the answer's key.

Extra top-level keys of POST /v1/act, passed through to the policy by the gateway; the answer
reports under REPORT_KEY how much of the prefix the policy used.
"""

PREFIX_OPTION = 'action_prefix'
DELAY_OPTION = 'inference_delay_steps'
HORIZON_OPTION = 'execution_horizon'
REPORT_KEY = 'rtc'
