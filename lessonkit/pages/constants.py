"""Constants of a lesson's program, as a page quotes them: `{{ 4 @ racecheck.cu:kTilesPerBlock }}`.

A page that says "each block walks four tiles" states a fact of the program. Written as a claim on
the source, the figure is read from the file the evidence was recorded from (an input of the
lesson's runs, whose hash every recording carries), so an edit of the constant fails the page at
the claim, naming the file's line, instead of leaving a typed figure standing.

What is read, at the top level of the file (never inside a function):

- C and C++: `constexpr` and `const` definitions (`constexpr int kTiles = 4;`, arrays
  `constexpr int kBlockSizes[] = {32, 256};`, quoted as `kBlockSizes[1]`), `#define NAME VALUE`
  (an object-like macro with a value), and the enumerators of an `enum` (`enum V { kA = 0, kB };`).
- Python: module-level assignments `NAME = VALUE` (tuples and lists are indexed like arrays).

A value is an integer, floating or string literal, or an expression of them with + - * / % << >>
& | ^ ~ and parentheses, and of the names of constants defined before it in the same file; C
literal suffixes (`611u`, `1.0f`, `50000ull`) are read as the number. Anything else is not a
constant this module can read: it is kept as UNREAD, and a claim on it says so, naming its line.

A reference page may quote lessonkit's own constants the same way, `lessonkit/FILE.py:NAME`
(`core_source` finds the file in the running core).

`parse_constants(text, source)` reads text; only `core_source` looks at the disk.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

_C_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp")
SOURCE_SUFFIXES = (*_C_SUFFIXES, ".py")

_C_COMMENT_RE = re.compile(r"""//[^\n]*|/\*.*?\*/""", re.DOTALL)
_C_STRING_OR_COMMENT_RE = re.compile(r"""("(?:[^"\\\n]|\\.)*")|//[^\n]*|/\*.*?\*/""", re.DOTALL)
_C_DEFINE_RE = re.compile(r"""^[ \t]*\#[ \t]*define[ \t]+(?P<name>[A-Za-z_]\w*)[ \t]+(?P<value>[^\n]+?)[ \t]*$""",
                          re.MULTILINE)
_C_CONST_RE = re.compile(r"""
    ^[ \t]*(?:static[ \t]+|inline[ \t]+)*(?:constexpr|const)\b[^;=(){}\n]*?
    \b(?P<name>[A-Za-z_]\w*)[ \t]*(?P<array>\[[^\]]*\])?[ \t]*=[ \t]*(?P<value>[^;]+?);""",
                         re.MULTILINE | re.VERBOSE | re.DOTALL)
_C_ENUM_RE = re.compile(r"""^[ \t]*enum\b(?:[ \t]+(?:class|struct))?(?:[ \t]+\w+)?(?:[ \t]*:[^{]+)?[ \t]*
                            \{(?P<body>[^}]*)\}""", re.MULTILINE | re.VERBOSE)
_C_LITERAL_RE = re.compile(r"""(?<![\w.])(?P<number>(?:0[xX][0-9a-fA-F']+|\d[\d']*(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))
                               (?P<suffix>[uUlLfF]+)(?![\w.])""", re.VERBOSE)

_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
              ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
              ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


@dataclass(frozen=True)
class Constant:
    """A constant of a source file: its name, value (a number, a text, or a tuple of them), and line."""

    name: str
    value: object
    line: int  # 1-based, where its definition starts
    text: str  # the definition as written, on one line


class _Unread:
    """The value of a constant defined in a form this module does not evaluate (a call, a cast, ...)."""

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD = _Unread()


class NotAConstant(ValueError):
    """An expression this module does not evaluate (a call, a name it does not know, ...)."""


def is_source_ref(ref: str) -> bool:
    """Whether a claim's REF names a source file (its constants), not an evidence set or run."""
    return ref.endswith(SOURCE_SUFFIXES)


