"""
Facts of the wire contract that both sides use: the client, the node and the local gateway.

Standard library only, importing nothing else of the package: the client and the gateway both
import it and still import nothing of each other.

  action_spaces  the kind of an action space ('absolute', 'delta', 'velocity') from its name
  key_masking    how an API key is shown (masked) and hidden from any text (redacted)
  rtc            the request options and answer key of real-time chunking
"""
