"""How doctor speaks: one line per check (OK, WARN or FAIL, a hint), never a whole key."""

import sys
from typing import Any, NoReturn, TextIO

from sequence_ai_ros.doctor.codes import EXIT_GATEWAY
from sequence_ai_ros.doctor.key import scrub


class Stop(Exception):
    """A check failed: stop here and exit with `code`."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def ms(seconds: float) -> str:
    """Format seconds as milliseconds, one decimal."""
    return f'{seconds * 1000:.1f} ms'


def short(model_id: str) -> str:
    """Return a model id without its owner: `sequence-ai/pi05-droid` -> `pi05-droid`."""
    return model_id.rsplit('/', 1)[-1]


def cell(value: Any) -> str:
    """Format a catalogue value for a line: floats as %g."""
    return f'{value:g}' if isinstance(value, float) else str(value)


def ca_file_hint(ca_file: str | None, reason: str) -> str:
    """Say what to do about a refused certificate, given the --ca-file in use (if any)."""
    if 'mismatch' in reason.lower():
        return ('the certificate names another host: use the name or address it was issued '
                'for in --base-url')
    if ca_file:
        return (f'--ca-file {ca_file} does not sign this certificate: pass the CA that does '
                "(for a self-signed gateway, the gateway's own certificate file)")
    return ('pass --ca-file PATH with the CA certificate that signs it (for a self-signed '
            "gateway, the gateway's own certificate file)")


class Report:
    """The lines doctor prints about the gateway at `base_url`, counting the WARNs."""

    def __init__(self, out: TextIO | None, base_url: str, ca_file: str | None) -> None:
        self.out = out or sys.stdout
        self.base_url = base_url
        self.ca_file = ca_file
        self.key: str | None = None  # once found: masked wherever a line would show it
        self.warnings = 0

    def say(self, text: str) -> None:
        """Print a line that is not a verdict (a banner, a wait, the end)."""
        print(text, file=self.out, flush=True)

    def line(self, status: str, number: int, name: str, message: str,
             hint: str | None = None) -> None:
        """Print one check's verdict."""
        self.warnings += status == 'WARN'
        text = f'{status:<4}  {number} {name:<9}  {message}'
        if hint:
            text += f'  hint: {hint}'
        self.say(scrub(text, self.key))

    def fail(self, number: int, name: str, message: str, hint: str, code: int) -> NoReturn:
        """Print a FAIL line and stop."""
        self.line('FAIL', number, name, message, hint)
        raise Stop(code)

    def fail_certificate(self, number: int, name: str, reason: str) -> NoReturn:
        """Fail check `number` on a TLS certificate the trust in use refuses."""
        self.fail(number, name, f'the TLS certificate of {self.base_url} is not trusted '
                  f'({reason})', ca_file_hint(self.ca_file, reason), EXIT_GATEWAY)