# The core's own constants, for the pages that document it: `{{ 6 @ lessonkit/pages/render.py:INLINE_BYTES / 1024 }}`.
# The file is read from the lessonkit that runs the check (this package), never from a lesson's folder,
# so what a reference page says of lessonkit is what the check that passes it does.
CORE_PREFIX = "lessonkit/"
CORE_ROOT = Path(__file__).resolve().parents[2]


def core_source(ref: str) -> Path | None:
    """The file of the running core that `ref` (`lessonkit/FILE.py`) names, or None when it names none."""
    if not ref.startswith(CORE_PREFIX) or not ref.endswith(".py") or ".." in ref.split("/"):
        return None
    path = CORE_ROOT / ref
    return path if path.is_file() else None


@lru_cache(maxsize=32)
def parse_constants(text: str, source: str) -> Mapping[str, Constant]:
    """Every constant of source file `text` (`source`: its name, whose suffix says its language).
    Kept for the same text and name (a page's claims on one file's constants read it once; a
    changed file is another text), and read-only."""
    if source.endswith(".py"):
        return MappingProxyType(_python_constants(text))
    return MappingProxyType(_c_constants(text))


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _c_constants(text: str) -> dict[str, Constant]:
    """C and C++ constants at the top level of `text` (nothing inside braces of a function or struct)."""
    top = _top_level(text)
    found: dict[str, Constant] = {}
    definitions: list[tuple[int, str, str, str]] = []  # (offset, name, expression, definition) in file order
    for m in _C_DEFINE_RE.finditer(top):
        definitions.append((m.start(), m.group("name"), m.group("value"), m.group()))
    for m in _C_CONST_RE.finditer(top):
        value = m.group("value").strip()
        if m.group("array") is not None:
            value = "(" + value.strip().removeprefix("{").removesuffix("}") + ",)"
        definitions.append((m.start(), m.group("name"), value, m.group()))
    for m in _C_ENUM_RE.finditer(top):
        definitions += _enumerators(m, found)
    for offset, name, expr, definition in sorted(definitions):
        try:
            value = _evaluate(_c_expression(expr), _known(found))
        except NotAConstant:
            value = UNREAD  # defined, in a form not read: a claim on it says so
        found[name] = Constant(name, value, _line_of(text, offset), _one_line(definition))
    return found


def _enumerators(m: re.Match[str], found: dict[str, Constant]) -> list[tuple[int, str, str, str]]:
    """(offset, name, expression, definition) of each enumerator of an enum: one without a value is the
    one before it plus one, from 0."""
    definitions = []
    following = 0
    for part in m.group("body").split(","):
        name, _, expr = part.partition("=")
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            continue
        at = m.start("body") + m.group("body").find(part)
        expr = expr.strip() or str(following)
        definitions.append((at, name, expr, f"{name} = {expr}" if "=" in part else name))
        try:
            following = int(_evaluate(_c_expression(expr), _known(found))) + 1
        except (NotAConstant, TypeError, ValueError):
            following += 1
    return definitions


def _known(found: dict[str, Constant]) -> dict[str, object]:
    """The values later definitions may use: those read (one not read makes its users unread too)."""
    return {n: c.value for n, c in found.items() if c.value is not UNREAD}


def _top_level(text: str) -> str:
    """`text` with its comments, and everything inside braces that follow a `)` (function bodies), blanked
    out (spaces, newlines kept): a constant inside a function is that function's, not the program's."""
    blank = _C_STRING_OR_COMMENT_RE.sub(lambda m: m.group(1) or re.sub(r"[^\n]", " ", m.group()), text)
    out = list(blank)
    depth, start, body = 0, 0, False
    for i, c in enumerate(blank):
        if c == "{":
            if depth == 0:
                before = blank[:i].rstrip()
                body = before.endswith((")", "const"))  # a function's body
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0 and body:
                for j in range(start, i + 1):
                    if out[j] != "\n":
                        out[j] = " "
    return "".join(out)


