"""pytest-style ``-k`` expressions for ``clnn cts``: ``conv and not relaxed``, ``add or mul``,
``(add or mul) and quant8``.

Grammar (as pytest's, precedence not > and > or)::

    expr     := and_expr ("or" and_expr)*
    and_expr := not_expr ("and" not_expr)*
    not_expr := "not" not_expr | "(" expr ")" | word

A word matches a test when it is a substring of the spec (file) name or the test name, case
insensitively as in pytest; a word with a glob character (``* ? [``) is matched as a glob
against either name instead, so the plain substrings and globs ``-k`` took before still work.
"""

from __future__ import annotations

import fnmatch
import functools
import re

KEYWORDS = ("and", "or", "not")
_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class KeywordError(ValueError):
    """A ``-k`` expression that cannot be parsed; the message says where."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        out.append(m.group(1))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, what: str):
        raise KeywordError(f"-k expression {self.text!r}: {what}")

    def parse(self):
        if not self.toks:
            self.fail("it is empty")
        node = self.expr()
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek()!r} after a complete expression "
                      "(join words with and / or)")
        return node

    def expr(self):
        node = self.and_expr()
        while self.peek() == "or":
            self.take()
            node = ("or", node, self.and_expr())
        return node

    def and_expr(self):
        node = self.not_expr()
        while self.peek() == "and":
            self.take()
            node = ("and", node, self.not_expr())
        return node

    def not_expr(self):
        tok = self.take()
        if tok is None:
            self.fail("it ends where a word or '(' was expected")
        if tok == "not":
            return ("not", self.not_expr())
        if tok == "(":
            node = self.expr()
            if self.take() != ")":
                self.fail("a '(' is never closed")
            return node
        if tok == ")" or tok in KEYWORDS:
            self.fail(f"{tok!r} where a word or '(' was expected")
        return ("word", tok.lower())


@functools.lru_cache(maxsize=64)
def compile_expression(text: str):
    """The parsed form of ``text``; a KeywordError when it is not a valid expression."""
    return _Parser(text).parse()


def _word(word: str, spec: str, name: str) -> bool:
    if any(c in word for c in "*?["):
        return fnmatch.fnmatchcase(name, word) or fnmatch.fnmatchcase(spec, word)
    return word in name or word in spec


def _eval(node, spec: str, name: str) -> bool:
    kind = node[0]
    if kind == "word":
        return _word(node[1], spec, name)
    if kind == "not":
        return not _eval(node[1], spec, name)
    if kind == "and":
        return _eval(node[1], spec, name) and _eval(node[2], spec, name)
    return _eval(node[1], spec, name) or _eval(node[2], spec, name)


def matches(text: str, spec: str, name: str) -> bool:
    """Whether the test ``name`` of the spec ``spec`` is selected by the expression ``text``."""
    return _eval(compile_expression(text), spec.lower(), name.lower())
