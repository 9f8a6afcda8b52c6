"""A small renderer for the subset of Go templates (and Helm/Sprig functions) our chart uses.

It lets the chart tests render helm/ringmaster with chosen values on machines without helm, so
that the policy checks look at the manifests a cluster would receive, in every branch that the
values select. Supported: {{- -}} trimming, comments, if/else if/else, range (with `.` or
`$v :=` / `$i, $v :=`), with, define/include/template, $ and $variables (:= and =), field
chains, parenthesised pipelines, and the functions in FUNCTIONS. Anything else raises
TemplateError naming the template and the action, so a chart change that needs more fails
the tests loudly instead of rendering wrongly.
"""

import os
import re

import yaml


class TemplateError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Lexing: text and actions, with Go's trim markers applied.

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


def _lex(source, name):
    items = []  # ("text", str) | ("action", str)
    pos = 0
    for m in _ACTION.finditer(source):
        text = source[pos:m.start()]
        if m.group(1):
            text = text.rstrip(" \t\r\n")
        items.append(["text", text])
        body = m.group(2).strip()
        items.append(["action", body, bool(m.group(3))])
        pos = m.end()
    items.append(["text", source[pos:]])
    # Apply right-trim markers to the following text.
    out = []
    trim_next = False
    for item in items:
        if item[0] == "text":
            text = item[1].lstrip(" \t\r\n") if trim_next else item[1]
            trim_next = False
            if text:
                out.append(("text", text))
        else:
            trim_next = item[2]
            body = item[1]
            if body.startswith("/*"):
                if not body.endswith("*/"):
                    raise TemplateError(f"{name}: unterminated comment")
                continue
            out.append(("action", body))
    return out


