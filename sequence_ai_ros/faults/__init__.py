"""
Network faults on loopback, for tests, benchmarks and rehearsing a robot against a bad link.

Standard library only: importing this loads neither httpx nor the gateway.
"""

from .proxy import FaultProxy, is_loopback, ProxyStats

__all__ = ['FaultProxy', 'ProxyStats', 'is_loopback']
