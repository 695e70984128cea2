"""The README is a short front door, and every relative link in it and in docs/ resolves."""

from pathlib import Path
import re

REPO = Path(__file__).resolve().parents[2]
# A robotics engineer reads the README in five minutes; the rest lives in docs/.
README_MAX_LINES = 200
# [text](target) and ![alt](target); a target with a scheme or only an anchor is not a file.
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)\)')
EXTERNAL = re.compile(r'^[a-z][a-z0-9+.-]*:', re.IGNORECASE)


def pages():
    return [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]


def relative_links(page):
    inside_fence = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith('```'):
            inside_fence = not inside_fence
            continue
        if inside_fence:
            continue
        for target in LINK.findall(re.sub(r'`[^`]*`', '', line)):
            if not EXTERNAL.match(target) and not target.startswith('#'):
                yield target.split('#', 1)[0]


def test_the_readme_is_short():
    lines = len((REPO / 'README.md').read_text().splitlines())
    assert lines < README_MAX_LINES, f'README.md has {lines} lines: move detail to docs/'


def test_every_relative_link_points_at_a_file():
    broken = [f'{page.relative_to(REPO)} -> {target}' for page in pages()
              for target in relative_links(page) if not (page.parent / target).is_file()]
    assert not broken, broken


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(REPO / target).resolve() for target in relative_links(REPO / 'README.md')}
    missing = [p.name for p in sorted((REPO / 'docs').glob('*.md')) if p.resolve() not in linked]
    assert not missing, f'the README does not link {missing}'


def test_the_links_are_found():
    # The checks above pass vacuously if the pattern finds nothing: it finds the README's own.
    assert 'docs/SAFETY.md' in set(relative_links(REPO / 'README.md'))