# ---------------------------------------------------------------------------------------------
# Expression tokens and parsing.

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
     |(?P<raw>`[^`]*`)
     |(?P<num>-?[0-9]+(?:\.[0-9]+)?)
     |(?P<decl>:=)
     |(?P<assign>=)
     |(?P<punct>[()|,])
     |(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
     |(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
     |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.X,
)


def _tokens(text, where):
    out = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"{where}: cannot parse '{text[pos:]}'")
        pos = m.end()
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = bytes(value[1:-1], "utf-8").decode("unicode_escape")
        elif kind == "raw":
            kind, value = "str", value[1:-1]
        elif kind == "num":
            value = float(value) if "." in value else int(value)
        out.append((kind, value))
    return out


class _Parser:
    def __init__(self, tokens, where):
        self.t = tokens
        self.i = 0
        self.where = where

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def pipeline(self):
        cmds = [self.command()]
        while self.peek() == ("punct", "|"):
            self.take()
            cmds.append(self.command())
        return ("pipe", cmds)

    def command(self):
        args = []
        while True:
            kind, value = self.peek()
            if kind is None or (kind == "punct" and value in ("|", ")")):
                break
            args.append(self.operand())
        if not args:
            raise TemplateError(f"{self.where}: empty command")
        return args

    def operand(self):
        kind, value = self.take()
        if kind == "punct" and value == "(":
            inner = self.pipeline()
            if self.take() != ("punct", ")"):
                raise TemplateError(f"{self.where}: missing )")
            return inner
        if kind in ("str", "num", "field", "var", "ident"):
            return (kind, value)
        raise TemplateError(f"{self.where}: unexpected '{value}'")


def _parse_expr(text, where):
    tokens = _tokens(text, where)
    declare = None  # (names, is_declaration)
    # "$a := x", "$a = x", "$i, $v := x" (range)
    if len(tokens) >= 2 and tokens[0][0] == "var":
        if tokens[1][0] in ("decl", "assign"):
            declare = ([tokens[0][1]], tokens[1][0] == "decl")
            tokens = tokens[2:]
        elif (len(tokens) >= 4 and tokens[1] == ("punct", ",") and tokens[2][0] == "var"
              and tokens[3][0] == "decl"):
            declare = ([tokens[0][1], tokens[2][1]], True)
            tokens = tokens[4:]
    p = _Parser(tokens, where)
    pipe = p.pipeline()
    if p.i != len(tokens):
        raise TemplateError(f"{where}: trailing tokens in '{text}'")
    return declare, pipe


# ---------------------------------------------------------------------------------------------
# Tree.

def _parse(items, name):
    """Returns (body, defines). body is a list of nodes."""
    defines = {}
    pos = 0

    def block(stop):
        nonlocal pos
        nodes = []
        while pos < len(items):
            kind, value = items[pos]
            pos += 1
            if kind == "text":
                nodes.append(("text", value))
                continue
            word = value.split(None, 1)[0] if value else ""
            rest = value[len(word):].strip()
            where = f"{name}: {{{{ {value} }}}}"
            if word in stop:
                return nodes, word, rest
            if word == "if" or word == "with":
                branches = [(_parse_expr(rest, where), None)]
                bodies = []
                while True:
                    body, end, end_rest = block(("else", "end"))
                    bodies.append(body)
                    if end == "end":
                        break
                    if end_rest.startswith("if "):
                        branches.append((_parse_expr(end_rest[3:], where), None))
                    else:
                        branches.append((None, None))  # plain else
                nodes.append((word, [(b[0], body) for b, body in zip(branches, bodies)]))
            elif word == "range":
                expr = _parse_expr(rest, where)
                body, end, _ = block(("else", "end"))
                else_body = []
                if end == "else":
                    else_body, _, _ = block(("end",))
                nodes.append(("range", expr, body, else_body))
            elif word == "define":
                define_name = _tokens(rest, where)[0][1]
                body, _, _ = block(("end",))
                defines[define_name] = body
            elif word == "template":
                toks = _tokens(rest, where)
                arg = _Parser(toks[1:], where).pipeline() if len(toks) > 1 else None
                nodes.append(("template", toks[0][1], arg))
            elif word in ("end", "else"):
                raise TemplateError(f"{where}: unexpected {word}")
            else:
                nodes.append(("action", _parse_expr(value, where), where))
        if stop:
            raise TemplateError(f"{name}: missing {{{{ end }}}}")
        return nodes, None, None

    body, _, _ = block(())
    return body, defines


# ---------------------------------------------------------------------------------------------
# Evaluation.

def _truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict, tuple)):
        return len(v) > 0
    return True


def _to_string(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        raise TemplateError(f"printing a {type(v).__name__} needs toYaml: {v!r}")
    return str(v)


def _to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n")


def _indent(n, s):
    pad = " " * n
    return "\n".join(pad + line for line in _to_string(s).split("\n"))


def _printf(fmt, *args):
    out, i = [], 0
    it = iter(args)
    while i < len(fmt):
        c = fmt[i]
        if c == "%" and i + 1 < len(fmt):
            verb = fmt[i + 1]
            i += 2
            if verb == "%":
                out.append("%")
            elif verb in "sdv":
                out.append(_to_string(next(it)))
            elif verb == "q":
                out.append('"' + _to_string(next(it)) + '"')
            else:
                raise TemplateError(f"printf: unsupported verb %{verb}")
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _required(msg, v):
    if v is None or v == "":
        raise TemplateError(f"required: {msg}")
    return v


def _and(*args):
    for a in args:
        if not _truthy(a):
            return a
    return args[-1]


def _or(*args):
    for a in args:
        if _truthy(a):
            return a
    return args[-1]


FUNCTIONS = {
    "default": lambda d, v=None: v if _truthy(v) else d,
    "quote": lambda *a: " ".join('"' + _to_string(x).replace('"', '\\"') + '"' for x in a),
    "toYaml": _to_yaml,
    "nindent": lambda n, s: "\n" + _indent(n, s),
    "indent": _indent,
    "trunc": lambda n, s: _to_string(s)[:n],
    "trimSuffix": lambda suf, s: s[: -len(suf)] if suf and s.endswith(suf) else s,
    "printf": _printf,
    "replace": lambda old, new, s: _to_string(s).replace(old, new),
    "contains": lambda sub, s: sub in _to_string(s),
    "eq": lambda a, *b: any(a == x for x in b),
    "ne": lambda a, b: a != b,
    "not": lambda a: not _truthy(a),
    "and": _and,
    "or": _or,
    "required": _required,
    "len": len,
    "toString": _to_string,
    "lower": lambda s: _to_string(s).lower(),
}


class _Ctx:
    def __init__(self, renderer, dot, variables):
        self.r = renderer
        self.dot = dot
        self.vars = variables  # list of dicts, innermost last

    def child(self, dot):
        return _Ctx(self.r, dot, self.vars + [{}])

    def lookup_var(self, name):
        for scope in reversed(self.vars):
            if name in scope:
                return scope[name]
        raise TemplateError(f"undefined variable {name}")

    def set_var(self, name, value, declare):
        if declare:
            self.vars[-1][name] = value
            return
        for scope in reversed(self.vars):
            if name in scope:
                scope[name] = value
                return
        raise TemplateError(f"assignment to undeclared {name}")


def _field(value, path, where):
    for part in path:
        if value is None:
            raise TemplateError(f"{where}: nil pointer evaluating .{part}")
        if isinstance(value, dict):
            value = value.get(part)
        else:
            value = getattr(value, part, None)
    return value


def _split_path(text):
    return [p for p in text.split(".") if p]


class Renderer:
    def __init__(self, chart_dir):
        self.chart_dir = chart_dir
        self.defines = {}
        self.templates = {}
        tdir = os.path.join(chart_dir, "templates")
        for root, _, files in os.walk(tdir):
            for f in sorted(files):
                if not (f.endswith(".yaml") or f.endswith(".tpl") or f.endswith(".txt")):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, chart_dir)
                with open(path, encoding="utf-8") as fh:
                    body, defines = _parse(_lex(fh.read(), rel), rel)
                self.defines.update(defines)
                self.templates[rel] = body
        with open(os.path.join(chart_dir, "Chart.yaml"), encoding="utf-8") as fh:
            chart = yaml.safe_load(fh)
        self.chart = {
            "Name": chart["name"],
            "Version": chart["version"],
            "AppVersion": str(chart.get("appVersion", "")),
        }

    def _files_get(self, rel):
        path = os.path.join(self.chart_dir, rel)
        if not os.path.isfile(path):
            return ""  # as Helm's .Files.Get does
        with open(path, encoding="utf-8") as fh:
            return fh.read()

    def render(self, values, release_name="rm", namespace="ringmaster"):
        """Returns {template path: rendered text} for the non-helper templates."""
        root = {
            "Values": values,
            "Release": {"Name": release_name, "Namespace": namespace, "Service": "Helm"},
            "Chart": self.chart,
            "Files": {"Get": self._files_get},
        }
        out = {}
        for rel, body in self.templates.items():
            if os.path.basename(rel).startswith("_"):
                continue
            ctx = _Ctx(self, root, [{"$": root}])
            text = self._run(body, ctx)
            out[rel] = text.replace("<no value>", "")
        return out

    def _run(self, nodes, ctx):
        out = []
        for node in nodes:
            kind = node[0]
            if kind == "text":
                out.append(node[1])
            elif kind == "action":
                (declare, pipe), where = node[1], node[2]
                value = self._pipe(pipe, ctx, where)
                if declare:
                    ctx.set_var(declare[0][0], value, declare[1])
                else:
                    out.append(_to_string(value))
            elif kind in ("if", "with"):
                for cond, body in node[1]:
                    if cond is None:
                        out.append(self._run(body, ctx.child(ctx.dot)))
                        break
                    value = self._pipe(cond[1], ctx, kind)
                    if _truthy(value):
                        out.append(self._run(body, ctx.child(value if kind == "with" else ctx.dot)))
                        break
            elif kind == "range":
                (declare, pipe), body, else_body = node[1], node[2], node[3]
                seq = self._pipe(pipe, ctx, "range")
                pairs = (list(sorted(seq.items())) if isinstance(seq, dict)
                         else list(enumerate(seq or [])))
                if not pairs:
                    out.append(self._run(else_body, ctx.child(ctx.dot)))
                for key, item in pairs:
                    inner = ctx.child(item)
                    if declare:
                        names = declare[0]
                        if len(names) == 2:
                            inner.set_var(names[0], key, True)
                        inner.set_var(names[-1], item, True)
                    out.append(self._run(body, inner))
            elif kind == "template":
                arg = self._pipe(node[2], ctx, "template") if node[2] else None
                out.append(self.include(node[1], arg))
            else:
                raise TemplateError(f"unknown node {kind}")
        return "".join(out)

    def include(self, name, dot):
        if name not in self.defines:
            raise TemplateError(f"include: no template named {name!r}")
        ctx = _Ctx(self, dot, [{"$": dot}])  # as in Go: $ is the argument
        return self._run(self.defines[name], ctx)

    def _pipe(self, pipe, ctx, where):
        value = _NOTHING
        for cmd in pipe[1]:
            value = self._command(cmd, ctx, where, value)
        return value

    def _operand(self, op, ctx, where):
        kind, value = op
        if kind == "pipe":
            return self._pipe(op, ctx, where)
        if kind in ("str", "num"):
            return value
        if kind == "field":
            return ctx.dot if value == "." else _field(ctx.dot, _split_path(value), where)
        if kind == "var":
            head, _, rest = value.partition(".")
            return _field(ctx.lookup_var(head), _split_path(rest), where)
        if kind == "ident":
            if value in ("true", "false"):
                return value == "true"
            if value == "nil":
                return None
            raise TemplateError(f"{where}: function {value} used as a value")
        raise TemplateError(f"{where}: bad operand {op}")

    def _command(self, cmd, ctx, where, piped):
        head = cmd[0]
        extra = [] if piped is _NOTHING else [piped]
        if head[0] == "ident" and head[1] not in ("true", "false", "nil"):
            name = head[1]
            args = [self._operand(a, ctx, where) for a in cmd[1:]] + extra
            if name == "include":
                return self.include(args[0], args[1])
            fn = FUNCTIONS.get(name)
            if fn is None:
                raise TemplateError(f"{where}: function {name} is not supported by this renderer")
            try:
                return fn(*args)
            except TemplateError:
                raise
            except Exception as e:  # arity and type errors, with the action named
                raise TemplateError(f"{where}: {name}: {e}") from e
        value = self._operand(head, ctx, where)
        if callable(value):
            args = [self._operand(a, ctx, where) for a in cmd[1:]] + extra
            return value(*args)
        if len(cmd) > 1 or extra:
            raise TemplateError(f"{where}: {head[1]} is not a function")
        return value


_NOTHING = object()


def deep_merge(base, override):
    """Helm's values merge: maps merge recursively, everything else replaces."""
    out = dict(base)
    for k, v in override.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def render_manifests(chart_dir, overrides=None, release_name="rm", namespace="ringmaster"):
    """Renders the chart with values.yaml + overrides. Returns [(template, document dict)]."""
    with open(os.path.join(chart_dir, "values.yaml"), encoding="utf-8") as fh:
        values = yaml.safe_load(fh)
    values = deep_merge(values, overrides or {})
    rendered = Renderer(chart_dir).render(values, release_name, namespace)
    docs = []
    for rel, text in sorted(rendered.items()):
        if rel.endswith(".txt"):
            continue
        try:
            for doc in yaml.safe_load_all(text):
                if doc:
                    docs.append((rel, doc))
        except yaml.YAMLError as e:
            raise TemplateError(f"{rel}: rendered YAML does not parse: {e}\n{text}") from e
    return docs
