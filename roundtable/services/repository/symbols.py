"""The symbol index: declarations in one Python, Go, TypeScript/TSX or JavaScript file.

Parsing uses tree-sitter with the per-language grammar wheels (`tree_sitter_python`,
`tree_sitter_go`, `tree_sitter_typescript`, `tree_sitter_javascript`), which ship compiled
grammars and never download anything. A file whose syntax tree has an ERROR or MISSING node is
an error, not a partial result. Nothing is persisted: each call parses.

`index_source` is CPU work: callers on the event loop run it through `anyio.to_thread`.
Paths in symbols are whatever the caller passes — the tools pass repository-relative paths, so
`resource_id` (`symbol:<path>#<name>`) matches the ids claims use.

Limits (the owner must survive hostile files): `index_file` reads through the same bounded,
regular-files-only read as `repo.read_file` (`repo.max_read_bytes`, default 1 MiB; a FIFO,
device, socket or symlink is refused without blocking), parsing gives up after
`PARSE_SECONDS` (tree-sitter's error recovery on a large irregular file can take minutes), and
the `repo.symbols` tool returns at most `MAX_SYMBOLS` symbols (`truncated: true` beyond).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from roundtable.config import RepoConfig
from roundtable.errors import ToolError
from roundtable.services.repository.repo import read_regular_bytes

LANGUAGES: tuple[str, ...] = ("python", "go", "typescript", "javascript")

# The read cap when the caller has no configuration (the CLI, claim hashing): the config default.
DEFAULT_MAX_BYTES = RepoConfig().max_read_bytes
# At most this many symbols in one `repo.symbols` result (a 1 MiB file of one-line functions
# declares ~55,000; the result would be ~10 MB of JSON).
MAX_SYMBOLS = 10_000
# Parsing stops after this long; the file is reported as too complex to index.
PARSE_SECONDS = 10.0
# Source handed to tree-sitter in slices this size, so the deadline is checked as it goes.
_PARSE_SLICE = 16 * 1024

_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".go": "go",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
}


@dataclass(frozen=True)
class Symbol:
    """One declaration. Lines are 1-based and inclusive."""

    resource_id: str
    path: str
    language: str
    kind: str
    name: str
    start_line: int
    end_line: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def detect_language(path: str) -> str:
    """The language label for a path's extension (case-insensitive), or `""` if unsupported."""
    return _EXTENSIONS.get(os.path.splitext(path)[1].lower(), "")


def symbol_resource_id(path: str, name: str) -> str:
    return f"symbol:{path}#{name}"


@functools.cache
def _language(grammar: str) -> Any:
    """The tree-sitter Language for a grammar name (loaded once per process)."""
    from tree_sitter import Language

    if grammar == "python":
        import tree_sitter_python as mod

        return Language(mod.language())
    if grammar == "go":
        import tree_sitter_go as go_mod

        return Language(go_mod.language())
    if grammar in ("typescript", "tsx"):
        import tree_sitter_typescript as ts_mod

        return Language(ts_mod.language_tsx() if grammar == "tsx" else ts_mod.language_typescript())
    import tree_sitter_javascript as js_mod

    return Language(js_mod.language())


def _grammar_for(path: str, language: str) -> str:
    if language == "typescript" and path.lower().endswith(".tsx"):
        return "tsx"
    return language


def index_file(abs_path: str | os.PathLike[str], path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Symbol]:
    """Read and index one file; `path` is the label used in the symbols (and errors).

    `abs_path` must be resolved (a symlink in its last component is refused). A file that
    cannot be read is an error whatever its extension; an unsupported extension gives `[]`.
    """
    data = read_regular_bytes(abs_path, path, max_bytes, verb="read file")
    return index_source(path, data)


def index_source(path: str, data: bytes, *, parse_seconds: float = PARSE_SECONDS) -> list[Symbol]:
    """Index file content. Unsupported extension → `[]`; a syntax error, or parsing that takes
    longer than `parse_seconds` → `ToolError`."""
    language = detect_language(path)
    if not language:
        return []
    from tree_sitter import Parser

    try:
        parser = Parser(_language(_grammar_for(path, language)))
    except Exception as exc:  # a broken grammar wheel: say which, not a traceback
        raise ToolError(f"configure {language} parser for {path}: {exc}") from None
    deadline = time.monotonic() + parse_seconds
    expired = False

    def source(offset: int, _point: object) -> bytes:
        # tree-sitter asks for the text slice by slice; ending the input early is the only way
        # to stop it (the Python binding has no timeout since 0.25).
        nonlocal expired
        if expired or time.monotonic() > deadline:
            expired = True
            return b""
        return data[offset : offset + _PARSE_SLICE]

    tree = parser.parse(source)
    if expired:
        raise ToolError(
            f"parse {language} file {path}: gave up after {parse_seconds:g} s; "
            "the file is too large or too irregular to index"
        )
    if tree is None:
        raise ToolError(f"parse {language} file {path}: parser returned no syntax tree")
    root = tree.root_node
    if root.has_error:
        raise ToolError(f"parse {language} file {path}: syntax tree contains ERROR or MISSING nodes")
    out: list[Symbol] = []
    _COLLECTORS[language](_Emitter(path, language, data, out), root)
    out.sort(key=lambda s: (s.path, s.start_line, s.name))
    return out


