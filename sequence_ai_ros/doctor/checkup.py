"""Doctor: the checks in order, one line each, stopping at the first FAIL."""

from collections.abc import Callable
from dataclasses import dataclass
import time
from typing import Any, TextIO

import httpx
from sequence_ai_ros import __version__
from sequence_ai_ros.client import (
    DEFAULT_TIMEOUT_S,
    full_model_id,
    resolve_base_url,
    tls_context,
    Transport,
)
from sequence_ai_ros.doctor.act_checks import ActAnswer, ActSettings, check_act, report_warmth
from sequence_ai_ros.doctor.codes import EXIT_OK
from sequence_ai_ros.doctor.key import check_key
from sequence_ai_ros.doctor.probe import probe_observation
from sequence_ai_ros.doctor.public_checks import check_gateway, check_latency, check_model
from sequence_ai_ros.doctor.report import Report, short, Stop

DEFAULT_SAMPLES = 6
DEFAULT_WAIT_S = 300.0


@dataclass
class DoctorOptions:
    """What `doctor` was asked to check."""

    model: str = 'pi05-droid'
    base_url: str | None = None
    api_key_file: str | None = None
    samples: int = DEFAULT_SAMPLES
    act: bool = True
    wait_s: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    ca_file: str | None = None  # trust only this CA bundle (PEM), else the system's CAs


class Doctor(Report):
    """Run the checks in order, one line each, stopping at the first FAIL."""

    def __init__(self, options: DoctorOptions, out: TextIO | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(out, resolve_base_url(options.base_url), options.ca_file)
        self.options = options
        self.sleep = sleep
        self.model_id = full_model_id(options.model)
        # One trust for every connection doctor makes, the same the client is given.
        self.tls = tls_context(options.ca_file or True)
        self.public: httpx.Client | None = None

    def run(self) -> int:
        """Run every check; return the exit code."""
        trusting = f' (CA file {self.options.ca_file})' if self.options.ca_file else ''
        self.say(f'sequence-ai-ros {__version__} doctor: {short(self.model_id)} at '
                 f'{self.base_url}{trusting}')
        try:
            code = self._checks()
        except Stop as stop:
            self.say(f'stopped: exit {stop.code}')
            return stop.code
        finally:
            if self.public is not None:
                self.public.close()
        if code != EXIT_OK:
            verdict = f'done: exit {code} (model not warm)'
        elif self.warnings:
            verdict = f'no check failed ({self.warnings} WARN)'
        else:
            verdict = 'all checks passed'
        self.say(verdict)
        return code

    def _checks(self) -> int:
        options = self.options
        key = check_key(self, options.api_key_file)
        self.public = public = self._client(
            headers={'User-Agent': f'sequence_ai_ros/{__version__}'})
        auth_enabled = check_gateway(self, public)
        row = check_model(self, public, options.model, self.model_id)
        answer = self._act(key, row, auth_enabled) if options.act else None
        if not options.act:
            self.line('WARN', 4, 'key valid', 'not checked (--no-act): validity unknown',
                      'run without --no-act to test the key with one call')
            self.line('WARN', 5, 'credit', 'not checked (--no-act)')
        check_latency(self, public, lambda: self._client(headers=public.headers),
                      options.samples)
        return report_warmth(self, answer, options.wait_s)

    def _act(self, key: str, row: dict[str, Any], auth_enabled: bool) -> ActAnswer:
        payload = {'model': self.model_id, 'observation': probe_observation(row)}
        transport = Transport(api_key=key, base_url=self.base_url,
                              timeout_s=self.options.timeout_s, verify=self.tls)
        try:
            return check_act(self, transport, payload,
                             ActSettings(self.options.wait_s, self.sleep, auth_enabled))
        finally:
            transport.close()

    def _client(self, headers: httpx.Headers | dict[str, str]) -> httpx.Client:
        timeout = httpx.Timeout(self.options.timeout_s, connect=min(self.options.timeout_s, 10.0))
        return httpx.Client(base_url=self.base_url, timeout=timeout, headers=headers,
                            verify=self.tls)


def run_doctor(options: DoctorOptions, out: TextIO | None = None) -> int:
    """Run the checks and return the exit code."""
    return Doctor(options, out).run()
