"""
Print a requirements file with some pins replaced: the Jazzy venv's set from the Kilted one.

Usage: python scripts/pin_set.py BASE.txt OVERRIDES.txt > merged.txt

BASE is read with its ``-r`` includes followed; every requirement whose distribution is named
in OVERRIDES takes the OVERRIDES line instead, and OVERRIDES lines BASE lacks are added at the
end. pip refuses two pins of one package in a single install, so the Jazzy set cannot simply
list its ros-* pins after ``-r requirements-dev.txt``.
"""

from pathlib import Path
import re
import sys

NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*')


def canonical(name: str) -> str:
    """Return the distribution name as pip compares it (PEP 503)."""
    return re.sub(r'[-_.]+', '-', name).lower()


def requirement_lines(path: Path) -> list[str]:
    """Return the requirement lines of ``path`` without comments, following ``-r`` includes."""
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        option, _, argument = line.partition(' ')
        if option in ('-r', '--requirement'):
            lines.extend(requirement_lines(path.parent / argument.strip()))
        else:
            lines.append(line)
    return lines


def distribution(line: str) -> str:
    """Return the canonical distribution name a requirement line pins ('' for an option)."""
    found = NAME.match(line)
    return canonical(found.group()) if found and not line.startswith('-') else ''


def merged(base: Path, overrides: Path) -> list[str]:
    """Return BASE's requirements with OVERRIDES' pins in place of the same distributions."""
    replace = {distribution(line): line for line in requirement_lines(overrides)}
    out = [replace.pop(distribution(line), line) for line in requirement_lines(base)]
    return out + list(replace.values())


def main(argv: list[str]) -> int:
    """Print the merged requirements; exit 2 on a usage error."""
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    print('\n'.join(merged(Path(argv[0]), Path(argv[1]))))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