class _Emitter:
    """Collects symbols for one file."""

    def __init__(self, path: str, language: str, data: bytes, out: list[Symbol]) -> None:
        self.path = path
        self.language = language
        self.data = data
        self.out = out

    def text(self, node: Any) -> str:
        if node is None:
            return ""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def add(self, kind: str, name: str, node: Any) -> None:
        if not name or node is None:
            return
        start_row, _ = node.start_point
        end_row, end_col = node.end_point
        end_line = end_row + 1
        # A node that ends at column 0 of a later row really ends on the previous line.
        if end_col == 0 and end_row > start_row:
            end_line -= 1
        self.out.append(
            Symbol(
                resource_id=symbol_resource_id(self.path, name),
                path=self.path,
                language=self.language,
                kind=kind,
                name=name,
                start_line=start_row + 1,
                end_line=end_line,
            )
        )


# --- Python ---------------------------------------------------------------------------------


def _collect_python(emit: _Emitter, root: Any) -> None:
    # (node, nearest enclosing class name): a nested def anywhere inside a class is Class.name.
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, cls = stack.pop()
        inner = cls
        if node.type == "class_definition":
            inner = emit.text(node.child_by_field_name("name"))
            emit.add("class", inner, node)
        elif node.type == "function_definition":
            name = emit.text(node.child_by_field_name("name"))
            emit.add("function", f"{cls}.{name}" if cls and name else name, node)
        stack.extend((child, inner) for child in node.named_children)


# --- Go -------------------------------------------------------------------------------------


def _first_identifier(node: Any, emit: _Emitter) -> str:
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop(0)
        if current.type in ("identifier", "type_identifier", "field_identifier"):
            return emit.text(current)
        stack[0:0] = list(current.named_children)
    return ""


def _receiver_type(receiver: Any, emit: _Emitter) -> str:
    if receiver is None:
        return ""
    for param in receiver.named_children:
        if param.type == "parameter_declaration":
            return _first_identifier(param.child_by_field_name("type"), emit)
    return ""


def _collect_go(emit: _Emitter, root: Any) -> None:
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind == "function_declaration":
            emit.add("function", emit.text(node.child_by_field_name("name")), node)
        elif kind == "method_declaration":
            name = emit.text(node.child_by_field_name("name"))
            receiver = _receiver_type(node.child_by_field_name("receiver"), emit)
            emit.add("method", f"{receiver}.{name}" if receiver and name else name, node)
        elif kind in ("type_spec", "type_alias"):
            underlying = node.child_by_field_name("type")
            label = {"struct_type": "struct", "interface_type": "interface"}.get(
                underlying.type if underlying is not None else "", "type"
            )
            emit.add(label, emit.text(node.child_by_field_name("name")), node)
        elif kind == "const_spec":
            for name_node in node.children_by_field_name("name"):
                name = emit.text(name_node)
                if name[:1].isupper():
                    emit.add("const", name, name_node)
        stack.extend(node.named_children)


# --- TypeScript / TSX / JavaScript ----------------------------------------------------------

_TS_DECLARATIONS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
}
_TS_METHODS = ("method_definition", "method_signature", "abstract_method_signature")
_TS_CONTAINERS = ("class_declaration", "abstract_class_declaration", "interface_declaration")
_TS_BODIES = ("class_body", "interface_body")
_TS_WRAPPERS = (
    "parenthesized_expression",
    "as_expression",
    "satisfies_expression",
    "non_null_expression",
    "type_assertion",
)
_TS_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")
_CONST_PREFIXES = ("const ", "export const ", "declare const ", "export declare const ")


def _unwrap(node: Any) -> Any:
    while node is not None and node.type in _TS_WRAPPERS:
        inner = node.child_by_field_name("expression")
        if inner is None:
            named = node.named_children
            inner = named[0] if named else None
        if inner is None:
            return node
        node = inner
    return node


def _collect_ts(emit: _Emitter, root: Any) -> None:
    # (node, container name, whether node is a direct member of a class/interface body)
    stack: list[tuple[Any, str, bool]] = [(root, "", False)]
    while stack:
        node, container, member = stack.pop()
        kind = node.type
        label = _TS_DECLARATIONS.get(kind, "")
        if label:
            emit.add(label, emit.text(node.child_by_field_name("name")), node)
        elif kind in _TS_METHODS and member:
            name = emit.text(node.child_by_field_name("name"))
            emit.add("method", f"{container}.{name}" if container and name else name, node)
        elif kind == "lexical_declaration" and emit.text(node).strip().startswith(_CONST_PREFIXES):
            for decl in node.named_children:
                if decl.type != "variable_declarator":
                    continue
                name_node = decl.child_by_field_name("name")
                if name_node is None or name_node.type != "identifier":
                    continue  # destructuring patterns declare no single symbol
                value = _unwrap(decl.child_by_field_name("value"))
                is_function = value is not None and value.type in _TS_FUNCTION_VALUES
                emit.add("function" if is_function else "const", emit.text(name_node), decl)
        for child in node.named_children:
            child_container, child_member = "", False
            if kind in _TS_BODIES:
                child_container, child_member = container, True
            if kind in _TS_CONTAINERS:
                child_container = emit.text(node.child_by_field_name("name"))
            stack.append((child, child_container, child_member))


_COLLECTORS: dict[str, Callable[[_Emitter, Any], None]] = {
    "python": _collect_python,
    "go": _collect_go,
    "typescript": _collect_ts,
    "javascript": _collect_ts,
}


def find_symbol(symbols: list[Symbol], name: str) -> Symbol | None:
    """The first declaration named exactly `name` (in index order)."""
    for symbol in symbols:
        if symbol.name == name:
            return symbol
    return None
