"""The symbol index for Python, Go, TypeScript, TSX and JavaScript."""

from __future__ import annotations

import pytest

from roundtable.errors import ToolError
from roundtable.services.repository.symbols import detect_language, index_source

PYTHON = b"""import os

@decorator
class Foo(Base):
    x = 1

    def method(self):
        def helper():
            pass
        return helper

    async def amethod(self):
        pass


def top():
    def inner():
        pass
    return inner
"""

GO = b"""package main

const (
	Exported = 1
	hidden   = 2
)

type Point struct {
	X, Y int
}

type Shape interface {
	Area() float64
}

type ID string

func (p *Point) Move(dx int) {
	p.X += dx
}

func (l *List[T]) Len() int { return 0 }

func main() {
}
"""

TYPESCRIPT = b"""export interface Greeter {
  greet(name: string): string;
}

export abstract class Base {
  abstract run(): void;
  helper() { return 1; }
}

type Alias = { a: number };
enum Color { Red, Green }
export const handler = (x: number) => x * 2;
const value = 42;
export const wrapped = ((x: number) => x) as unknown as Fn;
let notme = 1;
function* gen() { yield 1; }
"""

TSX = b"""export function App() {
  return <div>hi</div>;
}
const Comp = () => <span/>;
"""

JAVASCRIPT = b"""class Animal {
  speak() { return 1; }
}
function hello() {}
const arrow = () => 1;
const fexp = function () {};
const num = 3;
var v = 1;
"""


def _rows(path: str, data: bytes) -> list[tuple[str, str, int, int]]:
    return [(s.kind, s.name, s.start_line, s.end_line) for s in index_source(path, data)]


def test_python() -> None:
    assert _rows("pkg/a.py", PYTHON) == [
        ("class", "Foo", 4, 13),
        ("function", "Foo.method", 7, 10),
        ("function", "Foo.helper", 8, 9),
        ("function", "Foo.amethod", 12, 13),
        ("function", "top", 16, 19),
        ("function", "inner", 17, 18),
    ]
    first = index_source("pkg/a.py", PYTHON)[0]
    assert first.resource_id == "symbol:pkg/a.py#Foo" and first.language == "python" and first.path == "pkg/a.py"


def test_go() -> None:
    assert _rows("a.go", GO) == [
        ("const", "Exported", 4, 4),
        ("struct", "Point", 8, 10),
        ("interface", "Shape", 12, 14),
        ("type", "ID", 16, 16),
        ("method", "Point.Move", 18, 20),
        ("method", "List.Len", 22, 22),
        ("function", "main", 24, 25),
    ]


def test_typescript() -> None:
    assert _rows("a.ts", TYPESCRIPT) == [
        ("interface", "Greeter", 1, 3),
        ("method", "Greeter.greet", 2, 2),
        ("class", "Base", 5, 8),
        ("method", "Base.run", 6, 6),
        ("method", "Base.helper", 7, 7),
        ("type", "Alias", 10, 10),
        ("enum", "Color", 11, 11),
        ("function", "handler", 12, 12),
        ("const", "value", 13, 13),
        ("function", "wrapped", 14, 14),
        ("function", "gen", 16, 16),
    ]
    assert {s.language for s in index_source("a.ts", TYPESCRIPT)} == {"typescript"}


def test_tsx_uses_the_tsx_grammar() -> None:
    assert _rows("App.tsx", TSX) == [("function", "App", 1, 3), ("function", "Comp", 4, 4)]
    assert index_source("App.tsx", TSX)[0].language == "typescript"


def test_javascript() -> None:
    assert _rows("a.js", JAVASCRIPT) == [
        ("class", "Animal", 1, 3),
        ("method", "Animal.speak", 2, 2),
        ("function", "hello", 4, 4),
        ("function", "arrow", 5, 5),
        ("function", "fexp", 6, 6),
        ("const", "num", 7, 7),
    ]
    assert index_source("a.mjs", b"export function f() {}\n")[0].language == "javascript"


@pytest.mark.parametrize(
    ("path", "data", "language"),
    [
        ("bad.py", b"def broken(:\n", "python"),
        ("bad.go", b"package x\nfunc (\n", "go"),
        ("bad.ts", b"class { \n", "typescript"),
        ("bad.js", b"function ( {\n", "javascript"),
    ],
)
def test_syntax_errors_fail_without_partial_results(path: str, data: bytes, language: str) -> None:
    with pytest.raises(ToolError, match=f"parse {language} file {path}: syntax tree contains ERROR or MISSING nodes"):
        index_source(path, data)


def test_language_detection() -> None:
    assert [detect_language(p) for p in ("a.PY", "b.go", "c.ts", "d.TSX", "e.jsx", "f.cjs", "g.rs", "Makefile")] == [
        "python",
        "go",
        "typescript",
        "typescript",
        "javascript",
        "javascript",
        "",
        "",
    ]
    assert index_source("notes.txt", b"def f(): pass") == []
