"""
Markdown tables for benchmark and test reports: a header, rows of cells, an alignment each.

    table(['rate (Hz)', 'jitter (ms)'], [[15, '0.41'], [50, '0.38']], align='lr')

Cells are written with str() (format numbers before); a cell's '|' is escaped so a row keeps
its columns. `align` holds one letter a column, 'l' or 'r' (default: the first left, the rest
right, as numbers are).
"""

from collections.abc import Sequence

_RULES = {'l': '---', 'r': '---:', 'c': ':---:'}


def row(cells: Sequence[object]) -> str:
    """Return one markdown table row."""
    return '| ' + ' | '.join(str(c).replace('|', '\\|') for c in cells) + ' |'


def table(header: Sequence[object], rows: Sequence[Sequence[object]], align: str = '') -> str:
    """Return a markdown table; ValueError if a row's width differs from the header's."""
    align = align or 'l' + 'r' * (len(header) - 1)
    if len(align) != len(header) or set(align) - set(_RULES):
        raise ValueError(f"align needs one of 'l', 'r', 'c' per column, got {align!r}")
    for cells in rows:
        if len(cells) != len(header):
            raise ValueError(f'a row has {len(cells)} cells for {len(header)} columns: '
                             f'{list(cells)!r}')
    rule = '|' + '|'.join(_RULES[a] for a in align) + '|'
    return '\n'.join([row(header), rule, *(row(cells) for cells in rows)])