def _c_expression(expr: str) -> str:
    """A C expression as Python reads it: literal suffixes and digit separators dropped, `/` on integers kept."""
    expr = _C_COMMENT_RE.sub(" ", expr).strip()
    expr = _C_LITERAL_RE.sub(lambda m: m.group("number"), expr)
    return expr.replace("'", "")


def _evaluate(expr: str, names: dict[str, object]) -> object:
    """The value of `expr` (Python syntax) from literals, operators and `names`; NotAConstant otherwise."""
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        raise NotAConstant(expr) from None
    return _value(node, names)


def _value(node: ast.AST, names: dict[str, object]) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_value(e, names) for e in node.elts)
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_number(_value(node.operand, names)))
    if isinstance(node, ast.BinOp):
        return _binary(node, _number(_value(node.left, names)), _number(_value(node.right, names)))
    raise NotAConstant(ast.dump(node))


def _binary(node: ast.BinOp, left: float, right: float) -> object:
    if isinstance(node.op, ast.Div):  # C's division: integers truncate toward zero
        if isinstance(left, int) and isinstance(right, int):
            if right == 0:
                raise NotAConstant("division by zero")
            q = abs(left) // abs(right)
            return q if (left >= 0) == (right >= 0) else -q
        return left / right
    if isinstance(node.op, ast.FloorDiv):
        return left // right
    if type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](left, right)
    raise NotAConstant(ast.dump(node))


def _number(value: object) -> int | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise NotAConstant(repr(value))


def _python_constants(text: str) -> dict[str, Constant]:
    """Module-level `NAME = VALUE` assignments of a Python file whose value this module can evaluate."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    found: dict[str, Constant] = {}
    lines = text.splitlines()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            continue
        try:
            value = _value(node.value, _known(found))  # type: ignore[arg-type]
        except (NotAConstant, TypeError, ValueError, ZeroDivisionError, OverflowError):
            value = UNREAD
        name = targets[0].id
        found[name] = Constant(name, value, node.lineno, _one_line(lines[node.lineno - 1]))
    return found


_REF_RE = re.compile(r"""\A(?P<name>[A-Za-z_]\w*)(?:\[(?P<index>\d+)\])?\Z""")


def constant_value(constants: Mapping[str, Constant], query: str, source: str,
                   whole: bool = False) -> tuple[object, Constant]:
    """The value `query` names (`NAME` or `NAME[K]`) and its constant; ValueError saying what is there instead.
    `whole`: an array's NAME is its every element (a tuple), for a phrase that names them all."""
    m = _REF_RE.match(query.strip())
    if m is None:
        raise ValueError(f"{query!r} is not a constant's name (NAME, or NAME[K] for an array's element)")
    constant = constants.get(m.group("name"))
    if constant is None:
        import difflib
        near = difflib.get_close_matches(m.group("name"), list(constants), n=1)
        hint = f"did you mean {near[0]!r}?" if near else f"it has: {', '.join(sorted(constants)) or 'none'}"
        raise ValueError(f"{source} defines no constant {m.group('name')!r} at its top level; {hint}")
    if constant.value is UNREAD:
        raise ValueError(f"{source} defines {constant.name} at line {constant.line} ({constant.text}), in a form "
                         "lessonkit does not work out: it reads literals, arithmetic, shifts and the constants "
                         "defined above, not a call, a cast or a name it does not know; quote a constant written "
                         "that way")
    if m.group("index") is None:
        if isinstance(constant.value, tuple) and not whole:
            raise ValueError(f"{constant.name} ({source}:{constant.line}) is an array of {len(constant.value)}; "
                             f"name an element, {constant.name}[0]")
        return constant.value, constant
    k = int(m.group("index"))
    if not isinstance(constant.value, tuple) or k >= len(constant.value):
        size = len(constant.value) if isinstance(constant.value, tuple) else "no"
        raise ValueError(f"{constant.name} ({source}:{constant.line}) has {size} elements; {query!r} is not one")
    return constant.value[k], constant


def shown_value(value: object) -> str:
    """A constant's value as a claim is checked against: an integer's digits, a float as Python writes it."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
