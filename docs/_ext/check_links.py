"""Check every internal link of the built manual: each relative href names a file of the build,
and each #anchor an id in that file. Links to other sites are not followed (a build must not
depend on the network). Usage: python docs/_ext/check_links.py build/docs/html"""

from __future__ import annotations

import html.parser
import pathlib
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)
            if key in ("href", "src") and value and tag in ("a", "img", "link", "script"):
                self.hrefs.append(value)


def broken_links(root: pathlib.Path) -> list[str]:
    pages = {}
    for path in root.rglob("*.html"):
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    bad = []
    for path, page in sorted(pages.items()):
        for href in page.hrefs:
            url = urllib.parse.urlsplit(href)
            if url.scheme or url.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = (path.parent / urllib.parse.unquote(url.path)).resolve() if url.path else path
            if not target.exists():
                bad.append(f"{path.relative_to(root.resolve())}: {href}: no such file")
            elif url.fragment and target in pages and url.fragment not in pages[target].ids:
                bad.append(f"{path.relative_to(root.resolve())}: {href}: no such anchor")
    return bad


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    if not (root / "index.html").exists():
        print(f"check_links: {root}/index.html not found; build the manual first (make docs)")
        return 1
    bad = broken_links(root)
    for line in bad:
        print(line)
    n = len(list(root.rglob("*.html")))
    print(f"check_links: {n} pages, {len(bad)} broken internal links")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
