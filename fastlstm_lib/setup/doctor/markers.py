"""Environment markers (PEP 508) of the course's pins, evaluated with the standard library alone.

pyproject.toml pins some packages per platform (``"numba-cuda==0.30.4; sys_platform != 'darwin'"``),
and the doctor must check the pins of THIS machine, in any Python 3, without ``packaging``. So a
small evaluator for the part of the grammar the course uses: ``and``, ``or``, parentheses and the
comparisons ``== != < <= > >=`` between a variable (``sys_platform``, ``platform_machine``,
``platform_system``, ``os_name``, ``python_version``, ``python_full_version``,
``implementation_name``, ``extra``) and a quoted string. Anything else (``in``, ``~=``, ``not``,
another variable...) raises ``ValueError`` naming the marker: a pin the doctor cannot read must be
noticed by whoever wrote it (tests/test_doctor.py reads every pin), not skipped silently.
"""

from __future__ import annotations

import os
import platform
import re
import sys

VARIABLES = ("sys_platform", "platform_machine", "platform_system", "os_name", "python_version",
             "python_full_version", "implementation_name", "extra")
#: Compared as versions (numbers part by part), not as text.
VERSION_VARIABLES = ("python_version", "python_full_version")
OPERATORS = ("==", "!=", "<=", ">=", "<", ">")
_TOKEN = re.compile(r"""\s*(?:(?P<paren>[()])|(?P<string>'[^']*'|"[^"]*")|(?P<op>===|==|!=|<=|>=|~=|<|>)"""
                    r"""|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))""")


def this_machine(**changes: str) -> dict:
    """The marker variables of this Python on this machine (``changes`` replace some: a fake Mac)."""
    environment = {
        "sys_platform": sys.platform, "platform_machine": platform.machine(),
        "platform_system": platform.system(), "os_name": os.name,
        "python_version": "{}.{}".format(*sys.version_info[:2]), "python_full_version": platform.python_version(),
        "implementation_name": sys.implementation.name, "extra": "",
    }
    environment.update(changes)
    return environment


def _tokens(marker: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = marker.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"unsupported environment marker {marker!r}: cannot read it from {text[position:]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def _version(text: str) -> tuple:
    parts = []
    for part in text.split("."):
        if not part.isdigit():
            raise ValueError(f"not a plain version: {text!r}")
        parts.append(int(part))
    while len(parts) > 1 and parts[-1] == 0:  # 3.11 == 3.11.0
        parts.pop()
    return tuple(parts)


def _compare(left, operator: str, right, marker: str) -> bool:
    if operator not in OPERATORS:
        raise ValueError(f"unsupported environment marker {marker!r}: operator {operator!r} "
                         f"(supported: {' '.join(OPERATORS)})")
    if isinstance(left, tuple) != isinstance(right, tuple):
        raise ValueError(f"unsupported environment marker {marker!r}: compares a version with text")
    if not isinstance(left, tuple) and operator not in ("==", "!="):
        raise ValueError(f"unsupported environment marker {marker!r}: {operator} between non-versions")
    return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[operator]


class _Parser:
    """Recursive descent: expression := conjunction ('or' conjunction)*; conjunction := atom ('and' atom)*;
    atom := '(' expression ')' | value operator value."""

    def __init__(self, marker: str, environment: dict):
        self.marker, self.environment = marker, environment
        self.tokens, self.position = _tokens(marker), 0

    def fail(self, why: str):
        raise ValueError(f"unsupported environment marker {self.marker!r}: {why}")

    def peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        if token[0] is None:
            self.fail("it ends too early")
        self.position += 1
        return token

    def evaluate(self) -> bool:
        value = self.expression()
        if self.position != len(self.tokens):
            self.fail(f"unexpected {self.peek()[1]!r}")
        return value

    def expression(self) -> bool:
        value = self.conjunction()
        while self.peek() == ("word", "or"):
            self.take()
            value = self.conjunction() or value  # evaluate both sides: an error anywhere is reported
        return value

    def conjunction(self) -> bool:
        value = self.atom()
        while self.peek() == ("word", "and"):
            self.take()
            value = self.atom() and value
        return value

    def atom(self) -> bool:
        if self.peek() == ("paren", "("):
            self.take()
            value = self.expression()
            if self.take() != ("paren", ")"):
                self.fail("a parenthesis is not closed")
            return value
        left_token, (kind, operator), right_token = self.take(), self.take(), self.take()
        if kind != "op":
            self.fail(f"expected a comparison, found {operator!r}")
        variables = [token[1] for token in (left_token, right_token) if token[0] == "word"]
        if len(variables) != 1:
            self.fail("a comparison must be between one variable and one quoted string")
        name = variables[0]
        if name not in VARIABLES:
            self.fail(f"unknown variable {name!r} (supported: {', '.join(VARIABLES)})")
        values = []
        for token_kind, text in (left_token, right_token):
            value = self.environment[name] if token_kind == "word" else text[1:-1]
            if token_kind not in ("word", "string"):
                self.fail(f"unexpected {text!r}")
            values.append(_version(value) if name in VERSION_VARIABLES else value)
        return _compare(values[0], operator, values[1], self.marker)


def evaluate(marker: str, environment: dict | None = None) -> bool:
    """Whether ``marker`` holds on ``environment`` (default: this machine, ``this_machine()``); an empty
    marker holds everywhere. ``ValueError`` for anything outside the supported grammar."""
    if not marker.strip():
        return True
    return _Parser(marker, this_machine() if environment is None else environment).evaluate()


def split(requirement: str) -> tuple[str, str]:
    """``"numba==0.68.1; sys_platform != 'darwin'"`` -> (``"numba==0.68.1"``, ``"sys_platform != 'darwin'"``)."""
    requirement_part, _, marker = requirement.partition(";")
    return requirement_part.strip(), marker.strip()
