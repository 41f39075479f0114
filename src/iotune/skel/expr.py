"""Integer expressions of a descriptor (`rank * n + 4`, `size * block`, `rank == 0`).

One small grammar, evaluated here with C's semantics (so Python's check and the generated C
agree) and translated to C: integers, names (rank, size, step and the parameters), + - * / %
(division truncates, as in C), unary minus, comparisons, `and`/`or`/`not`, `min(a, b)`,
`max(a, b)` and `a if cond else b`.
"""

from __future__ import annotations

import ast

BUILTIN_NAMES = ("rank", "size", "step")
# C's long long: every value, constant and intermediate result must fit (the generated C
# checks the same at run time, skel_rt.h)
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_LENGTH = 4096  # characters of one expression
MAX_NODES = 256  # operators and operands of one expression


class ExprError(ValueError):
    """An expression outside the grammar, or one that cannot be evaluated."""


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "/", ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def parse(text: str | int | bool) -> ast.expr:
    """The checked syntax tree of an expression (a YAML int is an expression too)."""
    if isinstance(text, bool):
        text = "1" if text else "0"
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str) or not text.strip():
        raise ExprError("expected an integer expression")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    if "\0" in text:
        raise ExprError("expression holds a NUL character")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError) as e:
        raise ExprError(f"not an expression: {text[:80]!r} ({getattr(e, 'msg', e)})") from None
    except (RecursionError, MemoryError):
        raise ExprError("expression nested too deeply") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ExprError(f"expression of more than {MAX_NODES} terms")
    _check(tree, text)
    return tree


def _fits(value: int, tree: ast.expr) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise ExprError(f"{ast.unparse(tree)[:80]!r} overflows 64-bit integers ({value})")
    return value


def _check(node: ast.AST, text: str) -> None:
    ok = (
        (isinstance(node, ast.Constant) and type(node.value) is int)
        or isinstance(node, ast.Name)
        or (isinstance(node, ast.BinOp) and type(node.op) in _BINOPS)
        or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not))
        or (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS)
        or isinstance(node, ast.BoolOp | ast.IfExp)
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and len(node.args) == 2
            and not node.keywords
        )
    )
    if not ok:
        raise ExprError(f"{ast.unparse(node)[:80]!r} is not allowed in an expression")
    if isinstance(node, ast.Constant) and not 0 <= node.value <= INT_MAX:
        raise ExprError(f"constant {node.value} does not fit in 64 bits")
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            _check(child, text)


def names(tree: ast.expr) -> set[str]:
    out = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    out.discard("min")
    out.discard("max")
    return out


def evaluate(tree: ast.expr, env: dict[str, int]) -> int:
    """Value with C's integer semantics (truncating division); a value outside 64 bits,
    anywhere in the expression, is an ExprError (C would overflow)."""
    return _fits(_evaluate(tree, env), tree)


def _evaluate(tree: ast.expr, env: dict[str, int]) -> int:
    if isinstance(tree, ast.Constant):
        return int(tree.value)
    if isinstance(tree, ast.Name):
        if tree.id not in env:
            raise ExprError(f"unknown name {tree.id!r}")
        return int(env[tree.id])
    if isinstance(tree, ast.UnaryOp):
        v = evaluate(tree.operand, env)
        return -v if isinstance(tree.op, ast.USub) else int(not v)
    if isinstance(tree, ast.BinOp):
        a, b = evaluate(tree.left, env), evaluate(tree.right, env)
        op = _BINOPS[type(tree.op)]
        if op in "/%" and b == 0:
            raise ExprError(f"division by zero in {ast.unparse(tree)!r}")
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if op == "/" else a - q * b
    if isinstance(tree, ast.Compare):
        a, b = evaluate(tree.left, env), evaluate(tree.comparators[0], env)
        op = _CMPOPS[type(tree.ops[0])]
        return int(
            {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        )
    if isinstance(tree, ast.BoolOp):
        values = [evaluate(v, env) for v in tree.values]
        return int(all(values) if isinstance(tree.op, ast.And) else any(values))
    if isinstance(tree, ast.IfExp):
        return evaluate(tree.body if evaluate(tree.test, env) else tree.orelse, env)
    if isinstance(tree, ast.Call):
        a, b = (evaluate(x, env) for x in tree.args)
        return min(a, b) if tree.func.id == "min" else max(a, b)
    raise ExprError(f"cannot evaluate {ast.unparse(tree)!r}")


_C_CHECKED = {
    "+": "skel_iadd",
    "-": "skel_isub",
    "*": "skel_imul",
    "/": "skel_idiv",
    "%": "skel_imod",
}


def to_c(tree: ast.expr, prefix: str = "P_") -> str:
    """C text of the expression; parameters become `P_<name>`, builtins stay as they are.
    Arithmetic goes through skel_rt.h's checked helpers (skel_iadd, skel_imul, ...): an overflow
    or a division by zero at run time (other sizes, --set) stops the skeleton with a message
    instead of writing at a wrapped offset."""
    if isinstance(tree, ast.Constant):
        return f"{int(tree.value)}LL"
    if isinstance(tree, ast.Name):
        return tree.id if tree.id in BUILTIN_NAMES else prefix + tree.id
    if isinstance(tree, ast.UnaryOp):
        if isinstance(tree.op, ast.USub):
            return f"skel_ineg({to_c(tree.operand, prefix)})"
        return f"!({to_c(tree.operand, prefix)})"
    if isinstance(tree, ast.BinOp):
        op = _C_CHECKED[_BINOPS[type(tree.op)]]
        return f"{op}({to_c(tree.left, prefix)}, {to_c(tree.right, prefix)})"
    if isinstance(tree, ast.Compare):
        op = _CMPOPS[type(tree.ops[0])]
        return f"({to_c(tree.left, prefix)} {op} {to_c(tree.comparators[0], prefix)})"
    if isinstance(tree, ast.BoolOp):
        op = " && " if isinstance(tree.op, ast.And) else " || "
        return "(" + op.join(to_c(v, prefix) for v in tree.values) + ")"
    if isinstance(tree, ast.IfExp):
        t, a, b = (to_c(x, prefix) for x in (tree.test, tree.body, tree.orelse))
        return f"({t} ? {a} : {b})"
    if isinstance(tree, ast.Call):
        a, b = (to_c(x, prefix) for x in tree.args)
        return f"skel_{tree.func.id}({a}, {b})"
    raise ExprError(f"cannot translate {ast.unparse(tree)[:80]!r}")
