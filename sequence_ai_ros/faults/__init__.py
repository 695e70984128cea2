"""
Network faults on loopback, for tests, benchmarks and rehearsing a robot against a bad link.

Standard library only: importing this loads neither httpx nor the gateway.

  proxy         FaultProxy, the public face: settings, faults, start and close
  process       ProxyProcess: the same proxy as a child process (`sequence-ai-ros proxy`)
  state         the settings, armed faults and counters shared across threads; ProxyStats
  server        the asyncio loop in a daemon thread that accepts connections
  connection    one relayed connection and the faults it meets
  link          one direction's delayed, shaped delivery
  http_framing  HTTP/1.1 request boundaries and canned responses
  arguments     what the caller may pass: loopback addresses, ports, seconds, counts
"""

from .arguments import is_loopback
from .process import ProxyProcess
from .proxy import FaultProxy
from .state import ProxyStats

__all__ = ['FaultProxy', 'ProxyProcess', 'ProxyStats', 'is_loopback']
