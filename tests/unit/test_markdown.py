"""Markdown → safe element tree (app/markdown.py): allowed tags only, HTML stays text, links only http(s)."""

from __future__ import annotations

from app.markdown import Element, markdown_tree

ALLOWED = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code", "table", "thead",
           "tbody", "tr", "th", "td", "hr", "em", "strong", "s", "br", "a"}


def walk(nodes):
    for node in nodes:
        if isinstance(node, Element):
            yield node
            yield from walk(node.children)


def text_of(nodes) -> str:
    return "".join(n if isinstance(n, str) else text_of(n.children) for n in nodes)


def test_blocks_and_inline():
    tree = markdown_tree("# T\n\nA *b* **c** ~~d~~ `e`  \nnext\n\n> quote\n\n---\n\n3. x\n4. y\n")
    tags = [e.tag for e in walk(tree)]
    assert tags[:2] == ["h1", "p"] and {"em", "strong", "s", "code", "br", "blockquote", "hr", "ol"} <= set(tags)
    ol = next(e for e in walk(tree) if e.tag == "ol")
    assert ol.attrs == {"start": "3"}


def test_html_in_the_source_stays_text():
    source = '<script>alert(1)</script>\n\n<img src=x onerror="alert(2)"> <b>bold?</b>'
    tree = markdown_tree(source)
    assert {e.tag for e in walk(tree)} <= {"p"}
    assert "<script>alert(1)</script>" in text_of(tree) and '<img src=x onerror="alert(2)">' in text_of(tree)


def test_links_only_for_http():
    tree = markdown_tree("[a](https://ok.example/x) [b](javascript:alert(1)) [c](mailto:x@y.z) [d](/rel) "
                         "<http://auto.example> see https://bare.example/p.")
    links = [e for e in walk(tree) if e.tag == "a"]
    assert [e.attrs["href"] for e in links] == ["https://ok.example/x", "http://auto.example",
                                                "https://bare.example/p"]
    text = text_of(tree)
    assert "b" in text and "c" in text and "d" in text  # the link text is kept as text


def test_images_are_never_loaded():
    tree = markdown_tree("![alt text](https://img.example/i.png) ![local](data:image/png;base64,AAAA)")
    elements = list(walk(tree))
    assert [e.tag for e in elements] == ["p", "a"]
    assert elements[1].attrs == {"href": "https://img.example/i.png"} and elements[1].children == ["alt text"]
    assert "local" in text_of(tree) and "data:" not in str(tree)


def test_table_alignment_and_code_language():
    tree = markdown_tree("| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n\n```js onload=x\ncode <b>\n```\n\n```\"><x\ny\n```")
    cells = [e for e in walk(tree) if e.tag == "td"]
    assert [c.attrs.get("align") for c in cells] == ["left", "center", "right"]
    codes = [e for e in walk(tree) if e.tag == "code"]
    assert codes[0].attrs == {"lang": "js"} and codes[0].children == ["code <b>\n"]
    assert codes[1].attrs == {}  # a language that is not a plain word is dropped


def test_only_allowed_tags_and_attributes():
    source = ("# h\n\n- [x](https://a.example)\n- *y*\n\n| t |\n|---|\n| `u` |\n\n```py\nz\n```\n"
              "<div onclick=1>raw</div>\n\n<a href='javascript:1'>x</a>")
    for element in walk(markdown_tree(source)):
        assert element.tag in ALLOWED
        assert set(element.attrs) <= {"href", "start", "align", "lang"}
        if "href" in element.attrs:
            assert element.attrs["href"].startswith(("http://", "https://"))
